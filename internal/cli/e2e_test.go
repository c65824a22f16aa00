package cli

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privacycut/privacycut/internal/standin"
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
		binaries.cut = filepath.Join(binaries.dir, "cut")
		binaries.vault = filepath.Join(binaries.dir, "vaultd")
		for pkg, out := range map[string]string{"../../cmd/cut": binaries.cut, "../../cmd/vaultd": binaries.vault} {
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
// reversible round trip with an embedded vault and every adversarial answer
// refused for its reason.
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
	for _, want := range []string{"profile accepted", "verification (verifier/1, plugin): pass", "LEASE_NOT_ACTIVE",
		"TOKEN_NOT_ISSUED at $.findings[0].owner_module", "TOKEN_WRONG_PATH at $.findings[0].action", "7 of 7 checks behaved as expected"} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
}

// vaultdProc is a running vaultd.
type vaultdProc struct {
	cmd  *exec.Cmd
	sock string
	log  bytes.Buffer
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
	schema, _ := filepath.Abs("../../examples/schema.json")
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
	q := filepath.Join(dir, "answer.json")
	code, out, errb := run("send", "--vocab", vocab, "--plan", plan, "--schema", schema, "--quarantine", q, "--json", proj)
	if code != 0 {
		t.Fatalf("send: %d\n%s\n%s", code, out, errb)
	}
	var res struct {
		Decision   receipts.EgressDecision `json:"decision"`
		Lease      *string                 `json:"lease"`
		Rehydrated *struct {
			Result  json.RawMessage             `json:"result"`
			Receipt receipts.RehydrationReceipt `json:"receipt"`
			State   string                      `json:"state"`
		} `json:"rehydrated"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Rehydrated == nil || res.Lease == nil {
		t.Fatalf("send output: %v\n%s", err, out)
	}
	if !bytes.Contains(res.Rehydrated.Result, []byte(`"owner_module":"`+canary+`"`)) || res.Rehydrated.State != "CONSUMED" {
		t.Fatalf("rehydrated %s (%s)", res.Rehydrated.Result, res.Rehydrated.State)
	}
	// Only the rehydrated answer may hold the canary: not the quarantined
	// answer, not the receipt, not stderr.
	ans, _ := os.ReadFile(q)
	rb, _ := json.Marshal(res.Rehydrated.Receipt)
	for name, b := range map[string][]byte{"quarantine": ans, "receipt": rb, "stderr": errb, "decision": []byte(res.Decision.Schema + res.Decision.BodyDigest)} {
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
}
