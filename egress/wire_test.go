package egress_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
)

// TestSealBindsWire: a cut sent as openai-chat@1 is sealed over its wire
// body: Admit admits the body, not the export, and the evidence names both
// digests.
func TestSealBindsWire(t *testing.T) {
	clk := &clock{t0}
	a, path := setup(t, clk)
	f := newWireFixture()
	req := f.build(t)
	if bytes.Equal(req.Wire, req.Export) || !bytes.HasPrefix(req.Wire, []byte(`{"max_completion_tokens":1024,`)) {
		t.Fatalf("fixture wire body %q", req.Wire)
	}
	cut := mustSeal(t, a, req)
	wireDigest := receipts.SHA256(req.Wire)
	if cut.WireDigest != wireDigest || cut.ExportDigest != receipts.SHA256(req.Export) {
		t.Fatalf("cut digests: wire %s export %s", cut.WireDigest, cut.ExportDigest)
	}

	_, err := a.Admit(cut.EventID, req.Export, f.Target, f.Consumer)
	if e := asError(t, err); e.Reason != egress.ReasonBody {
		t.Errorf("the export admitted under a wire seal: %v", err)
	}
	d, err := a.Admit(cut.EventID, req.Wire, f.Target, f.Consumer)
	if err != nil || !d.Admit || d.BodyDigest != wireDigest || d.Use != 1 {
		t.Fatalf("Admit(wire) = %+v, %v", d, err)
	}
	lines := readJournal(t, path)
	want := []egress.Entry{
		{EventID: cut.EventID, Time: t0, Kind: "seal", Command: "seal", Seal: cut.EventID, Digest: cut.ExportDigest, Wire: wireDigest, Plan: cut.PlanDigest},
		{Kind: "refusal", Command: "admit", Seal: cut.EventID, Codes: []receipts.Code{receipts.PlanMismatch}, Reason: "body",
			Digest: cut.ExportDigest, Wire: wireDigest, Plan: cut.PlanDigest, Time: t0},
		{EventID: d.EventID, Time: t0, Kind: "admit", Command: "admit", Seal: cut.EventID, Digest: cut.ExportDigest, Wire: wireDigest, Plan: cut.PlanDigest, Use: 1},
	}
	if diff := cmp.Diff(want, lines, cmpopts.IgnoreFields(egress.Entry{}, "EventID")); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
}

// TestSealExportWireDigest: for export@1 the wire body is the export: a
// nil Wire stands for it, and the verification's wire digest (the
// verifier's wire-match always states it) must be the export digest; a
// verification without one is refused.
func TestSealExportWireDigest(t *testing.T) {
	a, _ := setup(t, &clock{t0})
	req := newFixture().build(t)
	req.Wire = nil
	cut := mustSeal(t, a, req)
	if cut.WireDigest != cut.ExportDigest {
		t.Errorf("export@1 wire digest %s, want the export's %s", cut.WireDigest, cut.ExportDigest)
	}
	a2, _ := setup(t, &clock{t0})
	req.Wire = append([]byte(nil), req.Export...)
	mustSeal(t, a2, req)
	a3, _ := setup(t, &clock{t0})
	req.Verification.WireDigest = ""
	_, err := a3.SealUnverified(req)
	var ee *egress.Error
	if !errors.As(err, &ee) || ee.Reason != egress.ReasonWireDigest {
		t.Errorf("export@1 without a wire digest: %v, want %q", err, egress.ReasonWireDigest)
	}
}

func TestSealWireRefusals(t *testing.T) {
	other := "sha256:" + strings.Repeat("9", 64)
	tests := []struct {
		name   string
		fix    func(*fixture)
		mut    func(*egress.UnverifiedSeal)
		deny   func(*egress.UnverifiedSeal) string
		reason string
	}{
		{name: "no wire body", mut: func(r *egress.UnverifiedSeal) { r.Wire = nil }, reason: "wire-digest"},
		{name: "wire byte changed", mut: func(r *egress.UnverifiedSeal) { r.Wire[10] ^= 1 }, reason: "wire-digest"},
		{name: "verification wire digest differs", mut: func(r *egress.UnverifiedSeal) { r.Verification.WireDigest = other }, reason: "wire-digest"},
		{name: "verification without wire digest", mut: func(r *egress.UnverifiedSeal) { r.Verification.WireDigest = "" }, reason: "wire-digest"},
		{name: "the export as the wire body", mut: func(r *egress.UnverifiedSeal) {
			r.Wire = append([]byte(nil), r.Export...)
			r.Verification.WireDigest = r.Verification.ExportDigest
		}, reason: "wire-digest"},
		{name: "unknown profile", fix: func(f *fixture) { f.Wire.Profile = "grpc@1" }, reason: "wire-profile"},
		{name: "export@1 with another body", fix: func(f *fixture) { f.Wire = nil }, mut: func(r *egress.UnverifiedSeal) {
			r.Wire = []byte(`{"model":"m"}`)
		}, reason: "wire-digest"},
		{name: "export@1 with another wire digest", fix: func(f *fixture) { f.Wire = nil }, mut: func(r *egress.UnverifiedSeal) {
			r.Verification.WireDigest = other
		}, reason: "wire-digest"},
		{name: "local-only wire body", deny: func(r *egress.UnverifiedSeal) string { return receipts.SHA256(r.Wire) }, reason: "local-only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, path := setup(t, &clock{t0})
			f := newWireFixture()
			if tt.fix != nil {
				tt.fix(&f)
			}
			req := f.build(t)
			if tt.mut != nil {
				tt.mut(&req)
			}
			if tt.deny != nil {
				a.DenyLocal(tt.deny(&req))
			}
			_, err := a.SealUnverified(req)
			if e := asError(t, err); e.Reason != tt.reason || e.Code != receipts.PlanMismatch {
				t.Errorf("Seal: %v, want PLAN_MISMATCH %s", err, tt.reason)
			}
			if j, _ := os.ReadFile(path); bytes.Contains(j, []byte("Triage these")) {
				t.Error("journal holds wire bytes")
			}
		})
	}
}

// TestUsesCountedPerPlan: two seals of one plan (two exports of a
// reversible plan, or a seal made again) share the plan's max_uses, with a
// journal and without.
func TestUsesCountedPerPlan(t *testing.T) {
	for _, journaled := range []bool{true, false} {
		t.Run(fmt.Sprint("journal=", journaled), func(t *testing.T) {
			clk := &clock{t0}
			var a *egress.Authority
			if journaled {
				a, _ = setup(t, clk)
			} else {
				a = egress.NewAuthority(egress.Options{Now: clk.now, PolicyRevision: policy})
			}
			f1 := newFixture()
			f2 := newFixture()
			f2.Export = []byte(strings.Replace(exportBytes, "redacted:module:1", "redacted:module:2", 1))
			r1, r2 := f1.build(t), f2.build(t)
			c1, c2 := mustSeal(t, a, r1), mustSeal(t, a, r2)
			if c1.PlanDigest != c2.PlanDigest || c1.EventID == c2.EventID {
				t.Fatal("fixtures are not two seals of one plan")
			}
			for i, c := range []struct {
				seal string
				body []byte
			}{{c1.EventID, r1.Export}, {c2.EventID, r2.Export}} {
				d, err := a.Admit(c.seal, c.body, f1.Target, f1.Consumer)
				if err != nil || d.Use != i+1 {
					t.Fatalf("admission %d: use %d, %v", i+1, d.Use, err)
				}
			}
			d, err := a.Admit(c2.EventID, r2.Export, f1.Target, f1.Consumer)
			if e := asError(t, err); e.Code != receipts.LimitExceeded || e.Reason != egress.ReasonUsesExhausted || d.Admit {
				t.Errorf("third admission of a max_uses 2 plan: %v", err)
			}
		})
	}
}

// TestUsesSurviveRestart: a new Authority on the same journal (a restarted
// process that prepared and sealed the cut again) counts the admissions the
// journal holds.
func TestUsesSurviveRestart(t *testing.T) {
	clk := &clock{t0}
	a, path := setup(t, clk)
	f := newFixture()
	f.MaxUses = 1
	req := f.build(t)
	c := mustSeal(t, a, req)
	if _, err := a.Admit(c.EventID, req.Export, f.Target, f.Consumer); err != nil {
		t.Fatal(err)
	}
	b := egress.NewAuthority(egress.Options{Journal: egress.OpenJournal(path), Now: clk.now, PolicyRevision: policy})
	c2 := mustSeal(t, b, req)
	_, err := b.Admit(c2.EventID, req.Export, f.Target, f.Consumer)
	if e := asError(t, err); e.Code != receipts.LimitExceeded {
		t.Errorf("second process admitted a max_uses 1 plan: %v", err)
	}
}

// TestJournalCountIsConservative: a line naming the plan that does not read
// as an entry (torn by a crash) counts as an admission; refusals, seals and
// other plans' admissions do not; a line over 64 KiB fails the count and
// admits nothing.
func TestJournalCountIsConservative(t *testing.T) {
	f := newFixture()
	f.MaxUses = 2
	req := f.build(t)
	plan := mustDigest(t, &req.Plan)
	tests := []struct {
		name    string
		content string
		admit   bool // whether one more admission is possible
		use     int
	}{
		{"empty", "", true, 1},
		{"other plan", `{"kind":"admit","plan":"sha256:` + strings.Repeat("0", 64) + `","use":1}` + "\n" +
			`{"kind":"admit","plan":"sha256:` + strings.Repeat("1", 64) + `","use":1}` + "\n", true, 1},
		{"refusals and seals", `{"kind":"refusal","plan":"` + plan + `"}` + "\n" + `{"kind":"seal","plan":"` + plan + `"}` + "\n", true, 1},
		{"one admission", `{"kind":"admit","plan":"` + plan + `","use":1}` + "\n", true, 2},
		{"one admission, one torn line", `{"kind":"admit","plan":"` + plan + `","use":1}` + "\n" + `{"kind":"admit","pl` + "\n" + `{"ev":"x","plan":"` + plan + `","kin` + "\n", false, 0},
		{"torn last line", `{"kind":"admit","plan":"` + plan + `","use":1}` + "\n" + `{"kind":"adm","plan":"` + plan, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &clock{t0}
			a, path := setup(t, clk)
			c := mustSeal(t, a, req)
			appendRaw(t, path, tt.content)
			d, err := a.Admit(c.EventID, req.Export, f.Target, f.Consumer)
			if tt.admit != (err == nil) || d.Use != tt.use {
				t.Errorf("Admit = use %d, %v; want admit %v use %d", d.Use, err, tt.admit, tt.use)
			}
			if !tt.admit {
				if e := asError(t, err); e.Code != receipts.LimitExceeded {
					t.Errorf("refusal %v", err)
				}
			}
		})
	}
	t.Run("overlong line", func(t *testing.T) {
		a, path := setup(t, &clock{t0})
		c := mustSeal(t, a, req)
		appendRaw(t, path, `{"kind":"seal","x":"`+strings.Repeat("x", 70<<10)+"\"}\n")
		d, err := a.Admit(c.EventID, req.Export, f.Target, f.Consumer)
		if err == nil || d.Admit || strings.Contains(err.Error(), "xxxx") {
			t.Fatalf("Admit over an unreadable journal = %+v, %v", d, err)
		}
	})
}

func appendRaw(t *testing.T, path, s string) {
	t.Helper()
	fd, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if _, err := fd.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// helperEnv names the journal a re-executed test binary admits under.
const helperEnv = "PRIVACYCUT_EGRESS_ADMIT_HELPER"

// TestHelperProcessAdmit is not a test: re-executed by
// TestUseCeilingAcrossProcesses, it is one `cut send` process. It seals
// the fixture cut (max_uses 1) in its own Authority, waits for its
// standard input to close, admits once and prints the outcome.
func TestHelperProcessAdmit(t *testing.T) {
	path := os.Getenv(helperEnv)
	if path == "" {
		t.Skip("helper process only")
	}
	clk := &clock{t0}
	a := egress.NewAuthority(egress.Options{Journal: egress.OpenJournal(path), Now: clk.now, PolicyRevision: policy})
	f := newFixture()
	f.MaxUses = 1
	req := f.build(t)
	c, err := a.SealUnverified(req)
	if err != nil {
		fmt.Println("seal-error")
		return
	}
	fmt.Println("sealed")
	io.Copy(io.Discard, os.Stdin)
	d, err := a.Admit(c.EventID, req.Export, f.Target, f.Consumer)
	switch {
	case err == nil:
		fmt.Printf("admitted %d\n", d.Use)
	case d.Reason != "":
		fmt.Printf("refused %s\n", d.Reason)
	default:
		fmt.Println("error")
	}
}

// TestUseCeilingAcrossProcesses: three processes, each with its own seal of
// one max_uses 1 plan, admit at the same moment over one journal: exactly
// one admission in all, the two others refused uses-exhausted.
func TestUseCeilingAcrossProcesses(t *testing.T) {
	if os.Getenv(helperEnv) != "" {
		t.Skip("in a helper")
	}
	for round := range 3 {
		path := filepath.Join(t.TempDir(), "state", "journal.jsonl")
		type proc struct {
			cmd   *exec.Cmd
			stdin io.WriteCloser
			out   *bufio.Reader
		}
		var procs []proc
		for range 3 {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessAdmit$", "-test.count=1")
			cmd.Env = append(os.Environ(), helperEnv+"="+path)
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			procs = append(procs, proc{cmd, stdin, bufio.NewReader(stdout)})
		}
		for _, p := range procs { // every process has sealed before any admits
			if line, _ := p.out.ReadString('\n'); line != "sealed\n" {
				t.Fatalf("helper: %q", line)
			}
		}
		for _, p := range procs {
			p.stdin.Close()
		}
		var mu sync.Mutex
		got := map[string]int{}
		var wg sync.WaitGroup
		for _, p := range procs {
			wg.Go(func() {
				line, _ := p.out.ReadString('\n')
				io.Copy(io.Discard, p.out)
				p.cmd.Wait()
				mu.Lock()
				got[strings.TrimSpace(line)]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if diff := cmp.Diff(map[string]int{"admitted 1": 1, "refused uses-exhausted": 2}, got); diff != "" {
			t.Errorf("round %d outcomes (-want +got):\n%s", round, diff)
		}
		kinds := map[string]int{}
		for _, e := range readJournal(t, path) {
			kinds[e.Kind]++
		}
		if diff := cmp.Diff(map[string]int{"seal": 3, "admit": 1, "refusal": 2}, kinds); diff != "" {
			t.Errorf("round %d journal (-want +got):\n%s", round, diff)
		}
	}
}
