package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
)

func init() {
	register(&command{name: "send", synopsis: "--vocab V --plan P [--route NOTE --trust KEYS…] [--vault SOCK] [--run R --attempt N] [--verifier plugin|inprocess] [--schema S [-o F]] [--credential-file F] [--quarantine F] [--timeout D] [--json] PROJ",
		summary: "prepare, seal, admit and send the sealed bytes; quarantine the answer, rehydrate it", run: runSend})
}

// MaxAnswerBytes caps a remote answer written to quarantine (64 MiB).
const MaxAnswerBytes = pipeline.MaxAnswerBytes

// sendResult is what `cut send --json` prints: the egress facts, always,
// and the rehydration or its refusal.
type sendResult struct {
	Decisions  []receipts.EgressDecision `json:"decisions"`
	Tries      []egress.Try              `json:"tries"`
	Target     string                    `json:"target"`
	Bytes      int                       `json:"bytes"`
	BodyDigest string                    `json:"body_digest"`
	Status     int                       `json:"status"`
	Quarantine string                    `json:"quarantine"`
	Answer     string                    `json:"answer_digest"`
	Lease      *string                   `json:"lease"`
	LeaseState string                    `json:"lease_state,omitempty"`
	Rehydrated *pipeline.Rehydrated      `json:"rehydrated,omitempty"`
	Output     string                    `json:"output,omitempty"`
	Refusal    *receipts.RefusalDocument `json:"refusal,omitempty"`
	Upstream   *upstreamOut              `json:"upstream,omitempty"`
}

// upstreamOut is an answer that could not be used (exit 1).
type upstreamOut struct {
	Code   receipts.Code `json:"code"`
	Status int           `json:"status"`
	Reason string        `json:"reason"`
}

func runSend(ctx context.Context, c *Cmd, args []string) error {
	f, fs := c.prepareFlags("send")
	quarantine := fs.String("quarantine", "", "write the answer to `file` (default under $XDG_STATE_HOME/privacycut/quarantine)")
	timeout := durationVar(fs, "timeout", egress.DefaultTryTimeout, "bound of one delivery try, connection to the answer's last byte (a `duration`)")
	credential := fs.String("credential-file", "", "provider credential `file` (0600, yours; default $PRIVACYCUT_CREDENTIAL_FILE), read at send time")
	out := fs.String("o", "", "with --schema: write the rehydrated answer to `file` (0600) instead of stdout")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if f.vocab == "" || f.plan == "" || len(pos) != 1 {
		return c.usage()
	}
	if *out != "" && f.schema == "" {
		return usagef("-o writes the rehydrated answer of a reversible cut: it needs --schema")
	}
	schema, err := f.readSchema()
	if err != nil {
		return err
	}
	if *out != "" {
		if plan, err := loadPlan(f.plan); err == nil && plan.Fields().Mode != receipts.ModeReversible {
			return usagef("-o writes the rehydrated answer of a reversible cut; this plan is %s", plan.Fields().Mode)
		}
	}
	cut, p, err := c.prepare(ctx, f, pos[0], schema)
	var ve *pipeline.VerificationError
	if errors.As(err, &ve) {
		if f.asJSON {
			c.printJSON(ve.Verification)
		} else {
			printClaims(c, ve.Verification)
		}
		return &verifyError{claims: ve.Verification.Failed()}
	}
	if err != nil {
		return err
	}
	// The quarantine file exists before the export is sent: an answer that
	// arrives has somewhere to go.
	qpath, err := c.quarantinePath(*quarantine, cut.Seal.EventID)
	if err != nil {
		return err
	}
	qf, err := openQuarantine(qpath)
	if err != nil {
		return err
	}
	defer qf.abort()
	// The output file exists before the vault consumes the lease: once it
	// has, the answer cannot be asked for again.
	var of *outputFile
	if *out != "" {
		if of, err = createOutput(*out, 0o600); err != nil {
			return fmt.Errorf("output file: %w", err)
		}
		defer of.abort()
	}
	cred := *credential
	if cred == "" {
		cred = c.Getenv("PRIVACYCUT_CREDENTIAL_FILE")
	}
	sent, serr := p.Send(ctx, cut, pipeline.SendOptions{Timeout: *timeout, Rehydrate: schema != nil && cut.Lease != "", CredentialFile: cred,
		Quarantine: func(answer []byte) error { return qf.commit(answer) }})
	res := sendResult{Lease: nil}
	if sent != nil {
		res = sendResult{Decisions: sent.Decisions, Tries: append([]egress.Try{}, sent.Tries...), Target: sent.Target, Bytes: sent.Bytes,
			BodyDigest: sent.BodyDigest, Status: sent.Status, LeaseState: sent.LeaseState, Rehydrated: sent.Rehydrated}
		if sent.Answer != nil {
			res.Quarantine, res.Answer = qpath, receipts.SHA256(sent.Answer)
		}
		if sent.Lease != "" {
			l := sent.Lease
			res.Lease = &l
		}
	}
	if res.Rehydrated != nil && of != nil {
		if err := of.commit(append(bytes.Clone(res.Rehydrated.Result), '\n')); err != nil {
			// The lease is consumed: the answer goes to stdout rather than
			// nowhere.
			c.errorf("%s: writing %s: %v; the answer follows on stdout", c.name, of.path, err)
		} else {
			r := *res.Rehydrated
			r.Result = json.RawMessage("null")
			res.Rehydrated, res.Output = &r, of.path
		}
	}
	var re *pipeline.RefusedError
	if errors.As(serr, &re) {
		res.Refusal = &re.Document
		if re.Field != "" {
			c.errorf("%s: plan field %s does not hold", c.name, re.Field)
		}
	}
	var ue *pipeline.UpstreamError
	if errors.As(serr, &ue) {
		res.Upstream = &upstreamOut{Code: ue.Code, Status: ue.Status, Reason: ue.Reason}
	}
	if f.asJSON {
		if err := c.printJSON(res); err != nil {
			return err
		}
	} else {
		c.printSent(&res)
	}
	if serr == nil && res.Lease != nil && res.Rehydrated == nil && res.LeaseState == lease.Active.String() {
		c.hintf("lease %s stays ACTIVE: rehydrate the answer with cut rehydrate --lease %s --schema SCHEMA %s, or end it with cut lease revoke %s",
			*res.Lease, *res.Lease, res.Quarantine, *res.Lease)
	}
	switch {
	case re != nil:
		return &refusedError{len(re.Document.Reasons)}
	case ue != nil:
		// An unusable answer is an operational failure (exit 1), with its
		// code.
		return fmt.Errorf("%s (%s): the target gave no usable answer", ue.Code, ue.Reason)
	case serr != nil:
		return serr
	}
	return nil
}

// printSent prints what a send did, in the order it happened.
func (c *Cmd) printSent(r *sendResult) {
	for _, d := range r.Decisions {
		if d.Admit {
			fmt.Fprintf(c.Stdout, "admitted: use %d of %d, decision %s, seal %s\n", d.Use, d.MaxUses, d.EventID, d.Seal)
		} else {
			fmt.Fprintf(c.Stdout, "not admitted: %s %s, decision %s\n", d.Code, d.Reason, d.EventID)
		}
	}
	for i, t := range r.Tries {
		status := "no response"
		if t.Status != 0 {
			status = fmt.Sprintf("HTTP %d", t.Status)
		}
		fmt.Fprintf(c.Stdout, "sent: try %d, %d bytes (%s) to %s: %s, %s", i+1, r.Bytes, r.BodyDigest, r.Target, status, t.Outcome)
		if t.WaitedMS > 0 {
			fmt.Fprintf(c.Stdout, " (after waiting %s)", time.Duration(t.WaitedMS)*time.Millisecond)
		}
		fmt.Fprintln(c.Stdout)
	}
	if len(r.Tries) == 0 {
		fmt.Fprintf(c.Stdout, "not sent: %d bytes (%s) were sealed for %s\n", r.Bytes, r.BodyDigest, r.Target)
	}
	if r.Upstream != nil {
		fmt.Fprintf(c.Stdout, "upstream failed: %s (%s)\n", r.Upstream.Code, r.Upstream.Reason)
	}
	if r.Quarantine != "" {
		fmt.Fprintf(c.Stdout, "quarantined: %s (%s)\n", r.Quarantine, r.Answer)
	}
	if r.Rehydrated != nil {
		if r.Output != "" {
			fmt.Fprintf(c.Stdout, "rehydrated answer written to %s\n", r.Output)
		} else {
			fmt.Fprintf(c.Stdout, "rehydrated:\n%s\n", r.Rehydrated.Result)
		}
		printReceipt(c, r.Rehydrated.Receipt, r.Rehydrated.State)
	}
	if r.Refusal != nil {
		c.printRefusal(false, *r.Refusal)
	}
	if r.Lease != nil {
		fmt.Fprintf(c.Stdout, "lease: %s (%s)\n", *r.Lease, orUnknown(r.LeaseState))
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "state unknown"
	}
	return s
}

// quarantinePath is --quarantine, else a file named after the event id in
// the quarantine directory of cut's local state (stateDir: a relative
// XDG_STATE_HOME is ignored, so an answer is never quarantined under the
// directory the command happens to run in).
func (c *Cmd) quarantinePath(flagValue, eventID string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	dir, err := c.stateDir()
	if err != nil {
		return "", errors.New("no --quarantine, absolute XDG_STATE_HOME or HOME")
	}
	return filepath.Join(dir, "quarantine", strings.ReplaceAll(eventID, ":", "-")+".json"), nil
}

// openQuarantine creates the file (0600, in a 0700 directory) that the
// answer will be committed to. The answer is untrusted remote output: it is
// kept apart, never executed, and read only by rehydration.
func openQuarantine(path string) (*outputFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	return createOutput(path, 0o600)
}
