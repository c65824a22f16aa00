//go:build !unix

package route

import "io/fs"

// openFlags, nonblockFlag: this platform has no O_NOFOLLOW or FIFOs in
// package syscall; the Lstat before the open and the check of the opened
// file (regular, the same file) stay.
const (
	openFlags    = 0
	nonblockFlag = 0
)

func isSymlinkOpenError(error) bool { return false }

// ownedBy reports true: this platform has no uid owner in fs.FileInfo.
func ownedBy(fs.FileInfo, bool) bool { return true }
