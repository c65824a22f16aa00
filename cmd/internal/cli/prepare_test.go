package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// cutEnv writes a two-part projection with canary owner values and a plan for
// target.
func cutEnv(t *testing.T, target string, extra ...string) (e *testEnv, proj, plan string) {
	t.Helper()
	e = newTestEnv(t)
	proj = e.write(t, "p.json", projection(okRecord, "ask triage.rank-by-severity owner.team=\""+canary+"-team\"\n"))
	plan = filepath.Join(e.dir, "plan.json")
	args := append([]string{"plan", "init", "--vocab", e.vocab, "--consumer", "model:triage", "--purpose", "dependency-triage",
		"--target", target, "-o", plan, proj}, extra...)
	if code, _, errb := e.run(t, args...); code != ExitOK {
		t.Fatalf("plan init: exit %d: %s", code, errb)
	}
	return e, proj, plan
}

func TestPrepareVerify(t *testing.T) {
	for _, mode := range []string{"inprocess", "plugin"} {
		t.Run(mode, func(t *testing.T) {
			e, proj, plan := cutEnv(t, "https://model.example/v1/answer")
			code, out, errb := e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", mode, "--json", proj)
			if code != ExitOK {
				t.Fatalf("prepare: exit %d\n%s\n%s", code, out, errb)
			}
			assertNoCanary(t, "bundle", out)
			assertNoCanary(t, "stderr", errb)
			if hinted := bytes.Contains(errb, []byte("--verifier inprocess")); hinted != (mode == "inprocess") {
				t.Errorf("the in-process hint on stderr: %v, want %v:\n%s", hinted, mode == "inprocess", errb)
			}
			var b receipts.Bundle
			if err := canon.Unmarshal(out, &b, canon.Options{}); err != nil {
				t.Fatal(err)
			}
			if b.Schema != receipts.SchemaBundle || b.Verification.Verdict != receipts.VerdictPass || b.Seal == nil || b.Lease != nil ||
				len(b.Receipts) != 2 || b.ExportDigest != receipts.SHA256(b.Export) {
				t.Fatalf("bundle %s", out)
			}
			if !bytes.Contains(b.Export, []byte(`owner.module=\"redacted:module:1\"`)) || !bytes.Contains(b.Export, []byte(`owner.team=\"redacted:team:1\"`)) {
				t.Fatalf("export %s", b.Export)
			}
			bundle := e.write(t, "bundle.json", string(out))
			code, vout, errb := e.run(t, "verify", "--vocab", e.vocab, "--plan", plan, "--source", proj, "--verifier", mode, "--json", bundle)
			if code != ExitOK {
				t.Fatalf("verify: exit %d\n%s\n%s", code, vout, errb)
			}
			// One altered byte of the export: the verifier fails naming claims.
			bad := e.write(t, "bad.json", strings.Replace(string(out), "redacted:team:1", "redacted:team:2", 1))
			code, vout, _ = e.run(t, "verify", "--vocab", e.vocab, "--plan", plan, "--source", proj, "--verifier", mode, "--json", bad)
			var v receipts.Verification
			if err := canon.Unmarshal(vout, &v, canon.Options{}); err != nil {
				t.Fatal(err)
			}
			if code != ExitVerifyNo || v.Verdict != "fail" || !contains(v.Failed(), "token-consistency") || !contains(v.Failed(), "receipt-chain") {
				t.Fatalf("tampered bundle: exit %d, failed %v", code, v.Failed())
			}
		})
	}
}

// preparedBundle prepares the projection of cutEnv in process and returns
// the environment, the projection and plan files, and the bundle's JSON.
func preparedBundle(t *testing.T) (e *testEnv, proj, plan, bundle string) {
	t.Helper()
	e, proj, plan = cutEnv(t, "https://model.example/v1/answer")
	code, out, errb := e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess", "--json", proj)
	if code != ExitOK {
		t.Fatalf("prepare: exit %d: %s", code, errb)
	}
	return e, proj, plan, string(bytes.TrimSpace(out))
}

// TestVerifyMalformedBundle: a bundle that is not a strict CutBundle@1 does
// not verify (exit 4, every claim failed, in JSON and in text), and the
// verdict names no byte of it; an unreadable file stays an operational
// error (exit 1).
func TestVerifyMalformedBundle(t *testing.T) {
	e, proj, plan, good := preparedBundle(t)
	const marker = "TAMPER-MARKER-7d1f"
	for name, doc := range map[string]string{
		"unknown field":  strings.TrimSuffix(good, "}") + `,"` + marker + `":1}`,
		"another schema": strings.Replace(good, `"CutBundle@1"`, `"CutBundle@2"`, 1),
		"not JSON":       marker + good,
		"duplicate key":  strings.TrimSuffix(good, "}") + `,"export_digest":"` + marker + `"}`,
		"truncated":      good[:len(good)/2],
	} {
		t.Run(name, func(t *testing.T) {
			bundle := e.write(t, "bundle.json", doc)
			for _, asJSON := range []bool{true, false} {
				args := []string{"verify", "--vocab", e.vocab, "--plan", plan, "--source", proj, "--verifier", "inprocess", bundle}
				if asJSON {
					args = append(args, "--json")
				}
				code, out, errb := e.run(t, args...)
				if code != ExitVerifyNo || bytes.Contains(out, []byte(marker)) || bytes.Contains(errb, []byte(marker)) {
					t.Fatalf("json %v: exit %d\n%s\n%s", asJSON, code, out, errb)
				}
				if !asJSON {
					continue
				}
				var v receipts.Verification
				decodeStrict(t, out, &v)
				if v.Verdict != "fail" || len(v.Failed()) != len(v.Claims) || len(v.Claims) != 9 {
					t.Fatalf("verdict %+v", v)
				}
			}
		})
	}
	if code, _, _ := e.run(t, "verify", "--vocab", e.vocab, "--plan", plan, "--source", proj, "--verifier", "inprocess",
		filepath.Join(e.dir, "missing.json")); code != ExitError {
		t.Fatalf("missing bundle: exit %d, want 1", code)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestPrepareRefusals(t *testing.T) {
	e, proj, plan := cutEnv(t, "https://model.example/v1/answer")
	// A projection changed after planning: the manifest no longer matches.
	e.write(t, "p.json", projection(okRecord))
	code, out, errb := e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess", "--json", proj)
	if code != ExitRefused || !bytes.Contains(out, []byte(`"code":"PLAN_MISMATCH"`)) || !bytes.Contains(errb, []byte("manifest_digest")) {
		t.Fatalf("changed projection: exit %d\n%s\n%s", code, out, errb)
	}
	// The same texts under another label (only labels and lineage
	// changed): the manifest matches, restricted_ref does not. Refused
	// before any token is issued, not left to the verifier (exit 4).
	e.write(t, "p.json", strings.ReplaceAll(projection(okRecord, "ask triage.rank-by-severity owner.team=\""+canary+"-team\"\n"),
		`"lineage":["sha256:l"]`, `"lineage":["sha256:m"]`))
	code, out, errb = e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess", "--json", proj)
	if code != ExitRefused || !bytes.Contains(out, []byte(`"code":"PLAN_MISMATCH"`)) || !bytes.Contains(errb, []byte("restricted_ref")) {
		t.Fatalf("relabelled projection: exit %d\n%s\n%s", code, out, errb)
	}
	// A grammar refusal.
	e.write(t, "p.json", projection(strings.Replace(okRecord, "affected", "exploited", 1)))
	code, out, errb = e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess", "--json", proj)
	if code != ExitRefused || !bytes.Contains(out, []byte(`"code":"UNKNOWN_STATUS"`)) {
		t.Fatalf("grammar refusal: exit %d\n%s", code, out)
	}
	assertNoCanary(t, "stdout", out)
	assertNoCanary(t, "stderr", errb)
	// An expired plan.
	e2, proj2, plan2 := cutEnv(t, "https://model.example/v1/answer")
	pb, err := os.ReadFile(plan2)
	if err != nil {
		t.Fatal(err)
	}
	var pl receipts.Plan
	if err := canon.Unmarshal(pb, &pl, canon.Options{}); err != nil {
		t.Fatal(err)
	}
	pl.ExpiresAt = "2020-01-01T00:00:00Z"
	pb, _ = canon.Marshal(pl)
	e2.write(t, "plan.json", string(pb))
	code, out, _ = e2.run(t, "prepare", "--vocab", e2.vocab, "--plan", plan2, "--verifier", "inprocess", "--json", proj2)
	if code != ExitRefused || !bytes.Contains(out, []byte(`"code":"PLAN_MISMATCH"`)) {
		t.Fatalf("expired plan: exit %d\n%s", code, out)
	}
	// A plan document with a member its fields leave out: the censor and
	// the verifier would digest it differently, so it is refused as it is
	// read (before: exit 4, "plan_digest does not match the plan").
	pb, _ = os.ReadFile(plan)
	for _, member := range []string{`"station":""`, `"remote_deadline_s":0`} {
		e.write(t, "plan.json", strings.Replace(string(pb), `{`, `{`+member+`,`, 1))
		code, out, errb = e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess", "--json", proj)
		if code != ExitError || !bytes.Contains(errb, []byte("a member its fields leave out")) {
			t.Fatalf("plan with %s: exit %d\n%s\n%s", member, code, out, errb)
		}
	}
	// Formatting and member order are not members.
	var indented bytes.Buffer
	json.Indent(&indented, pb, "", "  ")
	e.write(t, "plan.json", indented.String())
	e.write(t, "p.json", projection(okRecord, "ask triage.rank-by-severity owner.team=\""+canary+"-team\"\n"))
	if code, _, errb = e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess", "--json", proj); code != ExitOK {
		t.Fatalf("indented plan: exit %d\n%s", code, errb)
	}
}

// TestPrepareRunAttempt: the run and attempt bound into a lease are checked
// as flags, before anything else: an attempt outside 1 to 2^32-1 (it would
// wrap into another attempt's claim) or a run id the vault would refuse is
// a usage error, for prepare and send alike.
func TestPrepareRunAttempt(t *testing.T) {
	e, proj, plan := cutEnv(t, "https://model.example/v1/answer")
	for _, cmd := range []string{"prepare", "send"} {
		for _, flags := range [][]string{
			{"--attempt", "0"}, {"--attempt", "-1"}, {"--attempt", "4294967296"}, {"--attempt", "4294967297"},
			{"--run", ""}, {"--run", "a b"}, {"--run", strings.Repeat("r", 257)},
		} {
			args := append([]string{cmd, "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess"}, flags...)
			code, out, errb := e.run(t, append(args, proj)...)
			if code != ExitUsage || len(out) != 0 || !bytes.Contains(errb, []byte(flags[0]+" must be")) {
				t.Errorf("%s %q: exit %d\n%s\n%s", cmd, flags, code, out, errb)
			}
		}
	}
	for _, flags := range [][]string{{"--attempt", "4294967295"}, {"--run", strings.Repeat("r", 256)}} {
		args := append([]string{"prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess"}, flags...)
		if code, _, errb := e.run(t, append(args, proj)...); code != ExitOK {
			t.Errorf("prepare %q: exit %d\n%s", flags, code, errb)
		}
	}
}

// TestRefusalWithPluginIsQuiet: `cut prepare`, refused while its verifier
// plugin is still starting, stops the plugin without go-plugin's warnings
// about a plugin killed (which here is only the command ending): stderr
// holds the refusal and nothing else. cut runs as a new process, as a
// reviewer runs it.
func TestRefusalWithPluginIsQuiet(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The example vocabulary takes a moment to load: the refusal comes while
	// the plugin is being started, not before it is.
	vocab, err := filepath.Abs("../../../examples/vocabulary.json")
	if err != nil {
		t.Fatal(err)
	}
	e, proj, plan := cutEnv(t, "https://model.example/v1/answer")
	for range 3 {
		cmd := exec.Command(exe, "prepare", "--vocab", vocab, "--plan", plan, "--json", proj)
		cmd.Env = append(os.Environ(), asEnv+"=cut", "TMPDIR="+t.TempDir(), "HOME="+e.dir,
			"PRIVACYCUT_EVIDENCE_KEY="+filepath.Join(e.dir, "evidence.key"), "PRIVACYCUT_JOURNAL="+e.journal)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != ExitRefused || !bytes.Contains(out.Bytes(), []byte(`"code":"PLAN_MISMATCH"`)) {
			t.Fatalf("exit %d\n%s\n%s", code, out.Bytes(), errb.Bytes())
		}
		for _, line := range strings.Split(strings.TrimSpace(errb.String()), "\n") {
			if line != "" && !strings.HasPrefix(line, "cut: ") {
				t.Fatalf("stderr holds more than the refusal:\n%s", errb.Bytes())
			}
		}
	}
}

// TestSendLoopback runs `cut send` against a real HTTP server on loopback: the
// server receives exactly the export, the answer lands in quarantine, the
// admission is journaled.
func TestSendLoopback(t *testing.T) {
	var mu sync.Mutex
	var got [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, b)
		mu.Unlock()
		if r.URL.Path != "/v1/answer" || r.Method != http.MethodPost {
			http.Error(w, "wrong path", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ranking":["redacted:module:1"]}`)
	}))
	defer srv.Close()
	e, proj, plan := cutEnv(t, srv.URL+"/v1/answer")
	q := filepath.Join(e.dir, "q", "answer.json")
	code, out, errb := e.run(t, "send", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess", "--quarantine", q, "--json", proj)
	if code != ExitOK {
		t.Fatalf("send: exit %d\n%s\n%s", code, out, errb)
	}
	var res struct {
		Decisions  []receipts.EgressDecision `json:"decisions"`
		Status     int                       `json:"status"`
		Quarantine string                    `json:"quarantine"`
		BodyDigest string                    `json:"body_digest"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Decisions) != 1 || !res.Decisions[0].Admit || res.Decisions[0].Use != 1 || res.Status != 200 || res.Quarantine != q {
		t.Fatalf("result %s", out)
	}
	if len(got) != 1 || receipts.SHA256(got[0]) != res.Decisions[0].BodyDigest || res.BodyDigest != res.Decisions[0].BodyDigest {
		t.Fatalf("server received %d bodies", len(got))
	}
	assertNoCanary(t, "request body", got[0])
	ans, err := os.ReadFile(q)
	if err != nil || string(ans) != `{"ranking":["redacted:module:1"]}` {
		t.Fatalf("quarantine %q %v", ans, err)
	}
	if fi, _ := os.Stat(q); fi.Mode().Perm() != 0o600 {
		t.Fatalf("quarantine mode %v", fi.Mode())
	}
	j, _ := os.ReadFile(e.journal)
	if !bytes.Contains(j, []byte(`"kind":"admit"`)) || !bytes.Contains(j, []byte(res.Decisions[0].EventID)) {
		t.Fatalf("journal:\n%s", j)
	}
	assertNoCanary(t, "journal", j)
	assertNoCanary(t, "stdout", out)
	assertNoCanary(t, "stderr", errb)
}

// TestSendNoRedirect: a target that redirects does not get the body sent
// on; cut reports the redirect status, the answer is not usable
// (UPSTREAM_FAILED, exit 1) and nothing reaches the second host.
func TestSendNoRedirect(t *testing.T) {
	var hits int
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	e, proj, plan := cutEnv(t, srv.URL+"/")
	code, out, errb := e.run(t, "send", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess",
		"--quarantine", filepath.Join(e.dir, "q.json"), proj)
	if code != ExitError || hits != 0 || !bytes.Contains(out, []byte("HTTP 307")) || !bytes.Contains(errb, []byte("UPSTREAM_FAILED (redirect)")) {
		t.Fatalf("exit %d, hits %d\n%s\n%s", code, hits, out, errb)
	}
}

// TestBundleIsCanonical: the bundle written in pieces (the export is not
// copied) is canonical JSON, ends in one newline, and is the same on stdout
// and in the -o file, which is created 0600.
func TestBundleIsCanonical(t *testing.T) {
	e, proj, plan := cutEnv(t, "https://model.example/v1/answer")
	file := filepath.Join(e.dir, "bundle.json")
	code, out, errb := e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess", "--json", "-o", file, proj)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	written, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(written, out) {
		t.Errorf("-o file differs from stdout (%d and %d bytes)", len(written), len(out))
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("-o file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	body, ok := bytes.CutSuffix(out, []byte("\n"))
	if !ok || bytes.HasSuffix(body, []byte("\n")) || !bytes.HasPrefix(body, []byte(`{"export":`)) {
		t.Fatalf("bundle framing: %.40q … %.40q", out, out[max(0, len(out)-40):])
	}
	canonical, err := canon.Canonicalize(body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(canonical, body) {
		t.Fatalf("bundle is not canonical:\n%s\n%s", body, canonical)
	}
}

// TestPluginBudget: a plugin that has not answered within its budget fails
// the command (exit 1), with no bundle and no seal, instead of hanging it.
// The budget is made too short to answer in.
func TestPluginBudget(t *testing.T) {
	e, proj, plan := cutEnv(t, "https://model.example/v1/answer")
	old := verifyBudget
	verifyBudget = func(int) time.Duration { return time.Nanosecond }
	defer func() { verifyBudget = old }()
	code, out, errb := e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "plugin", "--json", proj)
	if code != ExitError || len(out) != 0 || !bytes.Contains(errb, []byte("verifier plugin: context deadline exceeded")) {
		t.Fatalf("exit %d\n%s\n%s", code, out, errb)
	}
	verifyBudget = old
	if code, _, errb := e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--verifier", "plugin", "--json", proj); code != ExitOK {
		t.Fatalf("with the budget: exit %d: %s", code, errb)
	}
}

// TestVerifyReadsBundleAsWritten: cut verify checks the export and receipts
// as the bundle holds them, not as decoded and re-encoded: white space or an
// escape in the export, or a member added to a receipt, fails the
// verification (exit 4); so does a label_digest that is not the receipts'
// and a lease in the bundle of an irreversible plan.
func TestVerifyReadsBundleAsWritten(t *testing.T) {
	e, proj, plan, good := preparedBundle(t)
	verify := func(doc string) (int, receipts.Verification) {
		t.Helper()
		code, out, _ := e.run(t, "verify", "--vocab", e.vocab, "--plan", plan, "--source", proj, "--verifier", "inprocess",
			"--json", e.write(t, "bundle.json", doc))
		var v receipts.Verification
		decodeStrict(t, out, &v)
		return code, v
	}
	if code, v := verify(good); code != ExitOK {
		t.Fatalf("the untouched bundle: exit %d, failed %v", code, v.Failed())
	}
	if !strings.Contains(good, `{"export":{"parts":`) || !strings.Contains(good, `"receipts":[{`) || !strings.Contains(good, `"lease":null`) {
		t.Fatalf("bundle layout changed: %.200s", good)
	}
	for name, tc := range map[string]struct {
		doc   string
		claim string // a claim that must fail; "" for every claim
	}{
		"space in the export":  {strings.Replace(good, `{"export":{"parts":`, `{"export":{ "parts":`, 1), "export-canonical"},
		"escape in the export": {strings.Replace(good, `{"export":{"parts":`, `{"export":{"\u0070arts":`, 1), "export-canonical"},
		"member in a receipt":  {strings.Replace(good, `"receipts":[{`, `"receipts":[{"export_digest":"",`, 1), "receipt-chain"},
		// The bundle's own label_digest comes before its receipts'.
		"another label digest": {strings.Replace(good, regexp.MustCompile(`"label_digest":"hmac-sha256:[0-9a-f]{64}"`).FindString(good),
			`"label_digest":"hmac-sha256:`+strings.Repeat("0", 64)+`"`, 1), ""},
		"lease, irreversible": {strings.Replace(good, `"lease":null`, `"lease":"lease:x"`, 1), ""},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.doc == good {
				t.Fatal("the tampering changed nothing")
			}
			code, v := verify(tc.doc)
			if code != ExitVerifyNo || v.Verdict != "fail" {
				t.Fatalf("exit %d, verdict %s", code, v.Verdict)
			}
			if tc.claim == "" && len(v.Failed()) != len(v.Claims) || tc.claim != "" && !contains(v.Failed(), tc.claim) {
				t.Fatalf("failed %v, want %q", v.Failed(), tc.claim)
			}
		})
	}
}

// TestSendUseCeilingAcrossProcesses: three cut send processes of one
// --max-uses 1 plan, run at once against one journal, admit once in
// total: one sends (exit 0), the others are refused LIMIT_EXCEEDED (exit
// 3), and the target receives one request.
func TestSendUseCeilingAcrossProcesses(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ranking":[]}`)
	}))
	defer srv.Close()
	e, proj, plan := cutEnv(t, srv.URL+"/v1/answer")
	codes := make([]int, 3)
	outs := make([][]byte, 3)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Go(func() {
			cmd := exec.Command(exe, "send", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess", "--json",
				"--quarantine", filepath.Join(e.dir, fmt.Sprintf("q%d.json", i)), proj)
			cmd.Env = append(os.Environ(), asEnv+"=cut", "HOME="+e.dir,
				"PRIVACYCUT_EVIDENCE_KEY="+filepath.Join(e.dir, "evidence.key"), "PRIVACYCUT_JOURNAL="+e.journal)
			outs[i], _ = cmd.Output()
			codes[i] = cmd.ProcessState.ExitCode()
		})
	}
	wg.Wait()
	sent, refused := 0, 0
	for i, c := range codes {
		switch {
		case c == ExitOK:
			sent++
		case c == ExitRefused && bytes.Contains(outs[i], []byte(`"code":"LIMIT_EXCEEDED"`)):
			refused++
		default:
			t.Errorf("process %d: exit %d\n%s", i, c, outs[i])
		}
	}
	if sent != 1 || refused != 2 || hits.Load() != 1 {
		t.Fatalf("%d sent, %d refused, %d requests received; want 1, 2, 1", sent, refused, hits.Load())
	}
}
