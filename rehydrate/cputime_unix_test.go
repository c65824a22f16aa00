//go:build unix

package rehydrate

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user and system, all threads) the test
// process has used, so that benchmarks on a shared machine can report
// throughput per CPU-second as well as per wall-second.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
