package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
)

func init() {
	register(&command{name: "prepare", synopsis: "--vocab V --plan P [--route NOTE --trust KEYS…] [--vault SOCK] [--run R --attempt N] [--verifier plugin|inprocess] [--schema S] [-o BUNDLE] [--json] PROJ",
		summary: "cut a projection, verify it independently, seal it (CutBundle@1)", run: runPrepare})
}

type prepareFlags struct {
	vocab, plan, key, verifier, vault, run string
	schema                                 string
	attempt                                int
	asJSON                                 bool
	route                                  routeFlags
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
	fs.StringVar(&f.schema, "schema", "", "the plan's output schema `file`: it renders a provider request (openai-chat@1, anthropic-messages@1); send also rehydrates a reversible cut's answer with it")
	f.route = addRouteFlags(fs)
	return f, fs
}

func runPrepare(ctx context.Context, c *Cmd, args []string) error {
	f, fs := c.prepareFlags("prepare")
	out := fs.String("o", "", "also write the bundle to `file`")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if f.vocab == "" || f.plan == "" || len(pos) != 1 {
		return c.usage()
	}
	schema, err := f.readSchema()
	if err != nil {
		return err
	}
	cut, _, err := c.prepare(ctx, f, pos[0], schema)
	var ve *pipeline.VerificationError
	if err != nil && !errors.As(err, &ve) {
		return err
	}
	parts, perr := cut.BundleParts()
	if perr != nil {
		return perr
	}
	if *out != "" {
		if err := writeFileParts(*out, parts); err != nil {
			return err
		}
	}
	if f.asJSON {
		if err := writeParts(c.Stdout, parts); err != nil {
			return err
		}
	} else {
		c.printPrepared(cut)
	}
	if ve != nil {
		return &verifyError{claims: ve.Verification.Failed()}
	}
	if cut.Lease != "" {
		c.hintf("lease %s is ACTIVE until %s (%s): rehydrate its answer with cut rehydrate, or end it with cut lease revoke",
			cut.Lease, cut.LeaseExpires.UTC().Format(time.RFC3339), untilText(cut.LeaseExpires))
	}
	return nil
}

// prepare checks run and attempt, reads the inputs and prepares the cut
// with a pipeline of the command, which it returns. A refusal has been
// printed when the error is a *refusedError. A failed verification returns
// the cut and a *pipeline.VerificationError: the caller decides what to
// print. A reversible cut's lease is recorded locally for cut rehydrate.
func (c *Cmd) prepare(ctx context.Context, f *prepareFlags, proj string, schema []byte) (*pipeline.Cut, *pipeline.Pipeline, error) {
	// The run and attempt are bound into a reversible lease and its claim.
	if !lease.ValidID(f.run) {
		return nil, nil, usagef("--run must be 1 to %d bytes of printable ASCII without spaces", lease.MaxIDLen)
	}
	if f.attempt < 1 || int64(f.attempt) > math.MaxUint32 {
		return nil, nil, usagef("--attempt must be from 1 to %d", uint32(math.MaxUint32))
	}
	vocab, plan, err := c.loadInputs(f.vocab, f.plan)
	if err != nil {
		return nil, nil, err
	}
	rt, err := f.route.open(c, f.asJSON)
	if err != nil {
		return nil, nil, err
	}
	key, err := c.evidenceKey(f.key)
	if err != nil {
		return nil, nil, err
	}
	var vault *client.Client
	if plan.Fields().Mode == receipts.ModeReversible {
		if vault, err = c.reversibleVault(f.vault); err != nil {
			return nil, nil, err
		}
	}
	p, err := c.pipelineFor(key, f.verifier, vault)
	if err != nil {
		return nil, nil, err
	}
	// The projection is read once the verifier plugin is starting.
	cut, err := p.Prepare(ctx, pipeline.Input{Vocabulary: vocab, Plan: plan, Schema: schema, Route: rt,
		Load: func() ([]byte, []receipts.Refusal, error) { return readProjection(c, proj) },
		Run:  f.run, Attempt: uint32(f.attempt)})
	var ve *pipeline.VerificationError
	if errors.As(err, &ve) {
		return cut, p, err
	}
	if err != nil {
		return nil, nil, c.pipelineError(f.asJSON, err)
	}
	if cut.Lease != "" {
		if err := c.writeRecord(cut.LeaseRef()); err != nil {
			return nil, nil, fmt.Errorf("record the lease locally: %w", err)
		}
	}
	return cut, p, nil
}

// readSchema reads --schema, checked before anything is cut or sent: it
// is the plan's output schema, which renders a provider request and
// rehydrates a reversible cut's answer; an irreversible export@1 plan has
// no use for one. A plan that cannot be read is left to prepare.
func (f *prepareFlags) readSchema() ([]byte, error) {
	if f.schema == "" {
		return nil, nil
	}
	schema, err := readFileCapped(f.schema, pipeline.MaxSchemaBytes)
	if err != nil {
		return nil, fmt.Errorf("read schema: %w", err)
	}
	if plan, err := loadPlan(f.plan); err == nil {
		if p := plan.Fields(); p.Mode != receipts.ModeReversible && p.WireProfile() == receipts.WireExport {
			return nil, usagef("--schema renders a provider request or rehydrates a reversible cut; this plan is %s and export@1", p.Mode)
		}
	}
	return schema, nil
}

// reversibleVault connects to the vault a reversible cut needs: no vault
// socket, or one that does not answer, is an operational error (exit 1)
// before anything is cut.
func (c *Cmd) reversibleVault(flagValue string) (*client.Client, error) {
	cl, err := c.dialVault(flagValue)
	if err != nil {
		return nil, err
	}
	c.closers = append(c.closers, func() { cl.Close() })
	return cl, nil
}

func (c *Cmd) printPrepared(cut *pipeline.Cut) {
	fmt.Fprintf(c.Stdout, "prepared: %s cut of %d parts, %d records, %d public items\n",
		cut.Plan.Mode, cut.Stats.Parts, cut.Stats.Records, cut.Stats.PublicItems)
	fmt.Fprintf(c.Stdout, "replaced: %s (%d distinct values)\n", summary(cut.Stats.OwnerSpans), cut.Stats.Values)
	fmt.Fprintf(c.Stdout, "export: %s (%d bytes)\n", cut.ExportDigest, len(cut.Export))
	printClaims(c, cut.Verification)
	if cut.Sealed() {
		fmt.Fprintf(c.Stdout, "seal: %s (held in this process only; send re-prepares)\n", cut.Seal.EventID)
	}
	if cut.Lease != "" {
		fmt.Fprintf(c.Stdout, "lease: %s\n", cut.Lease)
	}
	fmt.Fprintln(c.Stdout, "--- what would leave (the export's texts) ---")
	printExport(c, cut.Export)
}

// printClaims prints a verification's verdict and its claims, one a line.
func printClaims(c *Cmd, v receipts.Verification) {
	fmt.Fprintf(c.Stdout, "verification: %s (%s)\n", v.Verdict, v.Verifier)
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

// writeParts writes parts to w in order.
func writeParts(w interface{ Write([]byte) (int, error) }, parts [][]byte) error {
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
