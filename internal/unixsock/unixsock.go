// Package unixsock makes the private unix sockets that vaultd and the
// gateway serve on.
//
// Listen creates the socket's directory 0700 or requires an existing one to
// belong to the process's effective uid with no group or other bits (its
// owner, or anyone who may write it, could replace the socket); it removes a
// socket left by a stopped process, refuses one that answers, and makes the
// new socket 0600 and unlinked on close. Errors name paths and modes, which
// are configuration, never data.
package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// ErrInUse is wrapped by the error Listen returns when a process answers on
// the path.
var ErrInUse = errors.New("something already listens on the socket")

// Error is a socket path or its directory that Listen refuses.
type Error struct {
	Path   string
	Reason string
	Err    error // ErrInUse, or nil
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// Listen listens on the unix socket path, as the package doc states.
func Listen(path string) (*net.UnixListener, error) {
	dir := filepath.Dir(path)
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, &Error{Path: dir, Reason: "the socket's directory is not a directory"}
	case fi.Mode().Perm()&0o077 != 0:
		return nil, &Error{Path: dir, Reason: fmt.Sprintf("the socket's directory has mode %#o; want 0700", fi.Mode().Perm())}
	case !OwnedByEUID(fi):
		return nil, &Error{Path: dir, Reason: "the socket's directory is not owned by this process's uid"}
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, &Error{Path: path, Reason: "exists and is not a socket"}
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, &Error{Path: path, Reason: ErrInUse.Error(), Err: ErrInUse}
		}
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	l.SetUnlinkOnClose(true)
	return l, nil
}

// OwnedByEUID reports whether fi belongs to this process's effective uid.
func OwnedByEUID(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int64(st.Uid) == int64(os.Geteuid())
}
