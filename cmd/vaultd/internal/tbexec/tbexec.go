// Package tbexec re-executes vaultd under GOTRACEBACK=none, from its
// package initialisation, before the heavier packages of the binary (gRPC,
// protobuf, Badger) run theirs.
//
// The Go runtime reads GOTRACEBACK once, when the process starts, and
// runtime/debug.SetTraceback cannot go below it: unset reads as "single".
// Only a fresh image started with the variable set lowers the level. The
// package imports nothing but syscall, so that package initialisation,
// which goes in import-path order among the packages whose imports are
// ready, reaches it early: most of the binary's start-up work is not
// done twice.
//
// Importing the package arms it; a build with the diagdump tag, whose point
// is the runtime's full crash output, has it do nothing.
package tbexec

import "syscall"

// Level is the GOTRACEBACK value set for the re-executed image.
const Level = "none"

// Err is why the re-execution did not happen when it should have (the
// image then runs at "single"); nil when it happened, or was not needed.
var Err error

func init() {
	if !armed {
		return
	}
	if _, set := syscall.Getenv("GOTRACEBACK"); set {
		return
	}
	argv, err := cmdline()
	if err != nil {
		Err = err
		return
	}
	env := append(syscall.Environ(), "GOTRACEBACK="+Level)
	// /proc/self/exe is the image running, not a path an upgrade may
	// have replaced since.
	Err = syscall.Exec("/proc/self/exe", argv, env)
}

// cmdline reads the process's arguments from /proc/self/cmdline (os.Args
// is not set yet while packages initialise).
func cmdline() ([]string, error) {
	fd, err := syscall.Open("/proc/self/cmdline", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	var buf []byte
	chunk := make([]byte, 4096)
	for {
		n, err := syscall.Read(fd, chunk)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break
		}
		buf = append(buf, chunk[:n]...)
		if len(buf) > 1<<20 {
			return nil, syscall.E2BIG
		}
	}
	return split(buf), nil
}

// split cuts a NUL-terminated argument list.
func split(b []byte) []string {
	var out []string
	start := 0
	for i, c := range b {
		if c == 0 {
			out = append(out, string(b[start:i]))
			start = i + 1
		}
	}
	if start < len(b) {
		out = append(out, string(b[start:]))
	}
	return out
}
