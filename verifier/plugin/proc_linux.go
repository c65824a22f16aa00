//go:build linux

package plugin

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the plugin (SIGKILL) when the process
// that started it dies, however it dies: a plugin left behind by a killed
// `cut` would otherwise live on with the sealed inputs (source, export,
// evidence key's digests) mapped. Linux delivers the signal when the thread
// that forked exits; Go exits threads only for goroutines that locked one,
// and the host never starts plugins from such a goroutine.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// selfExecutable is the file the plugin is started from and hashed as:
// /proc/self/exe, the image this process runs.
func selfExecutable() (string, error) { return "/proc/self/exe", nil }
