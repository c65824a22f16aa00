//go:build !linux

package verifier

import "os/exec"

// dieWithParent does nothing where the kernel offers no parent-death
// signal: there a plugin outlives a host that is killed (not one that
// exits: Close and the failed-start paths kill it).
func dieWithParent(cmd *exec.Cmd) {}
