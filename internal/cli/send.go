package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
)

func init() {
	register(&command{name: "send", summary: "prepare, seal, admit and POST the export; quarantine the answer", run: runSend})
}

// MaxAnswerBytes caps a remote answer written to quarantine (64 MiB).
const MaxAnswerBytes = 64 << 20

// sendResult is what `cut send --json` prints.
type sendResult struct {
	Decision   receipts.EgressDecision `json:"decision"`
	Status     int                     `json:"status"`
	Quarantine string                  `json:"quarantine"`
	Answer     string                  `json:"answer_digest"`
	Lease      *string                 `json:"lease"`
	Rehydrated *rehydratedDoc          `json:"rehydrated,omitempty"`
}

func runSend(ctx context.Context, c *Cmd, args []string) error {
	f, fs := c.prepareFlags("send")
	schema := fs.String("schema", "", "output schema `file`: rehydrate the answer inside vaultd (reversible cuts)")
	quarantine := fs.String("quarantine", "", "write the answer to `file` (default under $XDG_STATE_HOME/privacycut/quarantine)")
	timeout := fs.Duration("timeout", 5*time.Minute, "HTTP timeout")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if f.vocab == "" || f.plan == "" || len(pos) != 1 {
		return usagef("usage: cut send --vocab V --plan P [--vault SOCK] [--schema S] PROJ")
	}
	// The schema is checked against the plan before anything is cut or
	// sent: an answer that could not be rehydrated is not asked for.
	var schemaBytes []byte
	if *schema != "" {
		if schemaBytes, err = c.sendSchema(f.plan, *schema, f.asJSON); err != nil {
			return err
		}
	}
	auth := egress.NewAuthority(egress.Options{Journal: c.openJournal(), PolicyRevision: policyRevision})
	p, err := c.prepare(ctx, f, pos[0], auth)
	if err != nil {
		return err
	}
	if p.verdict.Verdict != receipts.VerdictPass {
		if f.asJSON {
			c.printJSON(p.verdict)
		} else {
			printVerification(c, p.verdict)
		}
		return &verifyError{claims: p.verdict.Failed()}
	}
	plan := p.in.plan
	// The gate decides on the exact bytes and target the HTTP request will
	// use. They are copied out of the command's buffer first: net/http may
	// read a request body after Do returns (crypto/tls in user space), and
	// the buffer is unmapped when Run returns.
	body := bytes.Clone(p.out.Export)
	dec, err := auth.Admit(p.seal.EventID, body, plan.Target, plan.Consumer)
	if err != nil {
		var ee *egress.Error
		if errors.As(err, &ee) {
			return c.refuse(f.asJSON, planReasons(ee.Code), nil)
		}
		return err
	}
	// The quarantine file exists before the export is sent: an answer that
	// arrives has somewhere to go.
	qpath, err := c.quarantinePath(*quarantine, dec.EventID)
	if err != nil {
		return err
	}
	qf, err := openQuarantine(qpath)
	if err != nil {
		return err
	}
	defer qf.abort()
	status, answer, err := post(ctx, plan.Target, body, *timeout)
	if err != nil {
		return err
	}
	if err := qf.commit(answer); err != nil {
		return err
	}
	res := sendResult{Decision: dec, Status: status, Quarantine: qpath, Answer: receipts.SHA256(answer), Lease: p.bundle.Lease}
	if schemaBytes != nil && status/100 == 2 {
		doc, err := c.rehydrateAnswer(ctx, f, p, schemaBytes, answer)
		if err != nil {
			return err
		}
		// The rehydrated result keeps the source's label and stays local:
		// this process's gate will never admit it.
		auth.DenyLocal(receipts.SHA256(doc.Result))
		res.Rehydrated = doc
	}
	if f.asJSON {
		if err := c.printJSON(res); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.Stdout, "admitted: use %d of %d, decision %s, seal %s\n", dec.Use, dec.MaxUses, dec.EventID, dec.Seal)
		fmt.Fprintf(c.Stdout, "sent: %d bytes to %s, HTTP %d\n", len(body), plan.Target, status)
		fmt.Fprintf(c.Stdout, "quarantined: %s (%s)\n", qpath, res.Answer)
		if res.Rehydrated != nil {
			fmt.Fprintf(c.Stdout, "rehydrated:\n%s\n", res.Rehydrated.Result)
			printReceipt(c, res.Rehydrated.Receipt, res.Rehydrated.State)
		}
	}
	if status/100 != 2 {
		return fmt.Errorf("target answered HTTP %d", status)
	}
	return nil
}

// post sends body to target exactly: no redirects (a redirect would send the
// export somewhere else), no proxy from the environment.
func post(ctx context.Context, target string, body []byte, timeout time.Duration) (int, []byte, error) {
	client := &http.Client{
		Timeout:       timeout,
		Transport:     &http.Transport{Proxy: nil, ForceAttemptHTTP2: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		return 0, nil, fmt.Errorf("read answer: %w", err)
	}
	if len(answer) > MaxAnswerBytes {
		return 0, nil, fmt.Errorf("answer larger than %d bytes", MaxAnswerBytes)
	}
	return resp.StatusCode, answer, nil
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

// rehydrateAnswer rehydrates the answer to a reversible cut this process just
// prepared and sent.
func (c *Cmd) rehydrateAnswer(ctx context.Context, f *prepareFlags, p *prepared, schema, answer []byte) (*rehydratedDoc, error) {
	cl, err := c.dialVault(f.vault)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rec := p.record(f)
	return c.rehydrateLease(ctx, cl, &rec, schema, answer, p.in.key, f.asJSON)
}

// sendSchema reads send's --schema and checks it against the plan file
// before the cut: the plan must be reversible and bind this schema. A plan
// that cannot be read is left to prepare, which reports it; prepare's plan
// is checked against the schema again before rehydration.
func (c *Cmd) sendSchema(planPath, schemaPath string, asJSON bool) ([]byte, error) {
	data, s, err := readOutputSchema(schemaPath)
	if err != nil {
		return nil, err
	}
	plan, _, err := loadPlan(planPath)
	if err != nil {
		return data, nil
	}
	if plan.Mode != receipts.ModeReversible {
		return nil, usagef("--schema rehydrates a reversible cut; this plan is %s", plan.Mode)
	}
	if err := c.checkSchemaDigest(plan.OutputSchemaDigest, s.Digest(), asJSON); err != nil {
		return nil, err
	}
	return data, nil
}
