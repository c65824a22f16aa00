//go:build !linux

package plugin

import (
	"os"
	"os/exec"
)

// dieWithParent does nothing where the kernel offers no parent-death
// signal: there a plugin outlives a host that is killed (not one that
// exits: Close and the failed-start paths kill it).
func dieWithParent(cmd *exec.Cmd) {}

// selfExecutable is the file the plugin is started from.
func selfExecutable() (string, error) { return os.Executable() }
