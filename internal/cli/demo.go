package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/server"
	"github.com/privacycut/privacycut/vault/service"
)

func init() {
	register(&command{name: "demo", summary: "the main job: a full reversible round trip with a report", run: runDemo})
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
	auth   *egress.Authority
	checks []demoCheck
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
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("usage: cut demo [--vault SOCK] [--keep] [--verifier plugin|inprocess]")
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
	if d.sock == "" {
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
	srv := &http.Server{Handler: standin.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	d.model = "http://" + ln.Addr().String() + "/v1/"
	d.auth = egress.NewAuthority(egress.Options{Journal: d.quiet.openJournal(), PolicyRevision: policyRevision})

	out := c.Stdout
	fmt.Fprintln(out, "privacycut demo — a reversible cut of the bundled example, end to end")
	fmt.Fprintf(out, "  vault: %s\n  model: loopback stand-in at %s\n  files: %s\n\n", vaultDesc, d.model, dir)
	err = d.run(ctx, *verifierMode)
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
	v, err := service.Open(service.Options{
		StateDir: filepath.Join(d.dir, "vault", "state"), KeyDir: filepath.Join(d.dir, "vault", "keys"),
		Station: "local", MaxLease: 2 * time.Hour, ArenaSize: 4 << 20,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, "", fmt.Errorf("embedded vault: %w", err)
	}
	srv := server.New(v, server.Options{})
	d.sock = filepath.Join(d.dir, "vault", "run", "vault.sock")
	ln, err := server.Listen(d.sock)
	if err != nil {
		v.Close()
		return nil, "", err
	}
	go srv.Serve(ln)
	p := v.Prove()
	desc = fmt.Sprintf("embedded (arena %s %d bytes, profile %s", p.Arena.Kind, p.Arena.Bytes, p.Profile)
	if p.Profile != harden.Accepted {
		desc += ": " + strings.Join(p.Reasons, ", ")
	}
	desc += ")"
	return func() { srv.Stop(); v.Close() }, desc, nil
}

// cut runs one reversible cut of the example for the stand-in's mode:
// plan, prepare (censor, verifier, seal, lease), admit, POST, quarantine.
func (d *demo) cut(ctx context.Context, mode string, attempt int, verifierMode string) (*prepared, []byte, receipts.EgressDecision, error) {
	plan := filepath.Join(d.dir, fmt.Sprintf("plan-%s.json", mode))
	if err := runPlan(ctx, d.quiet, []string{"init", "--vocab", d.vocab, "--consumer", "model:demo-standin",
		"--purpose", "dependency-triage", "--target", d.model + mode, "--mode", receipts.ModeReversible,
		"--schema", d.schema, "-o", plan, d.proj}); err != nil {
		return nil, nil, receipts.EgressDecision{}, fmt.Errorf("plan init: %w", err)
	}
	f := &prepareFlags{vocab: d.vocab, plan: plan, verifier: verifierMode, vault: d.sock, run: "demo", attempt: attempt}
	p, err := d.quiet.prepare(ctx, f, d.proj, d.auth)
	if err != nil {
		return nil, nil, receipts.EgressDecision{}, fmt.Errorf("prepare: %w", err)
	}
	if p.verdict.Verdict != receipts.VerdictPass {
		return nil, nil, receipts.EgressDecision{}, fmt.Errorf("verification failed: %v", p.verdict.Failed())
	}
	dec, err := d.auth.Admit(p.seal.EventID, p.out.Export, p.in.plan.Target, p.in.plan.Consumer)
	if err != nil {
		return nil, nil, dec, fmt.Errorf("admit: %w", err)
	}
	qf, err := openQuarantine(filepath.Join(d.dir, "quarantine", mode+".json"))
	if err != nil {
		return nil, nil, dec, err
	}
	defer qf.abort()
	status, answer, err := post(ctx, p.in.plan.Target, p.out.Export, time.Minute)
	if err != nil || status != http.StatusOK {
		return nil, nil, dec, fmt.Errorf("post: HTTP %d %v", status, err)
	}
	if err := qf.commit(answer); err != nil {
		return nil, nil, dec, err
	}
	return p, answer, dec, nil
}

// rehydrate asks the vault to rehydrate answer under p's lease.
func (d *demo) rehydrate(ctx context.Context, p *prepared, attempt int, answer []byte) (*rehydratedDoc, error) {
	cl, err := d.c.dialSocket(d.sock)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	f := &prepareFlags{run: "demo", attempt: attempt}
	rec := p.record(f)
	schema, err := os.ReadFile(d.schema)
	if err != nil {
		return nil, err
	}
	return d.quiet.rehydrateLease(ctx, cl, &rec, schema, answer, p.in.key, true)
}

// refusedWith runs fn, which must be refused: it returns the code and path
// of the refusal the command printed.
func (d *demo) refusedWith(fn func() error) (receipts.Refusal, error) {
	start := d.log.Len()
	err := fn()
	var re *refusedError
	if !errors.As(err, &re) {
		if err == nil {
			return receipts.Refusal{}, errors.New("was not refused")
		}
		return receipts.Refusal{}, err
	}
	var doc receipts.RefusalDocument
	printed := bytes.TrimSpace(d.log.Bytes()[start:])
	if i := bytes.LastIndexByte(printed, '\n'); i >= 0 {
		printed = printed[i+1:]
	}
	if err := canon.Unmarshal(printed, &doc, canon.Options{}); err != nil || len(doc.Reasons) == 0 {
		return receipts.Refusal{}, errors.New("refusal document unreadable")
	}
	return doc.Reasons[0], nil
}

func (d *demo) check(what string, ok bool, got string) {
	d.checks = append(d.checks, demoCheck{what: what, ok: ok, got: got})
}

func (d *demo) run(ctx context.Context, verifierMode string) error {
	out := d.c.Stdout
	// 1. An honest round trip.
	p, answer, dec, err := d.cut(ctx, standin.Honest, 1, verifierMode)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "1. What was disclosed — the export, byte for byte (owner values are vault tokens):")
	printExport(&Cmd{Env: Env{Stdout: indent(out)}}, p.out.Export)
	fmt.Fprintf(out, "   export %s, %d bytes; %s owner spans replaced (%d distinct values)\n\n",
		p.out.ExportDigest, len(p.out.Export), summary(p.out.Stats.OwnerSpans()), p.out.Pairs)
	fmt.Fprintf(out, "2. Independent verification (%s, %s): %s —", p.verdict.Verifier, verifierMode, p.verdict.Verdict)
	for _, cl := range p.verdict.Claims {
		fmt.Fprintf(out, " %s:%v", cl.Name, cl.OK)
	}
	fmt.Fprintf(out, "\n\n3. Seal and egress: seal %s; admitted use %d of %d to %s (consumer %s); lease %s\n\n",
		p.seal.EventID, dec.Use, dec.MaxUses, p.in.plan.Target, p.in.plan.Consumer, p.lease)
	fmt.Fprintf(out, "4. What came back (quarantined, %s):\n   %s\n", receipts.SHA256(answer), bytes.TrimSpace(answer))
	doc, err := d.rehydrate(ctx, p, 1, answer)
	if err != nil {
		return fmt.Errorf("rehydrate the honest answer: %w", err)
	}
	// As cut send does: the result holds owner values, and this gate must
	// never admit it.
	d.auth.DenyLocal(receipts.SHA256(doc.Result))
	d.check("the honest answer is rehydrated and the lease consumed", doc.State == "CONSUMED" && len(doc.Receipt.Substitutions) > 0, doc.State)
	fmt.Fprintf(out, "\n5. What was substituted, inside the vault, only at marked paths (%s):\n   %s\n",
		summary(doc.Receipt.Substitutions), doc.Result)
	fmt.Fprintln(out, "   (the summary's prose still holds its token: prose is never scanned)")
	fmt.Fprintf(out, "\n6. Receipt: %s lease %s, return %s, final %s (keyed), purge at %s\n",
		doc.Receipt.Schema, doc.Receipt.Lease, doc.Receipt.ReturnDigest, doc.Receipt.FinalDigest, doc.Receipt.PurgeAt)

	fmt.Fprintln(out, "\n7. What was refused, and why (with every check the demo makes):")
	// Replay: the same answer again, to the consumed lease.
	r, err := d.refusedWith(func() error { _, err := d.rehydrate(ctx, p, 1, answer); return err })
	d.check("a replay of the answer to the consumed lease is refused LEASE_NOT_ACTIVE", err == nil && r.Code == receipts.LeaseNotActive, reasonText(r, err))
	// The rehydrated answer may never leave.
	_, aerr := d.auth.Admit(p.seal.EventID, doc.Result, p.in.plan.Target, p.in.plan.Consumer)
	var ee *egress.Error
	d.check("the rehydrated answer offered to the egress gate is refused as local-only", errors.As(aerr, &ee) && ee.Reason == egress.ReasonLocalOnly, errText(aerr))

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
		q, ans, _, err := d.cut(ctx, tc.mode, attempt, verifierMode)
		if err != nil {
			return err
		}
		if i == 0 {
			d.check("the same projection cut again gets a fresh namespace: no token shared with attempt 1", disjoint(p.out.Export, q.out.Export), "")
		}
		r, err := d.refusedWith(func() error { _, err := d.rehydrate(ctx, q, attempt, ans); return err })
		d.check(tc.what+" refuses the whole return "+string(tc.code), err == nil && r.Code == tc.code, reasonText(r, err))
		if i == 0 {
			cl, derr := d.c.dialSocket(d.sock)
			if derr == nil {
				info, serr := cl.Show(ctx, q.lease)
				cl.Close()
				d.check("after the refused return the lease stays CLAIMED, claimable only by the same tuple", serr == nil && info.Lease.State.String() == "CLAIMED", errText(serr))
			}
		}
	}
	return nil
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
