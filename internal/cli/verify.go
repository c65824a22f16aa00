package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
)

func init() {
	register(&command{name: "verify", summary: "re-verify a CutBundle@1 against source, plan and vocabulary", run: runVerify})
}

// MaxBundleBytes caps a bundle file (2 GiB: a 1 GiB export plus receipts).
const MaxBundleBytes = 2 << 30

func runVerify(ctx context.Context, c *Cmd, args []string) error {
	fs := c.flags("verify")
	vocabPath := fs.String("vocab", "", "vocabulary `file`")
	planPath := fs.String("plan", "", "DisclosurePlan@1 `file`")
	source := fs.String("source", "", "the source projection `file`")
	keyPath := fs.String("evidence-key", "", "evidence key `file`")
	mode := fs.String("verifier", "plugin", "plugin (out of process) or inprocess")
	asJSON := fs.Bool("json", false, "print the CutVerification@1 document")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if *vocabPath == "" || *planPath == "" || *source == "" || len(pos) != 1 {
		return usagef("usage: cut verify --vocab V --plan P --source PROJ BUNDLE")
	}
	vocab, err := readFileCapped(*vocabPath, 64<<20)
	if err != nil {
		return fmt.Errorf("read vocabulary: %w", err)
	}
	plan, err := readFileCapped(*planPath, 1<<20)
	if err != nil {
		return fmt.Errorf("read plan: %w", err)
	}
	src, over, err := readCapped(c, *source, 1<<30)
	if err != nil || over {
		return fmt.Errorf("read source: %v", errOr(err, "too large"))
	}
	bundleBytes, over, err := readCapped(c, pos[0], MaxBundleBytes)
	if err != nil || over {
		return fmt.Errorf("read bundle: %v", errOr(err, "too large"))
	}
	key, err := c.evidenceKey(*keyPath)
	if err != nil {
		return err
	}
	v, err := c.verifyBundle(ctx, *mode, bundleBytes, verifier.Request{Source: src, Plan: plan, Vocabulary: vocab,
		EvidenceKey: key, Now: time.Now()})
	if err != nil {
		return err
	}
	if *asJSON {
		if err := c.printJSON(v); err != nil {
			return err
		}
	} else {
		printVerification(c, v)
	}
	if v.Verdict != receipts.VerdictPass {
		return &verifyError{claims: v.Failed()}
	}
	return nil
}

// verifyBundle verifies the bundle's export, receipts, wire body and output
// schema, as the exact bytes the bundle holds, with the other inputs of req.
//
// A bundle that is not a strict CutBundle@1 does not verify (every claim
// failed): it is what a reviewer is given, and changing its structure is
// tampering as much as changing its export. Nor does one whose label_digest
// is not its receipts', or that holds a lease for an irreversible plan. Its
// verification and seal are prepare's records, which the new verification
// replaces; they are not inputs.
func (c *Cmd) verifyBundle(ctx context.Context, mode string, bundle []byte, req verifier.Request) (receipts.Verification, error) {
	tree, err := canon.Parse(bundle, canon.Options{MaxBytes: MaxBundleBytes})
	if err != nil {
		return verifier.Unverifiable("bundle: " + err.Error()), nil
	}
	var b receipts.Bundle
	if err := tree.DecodeShared(&b); err != nil {
		return verifier.Unverifiable("bundle: " + err.Error()), nil
	}
	if b.Schema != receipts.SchemaBundle {
		return verifier.Unverifiable("bundle: schema is not " + receipts.SchemaBundle), nil
	}
	if n := len(b.Receipts); n == 0 || b.LabelDigest != b.Receipts[n-1].LabelDigest {
		return verifier.Unverifiable("bundle: label_digest is not the terminal receipt's"), nil
	}
	// A plan that does not decode fails the verifier's plan claim.
	var plan receipts.Plan
	if b.Lease != nil && canon.Unmarshal(req.Plan, &plan, canon.Options{}) == nil && plan.Mode != receipts.ModeReversible {
		return verifier.Unverifiable("bundle: a lease for an irreversible plan"), nil
	}
	// The strict decoder has checked every member; the verifier reads the
	// export and the receipts as written, not as decoded.
	for _, m := range tree.Members {
		switch string(m.Key) {
		case "export":
			req.Export = bundle[m.Value.Off:m.Value.End]
		case "receipts":
			req.Receipts = bundle[m.Value.Off:m.Value.End]
		case "wire":
			req.Wire = bundle[m.Value.Off:m.Value.End]
		case "output_schema":
			req.OutputSchema = bundle[m.Value.Off:m.Value.End]
		}
	}
	req.ExportDigest = b.ExportDigest
	return c.verify(ctx, mode, req)
}

func printVerification(c *Cmd, v receipts.Verification) {
	fmt.Fprintf(c.Stdout, "verification: %s (%s, %s)\n", v.Verdict, v.Verifier, v.Mode)
	for _, cl := range v.Claims {
		mark := "ok  "
		if !cl.OK {
			mark = "FAIL"
		}
		line := fmt.Sprintf("  %s %s", mark, cl.Name)
		if cl.Detail != "" && !cl.OK {
			line += ": " + cl.Detail
		}
		fmt.Fprintln(c.Stdout, line)
	}
	fmt.Fprintf(c.Stdout, "export: %s\n", v.ExportDigest)
}

type stringError string

func (e stringError) Error() string { return string(e) }

func errOr(err error, msg string) error {
	if err != nil {
		return err
	}
	return stringError(msg)
}
