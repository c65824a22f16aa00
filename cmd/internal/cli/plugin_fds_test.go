//go:build linux

package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPluginHoldsNothingReopenable: until the verifier plugin has hardened
// itself, another process of the same uid may open its /proc/<pid>/fd
// entries. What it holds there must give nothing away. cut reads the
// projection from stdin ("-") while its plugin starts; the test looks at
// the plugin then: descriptor 0 is /dev/null, not the pipe the projection
// arrives on, and descriptor 3 (the attachment channel) is a socket, which
// cannot be opened through /proc (before, it was the memfd that would hold
// the inputs, and descriptor 0 was the pipe).
func TestPluginHoldsNothingReopenable(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e, proj, plan := cutEnv(t, "https://model.example/v1/answer")
	data, err := os.ReadFile(proj)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "prepare", "--vocab", e.vocab, "--plan", plan, "--json", "-")
	cmd.Env = append(os.Environ(), asEnv+"=cut", "TMPDIR="+t.TempDir(), "HOME="+e.dir,
		"PRIVACYCUT_EVIDENCE_KEY="+filepath.Join(e.dir, "evidence.key"), "PRIVACYCUT_JOURNAL="+e.journal)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// cut launches its plugin before it reads the projection, and waits
	// for the projection: the plugin is there while stdin is open.
	var plugin int
	for deadline := time.Now().Add(20 * time.Second); plugin == 0; {
		if time.Now().After(deadline) {
			t.Fatal("no plugin process under cut")
		}
		for _, pid := range childPIDs(t, cmd.Process.Pid, false) {
			if args, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); bytes.Contains(args, []byte(pluginArg)) {
				plugin = pid
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	fd := func(n int) string { return "/proc/" + strconv.Itoa(plugin) + "/fd/" + strconv.Itoa(n) }
	if target, err := os.Readlink(fd(0)); err != nil || target != os.DevNull {
		t.Errorf("the plugin's descriptor 0 is %q (%v), want %s", target, err, os.DevNull)
	}
	target, err := os.Readlink(fd(3))
	if err != nil || !strings.HasPrefix(target, "socket:") {
		t.Errorf("the plugin's descriptor 3 is %q (%v), want a socket", target, err)
	}
	if f, err := os.Open(fd(3)); err == nil {
		f.Close()
		t.Errorf("the plugin's descriptor 3 can be opened through /proc")
	} else if !errors.Is(err, syscall.ENXIO) && !errors.Is(err, syscall.EACCES) {
		t.Errorf("opening the plugin's descriptor 3: %v, want ENXIO", err)
	}
	// Once its main runs, the plugin ignores SIGQUIT (before, it dumped
	// every goroutine into the host's log, and died): one sent then changes
	// nothing. (Before main, the runtime's start holds no input.)
	for deadline := time.Now().Add(10 * time.Second); !ignoresSIGQUIT(t, plugin); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the plugin does not ignore SIGQUIT")
		}
	}
	if err := syscall.Kill(plugin, syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	stdin.Write(data)
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("prepare from stdin: %v\n%s\n%s", err, out.Bytes(), errb.Bytes())
	}
	if bytes.Contains(errb.Bytes(), []byte("goroutine ")) {
		t.Fatalf("a goroutine dump:\n%s", errb.Bytes())
	}
	if !bytes.Contains(out.Bytes(), []byte(`"verdict":"pass"`)) {
		t.Fatalf("prepare from stdin:\n%s", out.Bytes())
	}
}

// ignoresSIGQUIT reports whether process pid ignores SIGQUIT (its SigIgn
// mask in /proc/<pid>/status).
func ignoresSIGQUIT(t *testing.T, pid int) bool {
	t.Helper()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if mask, ok := strings.CutPrefix(line, "SigIgn:"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(mask), 16, 64)
			return err == nil && m&(1<<(syscall.SIGQUIT-1)) != 0
		}
	}
	return false
}
