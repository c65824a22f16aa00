package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/embedded"
)

func init() {
	register(&command{name: "demo", synopsis: "[--vault SOCK] [--keep] [--verifier plugin|inprocess] [--gateway]",
		summary: "the main job: a full reversible round trip with an embedded vault, and a report", run: runDemo})
}

// demo holds one run of `cut demo`. Every file it writes — evidence key,
// journal, plans, bundles, quarantine, lease records, the embedded vault's
// state and keys — lives in one temporary directory, so the demo never
// touches the user's own state.
type demo struct {
	c      *Cmd // the user's command: the report goes to its stdout
	quiet  *Cmd // sub-steps, whose own printing is captured
	log    bytes.Buffer
	dir    string
	vocab  string
	proj   string
	schema string
	model  string // base URL of the stand-in model
	sock   string
	p      *pipeline.Pipeline
	vocabV *pipeline.Vocabulary
	// credential is the file of the stand-in's API key; sends are what
	// each cut's Send did.
	credential string
	sends      []*pipeline.Sent
	checks     []demoCheck
}

type demoCheck struct {
	what string
	ok   bool
	got  string
}

func runDemo(ctx context.Context, c *Cmd, args []string) error {
	fs := c.flags("demo")
	vault := fs.String("vault", "", "use this vaultd `socket` instead of an embedded vault (default $PRIVACYCUT_VAULT)")
	keep := fs.Bool("keep", false, "keep the demo's temporary directory")
	verifierMode := fs.String("verifier", "plugin", "plugin (out of process) or inprocess")
	viaGateway := fs.Bool("gateway", false, "make the round trip through a gateway started in this process, over its OpenAI-compatible front door")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return c.usage()
	}
	dir, err := os.MkdirTemp("", "privacycut-demo-")
	if err != nil {
		return err
	}
	if *keep {
		fmt.Fprintf(c.Stderr, "cut: demo files are kept in %s\n", dir)
	} else {
		defer os.RemoveAll(dir)
	}
	d := &demo{c: c, dir: dir}
	d.quiet = &Cmd{Env: c.Env, name: "cut demo"}
	d.quiet.Stdout, d.quiet.Stderr = &d.log, &d.log
	d.quiet.Getenv = func(k string) string {
		switch k {
		case "PRIVACYCUT_EVIDENCE_KEY":
			return filepath.Join(dir, "evidence.key")
		case "PRIVACYCUT_JOURNAL":
			return filepath.Join(dir, "journal.jsonl")
		case "XDG_STATE_HOME", "XDG_DATA_HOME":
			return filepath.Join(dir, "state")
		case "HOME":
			return dir
		}
		return ""
	}
	for name, data := range map[string][]byte{"vocabulary.json": examples.Vocabulary, "projection.json": examples.Projection, "schema.json": examples.Schema} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return err
		}
	}
	d.vocab, d.proj, d.schema = filepath.Join(dir, "vocabulary.json"), filepath.Join(dir, "projection.json"), filepath.Join(dir, "schema.json")

	// The vault: the user's, or one embedded in this process.
	d.sock = c.vaultSocket(*vault)
	vaultDesc := "vaultd at " + d.sock
	if d.sock != "" {
		if err := probeVault(d.sock); err != nil {
			return err
		}
	} else {
		stop, desc, err := d.embeddedVault()
		if err != nil {
			return err
		}
		defer stop()
		vaultDesc = desc
	}
	// The remote model: a stand-in on loopback.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// The stand-in of the OpenAI Chat Completions API checks the demo's
	// credential, a file of the demo directory read at send time.
	d.credential = filepath.Join(dir, "credential")
	if err := os.WriteFile(d.credential, []byte(demoCredential+"\n"), 0o600); err != nil {
		return err
	}
	srv := &http.Server{Handler: standin.New(standin.Options{Credential: demoCredential}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	d.model = "http://" + ln.Addr().String()
	key, err := d.quiet.evidenceKey("")
	if err != nil {
		return err
	}
	if d.vocabV, err = pipeline.LoadVocabulary(examples.Vocabulary); err != nil {
		return err
	}
	var vc *client.Client
	if vc, err = d.c.dialSocket(d.sock); err != nil {
		return err
	}
	defer vc.Close()
	if d.p, err = d.quiet.pipelineFor(key, *verifierMode, vc); err != nil {
		return err
	}

	out := c.Stdout
	if *viaGateway {
		fmt.Fprintln(out, "privacycut demo — the bundled example through cut gateway's front door, end to end")
	} else {
		fmt.Fprintln(out, "privacycut demo — a reversible cut of the bundled example, end to end")
	}
	fmt.Fprintf(out, "  vault: %s\n  model: loopback stand-in at %s\n  files: %s\n\n", vaultDesc, d.model, dir)
	if *viaGateway {
		err = d.runGateway(ctx, *verifierMode)
	} else {
		err = d.run(ctx, *verifierMode)
	}
	d.report()
	if err != nil {
		fmt.Fprintf(c.Stderr, "cut: demo: sub-step output:\n%s", d.log.String())
		return err
	}
	for _, ch := range d.checks {
		if !ch.ok {
			return errors.New("demo: a check did not behave as expected")
		}
	}
	return nil
}

// embeddedVault opens a vault in this process's memory (an arena from
// memfd_secret, keys and state in the demo directory) and serves it on a
// unix socket there, exactly as vaultd would.
func (d *demo) embeddedVault() (stop func(), desc string, err error) {
	v, err := embedded.Open(filepath.Join(d.dir, "vault"), embedded.Options{})
	if err != nil {
		return nil, "", err
	}
	d.sock = v.Socket()
	return func() { v.Close() }, v.Describe(), nil
}

// cut runs one reversible cut of the example for the stand-in's mode:
// plan, prepare (censor, verifier, seal, lease), admit, POST, quarantine.
func (d *demo) cut(ctx context.Context, mode string, attempt int) (*pipeline.Cut, []byte, receipts.EgressDecision, error) {
	// The plan sends the cut as an OpenAI Chat Completions request, with
	// two uses: the first answer of the honest stand-in is a 429.
	plan, err := d.p.MakePlan(d.vocabV, examples.Projection, pipeline.PlanOptions{
		Consumer: receipts.Consumer{Kind: "model", ID: "demo-standin"}, Purpose: "dependency-triage",
		Target: d.model + "/" + mode + standin.OpenAIPath, Mode: receipts.ModeReversible, Now: time.Now(), MaxUses: 2,
		Wire: &receipts.Wire{Profile: receipts.WireOpenAIChat, Model: "demo-model", Instruction: string(examples.Instruction),
			MaxOutputTokens: 4096},
	}, examples.Schema)
	if err != nil {
		return nil, nil, receipts.EgressDecision{}, fmt.Errorf("plan init: %w", err)
	}
	cut, err := d.p.Prepare(ctx, pipeline.Input{Vocabulary: d.vocabV, Plan: plan, Projection: examples.Projection,
		Schema: examples.Schema, Run: "demo", Attempt: uint32(attempt)})
	if err != nil {
		return nil, nil, receipts.EgressDecision{}, fmt.Errorf("prepare: %w", err)
	}
	qf, err := openQuarantine(filepath.Join(d.dir, "quarantine", mode+".json"))
	if err != nil {
		return nil, nil, receipts.EgressDecision{}, err
	}
	defer qf.abort()
	sent, err := d.p.Send(ctx, cut, pipeline.SendOptions{Timeout: time.Minute, CredentialFile: d.credential,
		Quarantine: func(a []byte) error { return qf.commit(a) }})
	d.sends = append(d.sends, sent)
	var dec receipts.EgressDecision
	if sent != nil && len(sent.Decisions) > 0 {
		dec = sent.Decisions[len(sent.Decisions)-1]
	}
	if err != nil {
		return nil, nil, dec, fmt.Errorf("send: %w", err)
	}
	return cut, sent.Answer, dec, nil
}

// rehydrate asks the vault to rehydrate answer under cut's lease.
func (d *demo) rehydrate(ctx context.Context, cut *pipeline.Cut, answer []byte) (*pipeline.Rehydrated, error) {
	return d.p.Rehydrate(ctx, cut.LeaseRef(), examples.Schema, answer)
}

// refusedWith runs fn, which must be refused: it returns the first reason
// of the refusal.
func (d *demo) refusedWith(fn func() error) (receipts.Refusal, error) {
	err := fn()
	var re *pipeline.RefusedError
	if !errors.As(err, &re) {
		if err == nil {
			return receipts.Refusal{}, errors.New("was not refused")
		}
		return receipts.Refusal{}, err
	}
	if len(re.Document.Reasons) == 0 {
		return receipts.Refusal{}, errors.New("refusal without a reason")
	}
	return re.Document.Reasons[0], nil
}

func (d *demo) check(what string, ok bool, got string) {
	d.checks = append(d.checks, demoCheck{what: what, ok: ok, got: got})
}

func (d *demo) run(ctx context.Context, verifierMode string) error {
	out := d.c.Stdout
	// 1. An honest round trip, whose first try the stand-in answers 429.
	p, answer, _, err := d.cut(ctx, standin.RateLimited+"-1", 1)
	if err != nil {
		return err
	}
	sent := d.sends[len(d.sends)-1]
	fmt.Fprintln(out, "1. What was disclosed — the export, byte for byte (owner values are vault tokens):")
	printExport(&Cmd{Env: Env{Stdout: indent(out)}}, p.Export)
	fmt.Fprintf(out, "   export %s, %d bytes; %s owner spans replaced (%d distinct values)\n\n",
		p.ExportDigest, len(p.Export), summary(p.Stats.OwnerSpans), p.Stats.Values)
	fmt.Fprintf(out, "2. Independent verification (%s, %s): %s\n", p.Verification.Verifier, verifierMode, p.Verification.Verdict)
	for _, cl := range p.Verification.Claims {
		mark := "holds"
		if !cl.OK {
			mark = "FAILS"
		}
		fmt.Fprintf(out, "   %-18s %s\n", cl.Name, mark)
	}
	fmt.Fprintf(out, "\n3. Seal and egress: seal %s; the sealed request is an OpenAI Chat Completions body of %d bytes (%s),\n",
		p.Seal.EventID, sent.Bytes, sent.BodyDigest)
	fmt.Fprintf(out, "   sent to %s for consumer %s, at most %d times; lease %s\n", p.Plan.Target, p.Plan.Consumer, p.Plan.MaxUses, p.Lease)
	for i, t := range sent.Tries {
		fmt.Fprintf(out, "   try %d: decision %s, use %d: HTTP %d (%s)\n", i+1, t.Decision, t.Use, t.Status, t.Outcome)
	}
	d.check("the stand-in's 429 was answered by redelivering the same sealed bytes under a fresh decision",
		len(sent.Tries) == 2 && sent.Tries[0].Status == http.StatusTooManyRequests && sent.Tries[1].Status == http.StatusOK &&
			len(sent.Decisions) == 2 && sent.Decisions[0].EventID != sent.Decisions[1].EventID &&
			sent.Decisions[0].BodyDigest == sent.Decisions[1].BodyDigest,
		fmt.Sprintf("%d tries", len(sent.Tries)))
	fmt.Fprintln(out)
	fmt.Fprintf(out, "4. What came back (quarantined, %s):\n   %s\n", receipts.SHA256(answer), bytes.TrimSpace(answer))
	doc, err := d.rehydrate(ctx, p, answer)
	if err != nil {
		return fmt.Errorf("rehydrate the honest answer: %w", err)
	}
	d.check("the honest answer is rehydrated and its lease ends", doc.State == "CONSUMED" && len(doc.Receipt.Substitutions) > 0, doc.State)
	fmt.Fprintf(out, "\n5. What was substituted, inside the vault, only at marked paths (%s):\n   %s\n",
		summary(doc.Receipt.Substitutions), doc.Result)
	printProseToken(out, doc.Result)
	fmt.Fprintf(out, "\n6. Receipt (%s):\n", doc.Receipt.Schema)
	fmt.Fprintf(out, "   lease       %s (now %s)\n", doc.Receipt.Lease, doc.State)
	fmt.Fprintf(out, "   return      %s (the answer as it came back)\n", doc.Receipt.ReturnDigest)
	fmt.Fprintf(out, "   final       %s (the rehydrated result, keyed)\n", doc.Receipt.FinalDigest)
	fmt.Fprintf(out, "   purge at    %s: the rehydrated result of step 5 must be deleted by then (the plan's\n", doc.Receipt.PurgeAt)
	fmt.Fprintln(out, "               retention); until then the gate refuses it as local-only")

	fmt.Fprintln(out, "\n7. What was refused, and why (with every check the demo makes):")
	// Replay: the same answer again, to the consumed lease.
	r, err := d.refusedWith(func() error { _, err := d.rehydrate(ctx, p, answer); return err })
	d.check("a replay of the answer to the consumed lease is refused", err == nil && r.Code == receipts.LeaseNotActive, reasonText(r, err))
	// The rehydrated answer may never leave.
	// The pipeline registered the result as local-only when it was
	// rehydrated: its gate must never admit it.
	_, aerr := d.p.Authority().Admit(p.Seal.EventID, doc.Result, p.Plan.Target, p.Plan.Consumer)
	var ee *egress.Error
	localOnly := errors.As(aerr, &ee) && ee.Reason == egress.ReasonLocalOnly
	got := errText(aerr)
	if localOnly {
		// The gate files this reason under its plan code; what the
		// reviewer needs is the reason: these bytes are registered as
		// never to leave.
		got = "refused: its digest is registered local-only"
	}
	d.check("the rehydrated answer offered to the egress gate may never leave", localOnly, got)

	// Adversarial answers: fresh cuts, fresh leases.
	for i, tc := range []struct {
		mode string
		code receipts.Code
		what string
	}{
		{standin.Invent, receipts.TokenNotIssued, "an invented token (one character of a real token changed)"},
		{standin.Unmarked, receipts.TokenWrongPath, "an exact token in a field the schema does not mark"},
	} {
		attempt := i + 2
		q, ans, _, err := d.cut(ctx, tc.mode, attempt)
		if err != nil {
			return err
		}
		if i == 0 {
			d.check("the same projection cut again gets a fresh namespace: no token shared with attempt 1", disjoint(p.Export, q.Export), "")
		}
		r, err := d.refusedWith(func() error { _, err := d.rehydrate(ctx, q, ans); return err })
		d.check(tc.what+" refuses the whole return", err == nil && r.Code == tc.code, reasonText(r, err))
		if i == 0 {
			cl, derr := d.c.dialSocket(d.sock)
			if derr == nil {
				info, serr := cl.Show(ctx, q.Lease)
				cl.Close()
				d.check("after the refused return the lease stays CLAIMED, claimable only by the same tuple", serr == nil && info.Lease.State.String() == "CLAIMED", errText(serr))
			}
		}
	}
	return nil
}

// printProseToken explains a token left in the answer's summary: the
// summary is prose, not a marked path, and stays as it came back.
func printProseToken(out io.Writer, result []byte) {
	var a struct {
		Summary string `json:"summary"`
	}
	if json.Unmarshal(result, &a) != nil || !strings.Contains(a.Summary, "pcv:") {
		return
	}
	fmt.Fprintln(out, "   The summary still holds a token, and that is right: it is free text the model wrote, not a")
	fmt.Fprintln(out, "   field the schema marks for a category, so the vault restores nothing there. Private values")
	fmt.Fprintln(out, "   return only at marked paths; a model cannot steer one into prose of its choosing.")
}

func (d *demo) report() {
	out := d.c.Stdout
	n := 0
	for _, ch := range d.checks {
		mark := "ok  "
		if !ch.ok {
			mark = "FAIL"
		} else {
			n++
		}
		line := "   " + mark + " " + ch.what
		if ch.got != "" {
			line += " — " + ch.got
		}
		fmt.Fprintln(out, line)
	}
	fmt.Fprintf(out, "\n%d of %d checks behaved as expected.\n", n, len(d.checks))
}

func reasonText(r receipts.Refusal, err error) string {
	if err != nil {
		return errText(err)
	}
	if r.Path != "" {
		return fmt.Sprintf("%s at %s (line %d col %d len %d)", r.Code, r.Path, r.Line, r.Column, r.Length)
	}
	return string(r.Code)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// disjoint reports whether two exports share no vault token.
func disjoint(a, b []byte) bool {
	tokens := func(x []byte) map[string]bool {
		m := map[string]bool{}
		for _, f := range bytes.Split(x, []byte(`\"`)) {
			if bytes.HasPrefix(f, []byte("pcv:")) {
				m[string(f)] = true
			}
		}
		return m
	}
	ta, tb := tokens(a), tokens(b)
	if len(ta) == 0 || len(tb) == 0 {
		return false
	}
	for t := range ta {
		if tb[t] {
			return false
		}
	}
	return true
}

// indent returns a writer that indents every line by three spaces.
func indent(w io.Writer) io.Writer { return &indenter{w: w, bol: true} }

type indenter struct {
	w   io.Writer
	bol bool
}

func (i *indenter) Write(p []byte) (int, error) {
	for _, c := range p {
		if i.bol {
			if _, err := i.w.Write([]byte("   ")); err != nil {
				return 0, err
			}
		}
		if _, err := i.w.Write([]byte{c}); err != nil {
			return 0, err
		}
		i.bol = c == '\n'
	}
	return len(p), nil
}

// demoCredential is the API key the demo's stand-in expects: a fake, in
// a file of the demo directory, as a real one would be.
const demoCredential = "sk-demo-not-a-real-key"
