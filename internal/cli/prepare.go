package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
)

func init() {
	register(&command{name: "prepare", summary: "cut a projection, verify it independently, seal it (CutBundle@1)", run: runPrepare})
}

// prepared is a cut that passed verification and was sealed in this process.
type prepared struct {
	in      *inputs
	out     *censor.Output
	verdict receipts.Verification
	seal    receipts.PrivacyCut
	auth    *egress.Authority
	bundle  receipts.Bundle
	lease   string
}

type prepareFlags struct {
	vocab, plan, key, verifier, vault, run string
	attempt                                int
	asJSON                                 bool
}

func (c *Cmd) prepareFlags(name string) (*prepareFlags, *flag.FlagSet) {
	fs := c.flags(name)
	f := &prepareFlags{}
	fs.StringVar(&f.vocab, "vocab", "", "vocabulary `file`")
	fs.StringVar(&f.plan, "plan", "", "DisclosurePlan@1 `file`")
	fs.StringVar(&f.key, "evidence-key", "", "evidence key `file` (default $PRIVACYCUT_EVIDENCE_KEY or the XDG data dir)")
	fs.StringVar(&f.verifier, "verifier", "plugin", "plugin (out of process) or inprocess")
	fs.StringVar(&f.vault, "vault", "", "vaultd `socket` for reversible cuts (default $PRIVACYCUT_VAULT)")
	fs.StringVar(&f.run, "run", "run", "run id bound into a reversible lease")
	fs.IntVar(&f.attempt, "attempt", 1, "attempt number bound into a reversible lease")
	fs.BoolVar(&f.asJSON, "json", false, "print one JSON document")
	return f, fs
}

func runPrepare(ctx context.Context, c *Cmd, args []string) error {
	f, fs := c.prepareFlags("prepare")
	out := fs.String("o", "", "also write the bundle to `file`")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if f.vocab == "" || f.plan == "" || len(pos) != 1 {
		return usagef("usage: cut prepare --vocab V --plan P [--vault SOCK] [--run R --attempt N] PROJ")
	}
	p, err := c.prepare(ctx, f, pos[0], nil)
	if err != nil {
		return err
	}
	b, err := bundleParts(p.bundle)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := writeFileParts(*out, b); err != nil {
			return err
		}
	}
	if f.asJSON {
		if err := writeParts(c.Stdout, b); err != nil {
			return err
		}
	} else {
		c.printPrepared(p)
	}
	if p.verdict.Verdict != receipts.VerdictPass {
		return &verifyError{claims: p.verdict.Failed()}
	}
	return nil
}

// prepare cuts, verifies and (on a pass) seals in auth (a new authority
// when nil). A policy refusal has been printed when the error is a
// *refusedError. A failed verification returns the bundle with no seal and
// no error: the caller decides the exit code.
func (c *Cmd) prepare(ctx context.Context, f *prepareFlags, proj string, auth *egress.Authority) (*prepared, error) {
	// The run and attempt are bound into a reversible lease and its claim.
	if !lease.ValidID(f.run) {
		return nil, usagef("--run must be 1 to %d bytes of printable ASCII without spaces", lease.MaxIDLen)
	}
	if f.attempt < 1 || int64(f.attempt) > math.MaxUint32 {
		return nil, usagef("--attempt must be from 1 to %d", uint32(math.MaxUint32))
	}
	// The verifier plugin starts while the inputs are read and cut.
	vp, err := c.launchVerifier(ctx, f.verifier)
	if err != nil {
		return nil, err
	}
	if vp != nil {
		defer c.stopLater(vp)
	}
	in, refs, err := c.load(f.vocab, f.plan, f.key, proj)
	if err != nil {
		return nil, err
	}
	if refs != nil {
		return nil, c.refuse(f.asJSON, refs, nil)
	}
	if err := censor.CheckExpiry(in.plan, time.Now()); err != nil {
		return nil, c.refusedCut(f.asJSON, err)
	}
	p := &prepared{in: in}
	var src censor.TokenSource
	var finish func(*prepared) error
	if in.plan.Mode == receipts.ModeReversible {
		if src, finish, err = c.reversibleSource(ctx, f, in); err != nil {
			return nil, err
		}
	}
	bound := false
	if finish != nil {
		// A lease granted for a cut that then fails is revoked.
		defer func() {
			if !bound {
				finish(nil)
			}
		}()
	}
	// The export lives in a buffer of the command, unmapped when Run returns.
	p.out, err = censor.Cut(ctx, censor.Input{Doc: in.doc, Vocabulary: in.vocab, Plan: in.plan, Key: in.key, Tokens: src,
		Buffer: c.buffer})
	if err != nil {
		return nil, c.refusedCut(f.asJSON, err)
	}
	rb, err := canon.Marshal(p.out.Receipts)
	if err != nil {
		return nil, err
	}
	vreq := verifier.Request{Source: in.source, Export: p.out.Export, ExportDigest: p.out.ExportDigest,
		Plan: in.planBytes, Vocabulary: in.vocabBytes, Receipts: rb, EvidenceKey: in.key, Now: time.Now()}
	if vs, ok := src.(*vaultSource); ok {
		// The verifier checks each slot's token against the vault's grant
		// reply (the tokens, in the order of the values sent).
		vreq.Issuer, vreq.Lease = &verifier.Granted{Lease: vs.lease, Tokens: vs.tokens}, vs.lease
	}
	p.verdict, err = c.runVerifier(ctx, vp, vreq)
	if err != nil {
		return nil, err
	}
	p.bundle = receipts.Bundle{Schema: receipts.SchemaBundle, Export: json.RawMessage(p.out.Export),
		ExportDigest: p.out.ExportDigest, Receipts: p.out.Receipts, Verification: p.verdict, LabelDigest: p.out.LabelDigest}
	if p.verdict.Verdict != receipts.VerdictPass {
		return p, nil
	}
	if auth == nil {
		auth = egress.NewAuthority(egress.Options{Journal: c.openJournal(), PolicyRevision: policyRevision})
	}
	p.auth = auth
	if vs, ok := src.(*vaultSource); ok {
		p.lease = vs.lease
	}
	p.seal, err = auth.Seal(egress.SealRequest{SourceDigest: p.out.SourceDigest, Export: p.out.Export, Plan: *in.plan,
		Receipts: p.out.Receipts, Verification: p.verdict, Lease: p.lease})
	if err != nil {
		var ee *egress.Error
		if errors.As(err, &ee) {
			return nil, c.refuse(f.asJSON, planReasons(ee.Code), nil)
		}
		return nil, err
	}
	// A reversible lease is bound to the sealed cut: only now can it be
	// claimed, and only for this export.
	if finish != nil {
		bound = true
		if err := finish(p); err != nil {
			return nil, err
		}
		if err := c.writeRecord(p.record(f)); err != nil {
			return nil, fmt.Errorf("record the lease locally: %w", err)
		}
	}
	p.bundle.Seal = &receipts.SealRef{EventID: p.seal.EventID}
	if p.lease != "" {
		l := p.lease
		p.bundle.Lease = &l
	}
	return p, nil
}

func (c *Cmd) printPrepared(p *prepared) {
	o := p.out
	fmt.Fprintf(c.Stdout, "prepared: %s cut of %d parts, %d records, %d public items\n",
		p.in.plan.Mode, len(p.in.doc.Parts), o.Stats.Records, o.Stats.PublicItems)
	fmt.Fprintf(c.Stdout, "replaced: %s (%d distinct values)\n", summary(o.Stats.OwnerSpans()), o.Pairs)
	fmt.Fprintf(c.Stdout, "export: %s (%d bytes)\n", o.ExportDigest, len(o.Export))
	fmt.Fprintf(c.Stdout, "verification: %s (%s)\n", p.verdict.Verdict, p.verdict.Verifier)
	for _, cl := range p.verdict.Claims {
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
	if p.bundle.Seal != nil {
		fmt.Fprintf(c.Stdout, "seal: %s (held in this process only; send re-prepares)\n", p.bundle.Seal.EventID)
	}
	if p.lease != "" {
		fmt.Fprintf(c.Stdout, "lease: %s\n", p.lease)
	}
	fmt.Fprintln(c.Stdout, "--- what would leave (the export's texts) ---")
	printExport(c, o.Export)
}

// printExport prints each part of an export as text.
func printExport(c *Cmd, export []byte) {
	var e struct {
		Parts []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"parts"`
		Profile string `json:"profile"`
	}
	if err := canon.Unmarshal(export, &e, canon.Options{}); err != nil {
		fmt.Fprintf(c.Stdout, "(export unreadable: %v)\n", err)
		return
	}
	for i, p := range e.Parts {
		fmt.Fprintf(c.Stdout, "part %d (%s):\n%s", i, p.Kind, p.Text)
	}
}

// planReasons is the refusal of a seal or an admission: about the plan.
func planReasons(code receipts.Code) []grammar.Refusal {
	return []grammar.Refusal{{Code: code, Part: -1, Kind: "plan"}}
}

// bundleParts returns the bundle in canonical form, and a newline, as
// pieces to write in order. The export is not re-parsed (the censor wrote it
// canonically and the verifier checked it byte for byte) nor copied: "export"
// is the first key of the canonical bundle, so the bundle is `{"export":`
// EXPORT `,` and the rest of the canonical bundle without its `{`.
func bundleParts(b receipts.Bundle) ([][]byte, error) {
	export := b.Export
	b.Export = nil
	rest, err := canon.Marshal(struct {
		receipts.Bundle
		Export json.RawMessage `json:"export,omitempty"`
	}{Bundle: b})
	if err != nil {
		return nil, err
	}
	nl := []byte{'\n'}
	if len(export) == 0 {
		return [][]byte{rest, nl}, nil
	}
	return [][]byte{[]byte(`{"export":`), export, []byte(","), rest[1:], nl}, nil
}

// writeParts writes parts to w in order.
func writeParts(w io.Writer, parts [][]byte) error {
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// writeFileParts writes parts to the file at path, created 0600 if absent
// and truncated otherwise, as os.WriteFile would.
func writeFileParts(path string, parts [][]byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	err = writeParts(f, parts)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// record is what cut keeps locally about a reversible cut (see leaseRecord).
func (p *prepared) record(f *prepareFlags) leaseRecord {
	pl := p.in.plan
	return leaseRecord{Lease: p.lease, CutEvent: p.seal.EventID, Run: f.run, Attempt: uint32(f.attempt),
		Station: pl.Station, Purpose: pl.Purpose, ExpiresAt: pl.ExpiresAt, Retention: pl.Retention,
		PolicyRevision: pl.PolicyRevision, VerifierRevision: p.verdict.Verifier, LabelDigest: p.out.LabelDigest,
		OutputSchemaDigest: pl.OutputSchemaDigest, ExportDigest: p.out.ExportDigest}
}
