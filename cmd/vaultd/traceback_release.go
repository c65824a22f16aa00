//go:build !diagdump

package main

import (
	"os"
	"syscall"
)

// tracebackEnv is the value a release vaultd runs under when the
// environment leaves GOTRACEBACK unset.
const tracebackEnv = "none"

// lowerTraceback re-executes vaultd with GOTRACEBACK=none when the
// environment does not set GOTRACEBACK. The runtime reads the variable
// once, at start-up, and debug.SetTraceback cannot go below it (unset
// means "single"), so only a fresh image under the variable lowers the
// level: a fatal runtime error (a fault, an unrecoverable panic) then
// prints its one-line cause and no goroutine's stack. The profile sees the
// variable as it is (GOTRACEBACK=none, accepted). A value the operator set
// is kept as it is; one above single fails the profile, as before. The
// image is /proc/self/exe, the one running, not a path that an upgrade
// could have replaced. It returns only when it did not re-execute (the
// variable is set, or exec failed: vaultd then runs at "single").
func lowerTraceback() error {
	if _, set := os.LookupEnv("GOTRACEBACK"); set {
		return nil
	}
	env := append(os.Environ(), "GOTRACEBACK="+tracebackEnv)
	return syscall.Exec("/proc/self/exe", os.Args, env)
}
