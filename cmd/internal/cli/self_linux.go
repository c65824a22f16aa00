//go:build linux

package cli

import (
	"os"

	"golang.org/x/sys/unix"
)

// privateStdin moves the process's standard input to a new descriptor that
// no child inherits (close-on-exec) and puts /dev/null on descriptor 0, and
// returns the input. cut reads a projection from it with "-"; the verifier
// plugin, which go-plugin starts with the parent's descriptor 0, then
// inherits /dev/null: until the plugin has hardened itself, any process of
// the same uid could open /proc/<plugin>/fd/0 and read the input from the
// pipe. On failure the input stays where it is and is returned as is.
func privateStdin() *os.File {
	fd, err := unix.FcntlInt(0, unix.F_DUPFD_CLOEXEC, 3)
	if err != nil {
		return os.Stdin
	}
	null, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(fd)
		return os.Stdin
	}
	defer unix.Close(null)
	if err := unix.Dup3(null, 0, 0); err != nil {
		unix.Close(fd)
		return os.Stdin
	}
	return os.NewFile(uintptr(fd), "/dev/stdin")
}

// selfExecutable is the file the verifier plugin is started from and
// hashed as: /proc/self/exe, the image this process runs. Neither argv[0]
// (whoever runs cut sets it) nor a path (which an upgrade may replace
// between the hash and the exec) names it as surely.
func selfExecutable() (string, error) { return "/proc/self/exe", nil }
