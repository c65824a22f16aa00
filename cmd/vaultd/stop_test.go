package main

import (
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/internal/syncbuf"
)

// testStopper is a stopper whose exit is recorded, not taken.
func testStopper(t *testing.T, bound time.Duration) (*stopper, *syncbuf.Buffer, chan int) {
	t.Helper()
	var logs syncbuf.Buffer
	exits := make(chan int, 4)
	s := &stopper{log: slog.New(slog.NewJSONHandler(&logs, nil)), bound: bound, sigs: make(chan os.Signal, 4),
		requested: make(chan struct{}), exit: func(code int) { exits <- code }}
	s.setPhase(func() string { return "vault: store" })
	go s.watch()
	t.Cleanup(func() { close(s.sigs) })
	return s, &logs, exits
}

// TestSecondSignalExitsAtOnce: the first signal requests the stop; a
// second one exits 1 at once, naming what had not closed.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	for _, second := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		s, logs, exits := testStopper(t, time.Hour)
		s.sigs <- syscall.SIGTERM
		select {
		case <-s.requested:
		case <-time.After(5 * time.Second):
			t.Fatal("the first signal did not request the stop")
		}
		select {
		case code := <-exits:
			t.Fatalf("the first signal exited (%d)", code)
		case <-time.After(50 * time.Millisecond):
		}
		s.sigs <- second
		select {
		case code := <-exits:
			if code != 1 {
				t.Errorf("second %v: exit %d, want 1", second, code)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("second %v did not exit", second)
		}
		if l := logs.String(); !strings.Contains(l, "second signal; exiting at once") || !strings.Contains(l, `"not_closed":"vault: store"`) {
			t.Errorf("second %v: log %s", second, l)
		}
	}
}

// TestStopBound: a stop that outlives its bound exits 1, naming the step
// it was in; Begin twice starts one clock.
func TestStopBound(t *testing.T) {
	s, logs, exits := testStopper(t, 100*time.Millisecond)
	start := time.Now()
	s.Begin("test")
	s.Begin("again")
	select {
	case code := <-exits:
		if code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		if took := time.Since(start); took < 100*time.Millisecond || took > 5*time.Second {
			t.Errorf("the bound of 100ms fired after %v", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the bound did not fire")
	}
	select {
	case <-exits:
		t.Error("a second clock fired")
	case <-time.After(300 * time.Millisecond):
	}
	if l := logs.String(); !strings.Contains(l, "stop did not finish within its bound") || !strings.Contains(l, `"not_closed":"vault: store"`) ||
		strings.Count(l, "vaultd: stopping") != 1 {
		t.Errorf("log %s", l)
	}
}

// TestStopperCatchesSignals: newStopper catches SIGTERM, so that the
// runtime's default action (death by the signal) never applies.
func TestStopperCatchesSignals(t *testing.T) {
	var logs syncbuf.Buffer
	s := newStopper(slog.New(slog.NewJSONHandler(&logs, nil)), time.Hour)
	s.exit = func(int) {}
	defer signal.Stop(s.sigs)
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.requested:
	case <-time.After(5 * time.Second):
		t.Fatal("SIGTERM did not request the stop")
	}
	if !strings.Contains(logs.String(), `"cause":"signal terminated"`) {
		t.Errorf("log %s", logs.String())
	}
}
