//go:build unix

package receipts

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// keyOpenFlags open a key file without following a symbolic link and
// without waiting for a FIFO's writer.
const keyOpenFlags = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// isSymlinkOpenError reports whether err is how open(2) with O_NOFOLLOW
// refuses a symbolic link: ELOOP, or EMLINK on FreeBSD. (Elsewhere, such as
// NetBSD's EFTYPE, the open still fails, with an error not wrapping
// ErrKeyFile.)
func isSymlinkOpenError(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}

// ownedByEffectiveUser reports whether fi belongs to the effective uid.
func ownedByEffectiveUser(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int64(st.Uid) == int64(os.Geteuid())
}
