//go:build unix

package egress

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// openCredential opens the credential file without following a symbolic
// link or blocking on a FIFO, and checks what ReadCredential documents of
// its kind, mode, owner and size on the open descriptor.
func openCredential(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &CredentialError{Reason: CredNotFound}
	case errors.Is(err, syscall.ELOOP):
		return nil, &CredentialError{Reason: CredSymlink}
	case err != nil:
		return nil, &CredentialError{Reason: CredDenied}
	}
	f := os.NewFile(uintptr(fd), "credential")
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		f.Close()
		return nil, &CredentialError{Reason: CredUnreadable}
	}
	reason := ""
	switch {
	case st.Mode&syscall.S_IFMT != syscall.S_IFREG:
		reason = CredNotRegular
	case st.Mode&0o077 != 0:
		reason = CredMode
	case int(st.Uid) != os.Geteuid():
		reason = CredOwner
	case st.Size > MaxCredentialBytes:
		reason = CredTooLarge
	}
	if reason != "" {
		f.Close()
		return nil, &CredentialError{Reason: reason}
	}
	return f, nil
}
