//go:build unix

package route

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openFlags open a key file without following a symbolic link in its last
// component; nonblockFlag opens it without waiting for a FIFO's writer.
const (
	openFlags    = syscall.O_NOFOLLOW
	nonblockFlag = syscall.O_NONBLOCK
)

// isSymlinkOpenError reports whether err is how open(2) with O_NOFOLLOW
// refuses a symbolic link: ELOOP, or EMLINK on FreeBSD.
func isSymlinkOpenError(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}

// ownedBy reports whether fi belongs to the effective uid, or to root when
// rootOK.
func ownedBy(fi fs.FileInfo, rootOK bool) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && (int64(st.Uid) == int64(os.Geteuid()) || rootOK && st.Uid == 0)
}
