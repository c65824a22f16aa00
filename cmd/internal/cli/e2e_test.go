package cli

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/internal/syncbuf"
	"github.com/privacycut/privacycut/receipts"
)

var binaries struct {
	once       sync.Once
	dir        string
	cut, vault string
	err        error
}

// buildBinaries builds cmd/cut and cmd/vaultd once for the end-to-end tests:
// these run the real programs, as a user would.
func buildBinaries(t *testing.T) (cut, vaultd string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	binaries.once.Do(func() {
		binaries.dir, binaries.err = os.MkdirTemp("", "privacycut-e2e-bin-")
		if binaries.err != nil {
			return
		}
		os.Chmod(binaries.dir, 0o755) // other uids run them too
		binaries.cut = filepath.Join(binaries.dir, "cut")
		binaries.vault = filepath.Join(binaries.dir, "vaultd")
		for pkg, out := range map[string]string{"../../../cmd/cut": binaries.cut, "../../../cmd/vaultd": binaries.vault} {
			if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
				binaries.err = &buildError{string(b)}
				return
			}
		}
	})
	if binaries.err != nil {
		t.Fatal(binaries.err)
	}
	return binaries.cut, binaries.vault
}

type buildError struct{ out string }

func (e *buildError) Error() string { return "go build: " + e.out }

// TestDemo: `cut demo`, the README's main job, passes on this machine: a
// reversible round trip with an embedded vault over openai-chat@1, one
// redelivery after a 429, and every adversarial answer refused for its
// reason.
func TestDemo(t *testing.T) {
	cut, _ := buildBinaries(t)
	cmd := exec.Command(cut, "demo")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("cut demo: %v\n%s\n%s", err, out.String(), errb.String())
	}
	s := out.String()
	for _, want := range []string{"profile accepted", "verification (verifier/1, plugin): pass", "wire-match         holds",
		"use 1: HTTP 429 (rate-limited)", "use 2: HTTP 200 (ok)", "LEASE_NOT_ACTIVE",
		"TOKEN_NOT_ISSUED at $.findings[0].owner_module", "TOKEN_WRONG_PATH at $.findings[0].action", "8 of 8 checks behaved as expected",
		"may never leave — refused: its digest is registered local-only\n",
		"The summary still holds a token, and that is right: it is free text the model wrote, not a\n",
		": the rehydrated result of step 5 must be deleted by then"} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
	checkDemoReport(t, s)
}

// checkDemoReport checks that a demo report reads plainly: the local-only
// refusal is not filed under PLAN_MISMATCH, no line names a refusal code
// twice, and the verification claims are listed one per line.
func checkDemoReport(t *testing.T, s string) {
	t.Helper()
	if strings.Contains(s, "PLAN_MISMATCH") {
		t.Errorf("the report files a refusal under PLAN_MISMATCH:\n%s", s)
	}
	code := regexp.MustCompile(`\b[A-Z]+(?:_[A-Z]+)+\b`)
	for _, line := range strings.Split(s, "\n") {
		seen := map[string]bool{}
		for _, c := range code.FindAllString(line, -1) {
			if seen[c] {
				t.Errorf("line names %s twice: %q", c, line)
			}
			seen[c] = true
		}
	}
	claims := 0
	for _, line := range strings.Split(s, "\n") {
		if regexp.MustCompile(`^   [a-z-]+ +(holds|FAILS)$`).MatchString(line) {
			claims++
		}
	}
	if claims < 8 {
		t.Errorf("%d verification claims on lines of their own, want every claim (8 or more):\n%s", claims, s)
	}
}

// vaultdProc is a running vaultd.
type vaultdProc struct {
	cmd  *exec.Cmd
	sock string
	log  syncbuf.Buffer
}

func startVaultd(t *testing.T, vaultd, dir string) *vaultdProc {
	t.Helper()
	v := &vaultdProc{sock: filepath.Join(dir, "run", "vault.sock")}
	v.cmd = exec.Command(vaultd, "--state-dir", filepath.Join(dir, "state"), "--key-dir", filepath.Join(dir, "keys"),
		"--socket", v.sock, "--arena-size", "4194304", "--max-lease", "2h")
	v.cmd.Stdout, v.cmd.Stderr = &v.log, &v.log
	if err := v.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.cmd.Process.Kill(); v.cmd.Wait() })
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(v.sock); err == nil {
			return v
		}
		time.Sleep(25 * time.Millisecond) // waiting for another process to create its socket
	}
	t.Fatalf("vaultd did not start:\n%s", v.log.String())
	return nil
}

// TestReversibleThroughCLI drives a real vaultd process with the cut binary:
// plan a reversible cut, send it with --schema (prepare, seal, admit, POST,
// quarantine, rehydrate), then replay the answer with cut rehydrate (refused
// LEASE_NOT_ACTIVE, exit 3). The canary owner values appear only in the
// rehydrated answer.
func TestReversibleThroughCLI(t *testing.T) {
	cut, vaultd := buildBinaries(t)
	dir := t.TempDir()
	v := startVaultd(t, vaultd, filepath.Join(dir, "vault"))
	model := httptest.NewServer(standin.Handler())
	defer model.Close()

	const canary = "CANARY-e2e-ledger"
	proj := filepath.Join(dir, "p.json")
	os.WriteFile(proj, []byte(projection(
		"finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner.module=\""+canary+"\" owner.team=\""+canary+"-team\"\n")), 0o600)
	vocab := filepath.Join(dir, "vocab.json")
	os.WriteFile(vocab, []byte(testVocab), 0o600)
	schema, _ := filepath.Abs("../../../examples/schema.json")
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "PRIVACYCUT_VAULT=" + v.sock}
	run := func(args ...string) (int, []byte, []byte) {
		cmd := exec.Command(cut, args...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.Bytes(), errb.Bytes()
	}
	plan := filepath.Join(dir, "plan.json")
	if code, _, errb := run("plan", "init", "--vocab", vocab, "--consumer", "model:e2e", "--purpose", "dependency-triage",
		"--target", model.URL+"/v1/honest", "--mode", "reversible", "--schema", schema, "-o", plan, proj); code != 0 {
		t.Fatalf("plan init: %d %s", code, errb)
	}
	// A prepared bundle re-verifies with the vault that issued its tokens
	// (the verifier plugin asks it), and fails token-consistency, saying
	// why, without one.
	bundle := filepath.Join(dir, "bundle.json")
	if code, _, errb := run("prepare", "--vocab", vocab, "--plan", plan, "-o", bundle, "--json", proj); code != 0 {
		t.Fatalf("prepare: %d %s", code, errb)
	}
	if code, out, errb := run("verify", "--vocab", vocab, "--plan", plan, "--source", proj, "--json", bundle); code != 0 {
		t.Fatalf("verify with the vault: %d\n%s\n%s", code, out, errb)
	}
	env[len(env)-1] = "PRIVACYCUT_VAULT="
	if code, out, _ := run("verify", "--vocab", vocab, "--plan", plan, "--source", proj, "--json", bundle); code != 4 ||
		!bytes.Contains(out, []byte(`"name":"token-consistency","ok":false`)) {
		t.Fatalf("verify without a vault: exit %d\n%s", code, out)
	}
	env[len(env)-1] = "PRIVACYCUT_VAULT=" + v.sock
	q := filepath.Join(dir, "answer.json")
	code, out, errb := run("send", "--vocab", vocab, "--plan", plan, "--schema", schema, "--quarantine", q, "--json", proj)
	if code != 0 {
		t.Fatalf("send: %d\n%s\n%s", code, out, errb)
	}
	var res struct {
		Decisions  []receipts.EgressDecision `json:"decisions"`
		Lease      *string                   `json:"lease"`
		Rehydrated *struct {
			Result  json.RawMessage             `json:"result"`
			Receipt receipts.RehydrationReceipt `json:"receipt"`
			State   string                      `json:"state"`
		} `json:"rehydrated"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Rehydrated == nil || res.Lease == nil || len(res.Decisions) != 1 {
		t.Fatalf("send output: %v\n%s", err, out)
	}
	if !bytes.Contains(res.Rehydrated.Result, []byte(`"owner_module":"`+canary+`"`)) || res.Rehydrated.State != "CONSUMED" {
		t.Fatalf("rehydrated %s (%s)", res.Rehydrated.Result, res.Rehydrated.State)
	}
	// Only the rehydrated answer may hold the canary: not the quarantined
	// answer, not the receipt, not stderr.
	ans, _ := os.ReadFile(q)
	rb, _ := json.Marshal(res.Rehydrated.Receipt)
	for name, b := range map[string][]byte{"quarantine": ans, "receipt": rb, "stderr": errb, "decision": []byte(res.Decisions[0].Schema + res.Decisions[0].BodyDigest)} {
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s holds the canary", name)
		}
	}
	// Replay: the same answer again, to the consumed lease.
	code, out, _ = run("rehydrate", "--lease", *res.Lease, "--schema", schema, "--json", q)
	if code != 3 || !bytes.Contains(out, []byte(`"code":"LEASE_NOT_ACTIVE"`)) {
		t.Fatalf("replay: exit %d\n%s", code, out)
	}
	// The vault's view: consumed, key destroyed.
	code, out, _ = run("lease", "show", "--json", *res.Lease)
	if code != 0 || !bytes.Contains(out, []byte(`"CONSUMED"`)) || !bytes.Contains(out, []byte(`"destroyed"`)) {
		t.Fatalf("lease show: exit %d\n%s", code, out)
	}
	if bytes.Contains(v.log.Bytes(), []byte(canary)) {
		t.Fatal("vaultd's log holds the canary")
	}
	// A plan whose remote deadline and return window outlive the vault's
	// longest lease (2h here) is refused before any token is issued.
	long := filepath.Join(dir, "plan-long.json")
	if code, _, errb := run("plan", "init", "--vocab", vocab, "--consumer", "model:e2e", "--purpose", "dependency-triage",
		"--target", model.URL+"/v1/honest", "--mode", "reversible", "--schema", schema, "--remote-deadline", "3h", "-o", long, proj); code != 0 {
		t.Fatalf("plan init: %d %s", code, errb)
	}
	code, out, errb = run("prepare", "--vocab", vocab, "--plan", long, "--json", proj)
	if code != 3 || !bytes.Contains(out, []byte(`"code":"LEASE_DURABILITY_INSUFFICIENT"`)) {
		t.Fatalf("durability: exit %d\n%s\n%s", code, out, errb)
	}
	// Without a vault a reversible cut is an operational error before
	// anything is cut, never a cut another way.
	env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	code, out, errb = run("prepare", "--vocab", vocab, "--plan", plan, "--json", proj)
	if code != 1 || len(out) != 0 || !bytes.Contains(errb, []byte("no vault configured")) {
		t.Fatalf("no vault: exit %d\n%s\n%s", code, out, errb)
	}
}

// TestCutIsUndumpable: at start, cut makes itself undumpable and sets its
// core limit to zero (it holds projections with owner values in memory).
// Checked from outside on a cut process blocked in `send` against a target
// that never answers: run as uid 65534, its /proc files belong to root
// (PR_SET_DUMPABLE 0) and its core limit reads 0 0.
func TestCutIsUndumpable(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run cut as another uid")
	}
	cut, _ := buildBinaries(t)
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		<-hang
	}))
	hits.Store(0)
	defer srv.Close()
	defer close(hang)

	dir, err := os.MkdirTemp("", "privacycut-undumpable-") // t.TempDir's parent is 0700: uid 65534 could not enter it
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o777)
	e := &testEnv{dir: dir, vocab: filepath.Join(dir, "vocab.json")}
	os.WriteFile(e.vocab, []byte(testVocab), 0o644)
	proj := filepath.Join(dir, "p.json")
	os.WriteFile(proj, []byte(projection(okRecord)), 0o644)
	plan := filepath.Join(dir, "plan.json")
	env := []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	pi := exec.Command(cut, "plan", "init", "--vocab", e.vocab, "--consumer", "model:m", "--purpose", "p",
		"--target", srv.URL+"/", "-o", plan, proj)
	pi.Env = env
	if out, err := pi.CombinedOutput(); err != nil {
		t.Fatalf("plan init: %v %s", err, out)
	}
	for _, f := range []string{plan, filepath.Join(dir, ".local")} {
		filepath.Walk(f, func(p string, _ os.FileInfo, _ error) error { return os.Chown(p, 65534, 65534) })
	}
	cmd := exec.Command(cut, "send", "--vocab", e.vocab, "--plan", plan, "--verifier", "inprocess",
		"--quarantine", filepath.Join(dir, "q.json"), proj)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	pid := cmd.Process.Pid
	deadline := time.Now().Add(20 * time.Second)
	for {
		// Wait until the request reaches the target: cut is then past its
		// start-up and blocked in the POST.
		if b, _ := os.ReadFile(filepath.Join("/proc", itoa(pid), "wchan")); len(b) > 0 && hits.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cut did not reach the target:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond) // polling another process's progress
	}
	var st syscall.Stat_t
	if err := syscall.Stat(filepath.Join("/proc", itoa(pid), "status"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid != 0 {
		t.Errorf("/proc/%d/status belongs to uid %d: cut (running as 65534) is dumpable", pid, st.Uid)
	}
	limits, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "limits"))
	_ = e
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`Max core file size\s+0\s+0\s`).Match(limits) {
		t.Errorf("core limit is not 0 0:\n%s", limits)
	}
}

var hits atomic.Int64

func itoa(n int) string { return strconv.Itoa(n) }
