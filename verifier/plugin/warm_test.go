package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/privacycut/privacycut/internal/syncbuf"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
)

func startWarm(t *testing.T, log *syncbuf.Buffer) *Warm {
	t.Helper()
	exe := selfExe(t)
	logger := hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Warn, Output: log})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := StartWarm(ctx, exe, []string{Arg}, nil, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// TestWarmServesMany: one warm plugin verifies a sequence of different
// requests, each as the in-process verifier does, each with its inputs in
// an attachment of its own where attachments are supported; concurrent
// callers are served one at a time (run under -race).
func TestWarmServesMany(t *testing.T) {
	var log syncbuf.Buffer
	w := startWarm(t, &log)
	if got := w.c.checker.(*grpcClient).attached; got != attachSupported {
		t.Fatalf("attached = %v, want %v", got, attachSupported)
	}
	var reqs []verifier.Request
	for _, v := range loadVectors(t) {
		reqs = append(reqs, vectorRequest(t, v))
	}
	if len(reqs) < 3 {
		t.Fatalf("%d vectors", len(reqs))
	}
	for round := range 2 {
		for i, req := range reqs {
			got, err := w.Verify(context.Background(), req)
			if err != nil {
				t.Fatalf("round %d request %d: %v", round, i, err)
			}
			if d := cmp.Diff(verifier.Verify(req), got); d != "" {
				t.Fatalf("round %d request %d: warm plugin and in process differ (-in process +warm):\n%s", round, i, d)
			}
		}
	}
	// Every input reaches the plugin, the wire body and the output schema
	// too: a request whose wire body is not the rendered one gets the same
	// verdict as in process.
	wired := reqs[0]
	wired.Wire, wired.OutputSchema = []byte(`{"model":"m","messages":[]}`), []byte(`{"type":"object"}`)
	got, err := w.Verify(context.Background(), wired)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(verifier.Verify(wired), got); d != "" {
		t.Fatalf("a request with a wire body: warm plugin and in process differ (-in process +warm):\n%s", d)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			req := reqs[g%len(reqs)]
			got, err := w.Verify(context.Background(), req)
			if err != nil {
				errs <- err
				return
			}
			if got.Verdict != verifier.Verify(req).Verdict {
				errs <- errors.New("verdict differs from the in-process one")
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if !w.Usable() {
		t.Fatal("a plugin that answered every call is not usable")
	}
	v, err := w.Check(context.Background(), reqs[0])
	if err != nil || v.Verification().Verdict != verifier.Verify(reqs[0]).Verdict {
		t.Fatalf("Check: %v, %v", v.Verification().Verdict, err)
	}
}

// TestWarmKeepsVocabulary: a request whose vocabulary is the bytes the
// plugin last received names the kept one instead of carrying it, and gets
// the in-process verdict; a vocabulary changed in place is sent in full and
// verified as changed, and the original is sent in full again after it.
func TestWarmKeepsVocabulary(t *testing.T) {
	var log syncbuf.Buffer
	w := startWarm(t, &log)
	var req verifier.Request
	for _, v := range loadVectors(t) {
		if v.Pass {
			req = vectorRequest(t, v)
			break
		}
	}
	if len(req.Vocabulary) == 0 {
		t.Fatal("no passing vector with a vocabulary")
	}
	call := func(step string, wantKept bool) {
		t.Helper()
		before := w.keptCalls
		got, err := w.Verify(context.Background(), req)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if kept := w.keptCalls > before; kept != wantKept {
			t.Fatalf("%s: vocabulary kept %v, want %v", step, kept, wantKept)
		}
		if d := cmp.Diff(verifier.Verify(req), got); d != "" {
			t.Fatalf("%s: warm plugin and in process differ (-in process +warm):\n%s", step, d)
		}
	}
	call("first request", false)
	call("same vocabulary", true)
	call("same vocabulary again", true)

	i := bytes.LastIndexAny(req.Vocabulary, "abcdefghijklmnopqrstuvwxyz")
	orig := req.Vocabulary[i]
	req.Vocabulary[i] = 'a' + (orig-'a'+1)%26
	if verifier.Verify(req).Verdict == receipts.VerdictPass {
		t.Fatal("the changed vocabulary still verifies: the test proves nothing")
	}
	call("vocabulary changed in place", false)
	call("the changed vocabulary again", true)
	req.Vocabulary[i] = orig
	call("vocabulary restored", false)
	call("restored vocabulary again", true)
}

// TestWarmBreaks: a call that fails — the process killed, the call
// canceled — leaves the plugin broken: every later call is ErrBroken and
// Usable is false; Close of a broken plugin returns.
func TestWarmBreaks(t *testing.T) {
	req := vectorRequest(t, loadVectors(t)[0])
	for name, breakIt := range map[string]func(*testing.T, *Warm) error{
		"killed": func(t *testing.T, w *Warm) error {
			pid := w.Pid()
			if pid <= 0 {
				t.Fatal("no pid")
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); !w.c.Exited() && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			_, err := w.Verify(context.Background(), req)
			return err
		},
		"canceled": func(t *testing.T, w *Warm) error {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err := w.Verify(ctx, req)
			return err
		},
		"closed": func(t *testing.T, w *Warm) error {
			w.Close()
			_, err := w.Verify(context.Background(), req)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			var log syncbuf.Buffer
			w := startWarm(t, &log)
			if _, err := w.Verify(context.Background(), req); err != nil {
				t.Fatalf("first call: %v", err)
			}
			if err := breakIt(t, w); err == nil {
				t.Fatal("the call that should fail succeeded")
			}
			if w.Usable() {
				t.Error("Usable after a failed call")
			}
			if _, err := w.Verify(context.Background(), req); !errors.Is(err, ErrBroken) {
				t.Errorf("next call = %v, want ErrBroken", err)
			}
			if _, err := w.Check(context.Background(), req); !errors.Is(err, ErrBroken) {
				t.Errorf("Check = %v, want ErrBroken", err)
			}
			w.Close()
		})
	}
}

// TestWarmStartFailure: a plugin that cannot start is ErrStart.
func TestWarmStartFailure(t *testing.T) {
	if _, err := StartWarm(context.Background(), "/nonexistent/verifier-plugin", nil, nil, nil); !errors.Is(err, ErrStart) {
		t.Fatalf("err = %v", err)
	}
}

// TestWarmGOGC: a warm plugin runs with GOGC=warmGOGC, unless its
// environment sets GOGC.
func TestWarmGOGC(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/<pid>/environ")
	}
	environ := func(w *Warm) string {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", w.Pid()))
		if err != nil {
			t.Skipf("the plugin's environment is not readable here: %v", err)
		}
		return "\x00" + string(b)
	}
	var log syncbuf.Buffer
	if env := environ(startWarm(t, &log)); !strings.Contains(env, "\x00GOGC="+strconv.Itoa(warmGOGC)+"\x00") {
		t.Errorf("a warm plugin's environment holds no GOGC=%d", warmGOGC)
	}
	w, err := StartWarm(context.Background(), selfExe(t), []string{Arg}, []string{"GOGC=50"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if env := environ(w); !strings.Contains(env, "\x00GOGC=50\x00") || strings.Contains(env, "GOGC="+strconv.Itoa(warmGOGC)) {
		t.Errorf("the caller's GOGC was not kept alone: %q", strings.ReplaceAll(env, "\x00", " "))
	}
}
