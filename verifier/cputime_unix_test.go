//go:build unix

package verifier

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time (user + system) the process has used, so
// that benchmarks can report a figure that does not depend on the load of
// the machine.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
