package cli

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/internal/syncbuf"
)

// TestDemoGateway: `cut demo --gateway` makes the demo's round trip through
// a gateway it starts, over the front door, and every check holds.
func TestDemoGateway(t *testing.T) {
	cut, _ := buildBinaries(t)
	keep := t.TempDir()
	cmd := exec.Command(cut, "demo", "--gateway", "--keep")
	cmd.Env = []string{"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"), "TMPDIR=" + keep}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("cut demo --gateway: %v\n%s\n%s", err, out.String(), errb.String())
	}
	s := out.String()
	for _, want := range []string{"profile accepted", "verification pass", "now CONSUMED", "chat.completion chatcmpl-",
		`"owner_module":"git.corp.example/payments/ledger"`, "error code UNCOVERED_TEXT, param messages[4].content",
		"the 429 was redelivered", "3 of 3 checks behaved as expected", "must be deleted by",
		"The summary still holds a token, and that is right"} {
		if !strings.Contains(s, want) {
			t.Errorf("demo output lacks %q:\n%s", want, s)
		}
	}
	checkDemoReport(t, s)
	// The kept configuration serves again under `cut gateway`.
	m := regexp.MustCompile(`files: (\S+)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatal("no files line")
	}
	testGatewayCommand(t, cut, filepath.Join(m[1], "gateway", "gateway.json"))
}

// testGatewayCommand runs `cut gateway --check`, then `cut gateway`: it
// answers /healthz on its socket, and SIGTERM stops it with exit 0.
func testGatewayCommand(t *testing.T, cut, config string) {
	var out, errb bytes.Buffer
	check := exec.Command(cut, "gateway", "--config", config, "--check")
	check.Stdout, check.Stderr = &out, &errb
	if err := check.Run(); err != nil || strings.TrimSpace(out.String()) != "payments-triage" {
		t.Fatalf("cut gateway --check: %v: %q\n%s", err, out.String(), errb.String())
	}
	var log syncbuf.Buffer
	cmd := exec.Command(cut, "gateway", "--config", config)
	cmd.Stderr = &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sock := filepath.Join(filepath.Dir(config), "run", "gateway.sock")
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	var body []byte
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := hc.Get("http://gateway/healthz")
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
	}
	if !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("healthz: %q\n%s", body, log.String())
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("cut gateway after SIGTERM: %v\n%s", err, log.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("cut gateway did not stop\n%s", log.String())
	}
	if !strings.Contains(log.String(), `"msg":"gateway stopped"`) {
		t.Errorf("log:\n%s", log.String())
	}
}
