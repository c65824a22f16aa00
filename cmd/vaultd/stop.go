package main

import (
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/privacycut/privacycut/cmd/internal/vaultdflags"
)

// DefaultStopTimeout bounds a stop: well under systemd's default of 90 s
// between SIGTERM and SIGKILL.
const DefaultStopTimeout = vaultdflags.DefaultStopTimeout

// stopper turns SIGTERM, SIGINT and SIGQUIT into one stop request and
// bounds the stop. The first signal (or a storage failure, Begin) starts
// the stop and its clock; a second signal, or the clock running out, ends
// the process at once with exit status 1, after a log line naming what
// had not closed. Exiting without closing is what a crash does, and the
// vault is built to survive that: every acknowledged write is synced, and
// the next start replays and recovers.
type stopper struct {
	log   *slog.Logger
	bound time.Duration
	sigs  chan os.Signal
	// requested is closed when the stop begins.
	requested chan struct{}
	begin     sync.Once
	phase     atomic.Value // func() string: what is not closed yet
	exit      func(int)    // os.Exit; a test hook
}

func newStopper(log *slog.Logger, bound time.Duration) *stopper {
	s := &stopper{log: log, bound: bound, sigs: make(chan os.Signal, 4), requested: make(chan struct{}), exit: os.Exit}
	s.setPhase(func() string { return "start-up" })
	// SIGQUIT is caught too: the runtime's default action prints every
	// goroutine's stack and arguments (the "all" traceback the profile
	// refuses), and any process of vaultd's uid may send it.
	signal.Notify(s.sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGQUIT)
	go s.watch()
	return s
}

func (s *stopper) setPhase(f func() string) { s.phase.Store(f) }

func (s *stopper) notClosed() string { return s.phase.Load().(func() string)() }

// Begin starts the stop (once) and its clock.
func (s *stopper) Begin(why string) {
	s.begin.Do(func() {
		s.log.Info("vaultd: stopping", "cause", why, "bound", s.bound.String())
		close(s.requested)
		time.AfterFunc(s.bound, func() {
			s.log.Error("vaultd: stop did not finish within its bound; exiting", "bound", s.bound.String(), "not_closed", s.notClosed())
			s.exit(1)
		})
	})
}

func (s *stopper) watch() {
	n := 0
	for sig := range s.sigs {
		n++
		if n == 1 {
			s.Begin(signalName(sig))
			continue
		}
		s.log.Error("vaultd: second signal; exiting at once", "signal", signalName(sig), "not_closed", s.notClosed())
		s.exit(1)
	}
}

// signalName is the signal as the log names it: its description
// ("terminated", "interrupt", "quit").
func signalName(sig os.Signal) string { return "signal " + sig.String() }
