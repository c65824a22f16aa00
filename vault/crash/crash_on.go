//go:build crashpoints

package crash

import (
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Enabled reports whether this build has crash points.
const Enabled = true

// envPoint arms one point; envFallback forces the mlock arena (test P2).
const (
	envPoint    = "VAULTD_CRASHPOINT"
	envFallback = "VAULTD_TEST_ARENA_FALLBACK"
	envClock    = "VAULTD_TEST_CLOCK_OFFSET"
)

var (
	armed     string
	armedPass int64
	panicMode bool
	passes    atomic.Int64
)

func init() {
	v := os.Getenv(envPoint)
	if v == "" {
		return
	}
	parts := strings.Split(v, ":")
	if len(parts) < 2 || len(parts) > 3 || (len(parts) == 3 && parts[2] != "panic") {
		return
	}
	n, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil || n < 1 {
		return
	}
	armed, armedPass, panicMode = parts[0], n, len(parts) == 3
}

// At kills the process (SIGKILL, or a panic in panic mode) at the armed
// pass of the armed point.
func At(name string) {
	if armed == "" || name != armed {
		return
	}
	if passes.Add(1) != armedPass {
		return
	}
	if panicMode {
		panic("crash: armed panic point " + name)
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // SIGKILL cannot be caught; never return into the next step
}

// ForceArenaFallback reports whether VAULTD_TEST_ARENA_FALLBACK=1 asks for
// the mlock arena even where memfd_secret exists.
func ForceArenaFallback() bool { return os.Getenv(envFallback) == "1" }

// ClockOffset is VAULTD_TEST_CLOCK_OFFSET (a time.Duration, e.g. "2h" or
// "-3h"): the daemon's wall clock is shifted by it, so that expiry across a
// restart and a clock set back can be tested without waiting.
func ClockOffset() time.Duration {
	d, err := time.ParseDuration(os.Getenv(envClock))
	if err != nil {
		return 0
	}
	return d
}
