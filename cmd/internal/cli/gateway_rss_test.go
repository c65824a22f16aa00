package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/internal/gen"
)

// maxGatewayRSS bounds the resident memory of a running gateway process.
const maxGatewayRSS = 64 << 20

// vmRSS is the VmRSS of process pid, in bytes.
func vmRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", pid)
}

// children are the pids of pid's child processes (its verifier plugins).
func children(pid int) []int {
	var out []int
	tasks, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	for _, task := range tasks {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/children")
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out
}

// TestGatewayRSS: a running `cut gateway` (the cut binary, one route, two warm verifier
// plugins) holds at most 64 MiB resident after start-up and after 200
// requests of a 500-finding report from 16 concurrent clients. The
// plugins' resident memory is logged beside it.
func TestGatewayRSS(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("gateway RSS: needs /proc/PID/status (Linux procfs)")
	}
	// The cut binary itself, built without the race detector (which
	// multiplies a process's memory) whatever this test binary is.
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("gateway RSS: needs the go command to build cut: %v", err)
	}
	exe := filepath.Join(t.TempDir(), "cut")
	build := exec.Command(gobin, "build", "-o", exe, "./cmd/cut")
	build.Dir = filepath.Join("..", "..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/cut: %v\n%s", err, out)
	}
	gwp := startGatewayProc(t, t.TempDir(), exe, gatewayProcOptions{plugins: 2})
	defer gwp.stop()
	rss := func(when string) int64 {
		t.Helper()
		n, err := vmRSS(gwp.pid)
		if err != nil {
			t.Fatal(err)
		}
		var plugins []string
		for _, c := range children(gwp.pid) {
			if m, err := vmRSS(c); err == nil {
				plugins = append(plugins, fmt.Sprintf("%.1f MiB", float64(m)/(1<<20)))
			}
		}
		t.Logf("gateway VmRSS %s: %.1f MiB (verifier plugins: %s)", when, float64(n)/(1<<20), strings.Join(plugins, ", "))
		if n > maxGatewayRSS {
			t.Errorf("gateway VmRSS %s: %d bytes, over %d", when, n, maxGatewayRSS)
		}
		return n
	}
	rss("after start-up")

	v, err := gen.FromVocabulary(examples.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	doc := v.Report(500, 1)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", gwp.sock)
	}}}
	const requests, clients = 200, 16
	var next, ok atomic.Int64
	var wg sync.WaitGroup
	var failure atomic.Value
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > requests {
					return
				}
				body := bytes.ReplaceAll(doc, []byte(`"key":"part/`), []byte(`"key":"r`+strconv.FormatInt(i, 10)+`/part/`))
				resp, err := client.Post("http://gateway/v1/routes/triage/cut", "application/json", bytes.NewReader(body))
				if err != nil {
					failure.CompareAndSwap(nil, err.Error())
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failure.CompareAndSwap(nil, fmt.Sprintf("HTTP %d: %.300s", resp.StatusCode, b))
					return
				}
				ok.Add(1)
			}
		}()
	}
	wg.Wait()
	if f, _ := failure.Load().(string); f != "" {
		t.Fatalf("a request failed: %s\n%s", f, gwp.log())
	}
	if ok.Load() != requests || len(gwp.provider.Requests()) != requests {
		t.Fatalf("%d requests answered, %d reached the stand-in; want %d", ok.Load(), len(gwp.provider.Requests()), requests)
	}
	rss("after 200 requests of 500 findings at 16 clients")
}
