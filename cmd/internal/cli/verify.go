package cli

import (
	"bytes"
	"context"
	"fmt"

	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
)

func init() {
	register(&command{name: "verify", synopsis: "--vocab V --plan P --source PROJ [--vault SOCK] [--verifier plugin|inprocess] [--json] BUNDLE",
		summary: "re-verify a CutBundle@1 against its source, plan and vocabulary", run: runVerify})
}

// MaxBundleBytes caps a bundle file (2 GiB: a 1 GiB export plus receipts).
const MaxBundleBytes = pipeline.MaxBundleBytes

func runVerify(ctx context.Context, c *Cmd, args []string) error {
	fs := c.flags("verify")
	vocabPath := fs.String("vocab", "", "vocabulary `file`")
	planPath := fs.String("plan", "", "DisclosurePlan@1 `file`")
	source := fs.String("source", "", "the source projection `file`")
	keyPath := fs.String("evidence-key", "", "evidence key `file`")
	mode := fs.String("verifier", "plugin", "plugin (out of process) or inprocess")
	asJSON := fs.Bool("json", false, "print the CutVerification@1 document")
	vaultFlag := fs.String("vault", "", "vaultd `socket` that issued a reversible bundle's tokens (default $PRIVACYCUT_VAULT): the verifier asks it about them")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *vocabPath == "" || *planPath == "" || *source == "" || len(pos) != 1 {
		return c.usage()
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
	var vault *client.Client
	if bytes.Contains(bundleBytes, []byte(`"lease":"`)) && c.vaultSocket(*vaultFlag) != "" {
		if vault, err = c.dialVault(*vaultFlag); err != nil {
			c.hintf("the vault cannot be asked about the bundle's tokens (%v): token-consistency will fail", err)
			vault = nil
		} else {
			defer vault.Close()
		}
	}
	p, err := c.pipelineFor(key, *mode, vault)
	if err != nil {
		return err
	}
	v, err := p.VerifyBundle(ctx, pipeline.Reverify{Bundle: bundleBytes, Source: src, Plan: plan, Vocabulary: vocab})
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
