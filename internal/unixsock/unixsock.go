// Package unixsock makes the private unix sockets that vaultd and the
// gateway serve on.
//
// Listen creates the socket's directory 0700 or requires an existing one to
// belong to the process's effective uid with no group or other bits (its
// owner, or anyone who may write it, could replace the socket); it removes a
// socket left by a stopped process, refuses one that answers, and makes the
// new socket 0600 and unlinked on close. Given a group, the directory is
// 0710 and the socket 0660, both of that group: its members may reach the
// socket, none may replace it. Errors name paths, modes and group ids, which
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
// the path; ErrGroup when the process cannot give a path the group (its
// user is not a member).
var (
	ErrInUse = errors.New("something already listens on the socket")
	ErrGroup = errors.New("cannot give the socket the group")
)

// NoGroup is Listen's group argument for a socket of the process's uid alone.
const NoGroup = -1

// Error is a socket path or its directory that Listen refuses.
type Error struct {
	Path   string
	Reason string
	Err    error // ErrInUse, or nil
}

func (e *Error) Error() string { return e.Path + ": " + e.Reason }
func (e *Error) Unwrap() error { return e.Err }

// Listen listens on the unix socket path, as the package doc states; group
// is a gid, or NoGroup.
func Listen(path string, group int) (*net.UnixListener, error) {
	dir := filepath.Dir(path)
	dirMode, sockMode := os.FileMode(0o700), os.FileMode(0o600)
	if group >= 0 {
		dirMode, sockMode = 0o710, 0o660
	}
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		if err := setGroup(dir, group); err != nil {
			return nil, err
		}
		if err := os.Chmod(dir, dirMode); err != nil {
			return nil, err
		}
	case err != nil:
		return nil, err
	case !fi.IsDir():
		return nil, &Error{Path: dir, Reason: "the socket's directory is not a directory"}
	case fi.Mode().Perm()&^dirMode != 0:
		return nil, &Error{Path: dir, Reason: fmt.Sprintf("the socket's directory has mode %#o; want %#o", fi.Mode().Perm(), dirMode)}
	case !OwnedByEUID(fi):
		return nil, &Error{Path: dir, Reason: "the socket's directory is not owned by this process's uid"}
	case group >= 0 && !ownedByGroup(fi, group):
		return nil, &Error{Path: dir, Reason: fmt.Sprintf("the socket's directory is not of group %d", group)}
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
	if err := setGroup(path, group); err != nil {
		l.Close()
		return nil, err
	}
	if err := os.Chmod(path, sockMode); err != nil {
		l.Close()
		return nil, err
	}
	l.SetUnlinkOnClose(true)
	return l, nil
}

// setGroup gives path the group (nothing for NoGroup).
func setGroup(path string, group int) error {
	if group < 0 {
		return nil
	}
	if err := os.Lchown(path, -1, group); err != nil {
		return &Error{Path: path, Reason: fmt.Sprintf("cannot give it group %d (is this process's user a member?)", group), Err: ErrGroup}
	}
	return nil
}

func ownedByGroup(fi os.FileInfo, gid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int64(st.Gid) == int64(gid)
}

// OwnedByEUID reports whether fi belongs to this process's effective uid.
func OwnedByEUID(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int64(st.Uid) == int64(os.Geteuid())
}
