//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package egress

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock(2) on f, released when f is closed, and
// reports whether it holds it. A file system that has no flock (ENOLCK,
// EOPNOTSUPP) leaves f unlocked: the append still happens, but a failed one
// is not truncated, since another process's line may follow it.
func lockFile(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP):
			return false, nil
		default:
			return false, err
		}
	}
}
