//go:build !unix

package receipts

import "io/fs"

// keyOpenFlags: this platform has no O_NOFOLLOW or FIFOs in package
// syscall; the Lstat before the open and the check of the opened file
// (regular, the same file) stay.
const keyOpenFlags = 0

func isSymlinkOpenError(error) bool { return false }

// ownedByEffectiveUser reports true: this platform has no uid owner in
// fs.FileInfo, and its permissions are not Unix modes either.
func ownedByEffectiveUser(fs.FileInfo) bool { return true }
