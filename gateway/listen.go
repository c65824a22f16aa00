package gateway

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// peerListener serves only peers whose uid (SO_PEERCRED, read from the
// kernel when the connection is accepted) is allowed: any other connection
// is closed before a byte is read from it.
type peerListener struct {
	net.Listener
	allow  []uint32
	refuse func(uid uint32, err error) // told about each refused peer (nil: nothing)
}

// peerConn is an accepted connection of an allowed peer.
type peerConn struct {
	net.Conn
	uid uint32
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		uid, err := peerUID(c)
		if err == nil && slices.Contains(l.allow, uid) {
			return &peerConn{Conn: c, uid: uid}, nil
		}
		c.Close()
		if l.refuse != nil {
			l.refuse(uid, err)
		}
	}
}

// listenUnix listens on path: its directory is created 0700 or must be a
// directory of the gateway's user without group or other bits (its owner
// could replace the socket), a socket left there by a stopped process is
// removed, one that answers refuses the start, and the new socket is 0600.
// With a group (group ≥ 0) the directory is 0710 and the socket 0660, both
// of that group: its members may reach the socket, none may replace it.
func listenUnix(path string, group int) (*net.UnixListener, error) {
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
		return nil, configErr("listen.unix", dir+" is not a directory")
	case fi.Mode().Perm()&^dirMode != 0:
		return nil, configErr("listen.unix", fmt.Sprintf("directory %s has mode %#o; want %#o", dir, fi.Mode().Perm(), dirMode))
	case !ownedByEUID(fi):
		return nil, configErr("listen.unix", "directory "+dir+" is not owned by the gateway's user")
	case group >= 0 && !ownedByGroup(fi, group):
		return nil, configErr("listen.unix", "directory "+dir+" is not of the group listen.group names")
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return nil, configErr("listen.unix", path+" exists and is not a socket")
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, configErr("listen.unix", "something already listens on "+path)
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

// setGroup gives path the group listen.group names (nothing when group <
// 0). The gateway's user must be a member of it.
func setGroup(path string, group int) error {
	if group < 0 {
		return nil
	}
	if err := os.Lchown(path, -1, group); err != nil {
		return &ConfigError{Field: "listen.group", Reason: "cannot give " + path + " that group (is the gateway's user a member?)", Err: errors.Unwrap(err)}
	}
	return nil
}

// listenTCP listens on a loopback address, and checks that the address
// the kernel bound is loopback too.
func listenTCP(addr string) (net.Listener, error) {
	ap, err := loopbackAddr(addr)
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", ap.String())
	if err != nil {
		return nil, err
	}
	if ta, ok := l.Addr().(*net.TCPAddr); !ok || !ta.IP.IsLoopback() {
		l.Close()
		return nil, configErr("listen.tcp", "the bound address is not loopback")
	}
	return l, nil
}

// connKind is the context value naming the listener a request came in on.
type connKind struct{}

const (
	viaUnix = "unix"
	viaTCP  = "tcp"
)

// connContext records, for each connection, whether it came through the
// peer-checked unix listener: only those requests skip the bearer token.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if _, ok := c.(*peerConn); ok {
		return context.WithValue(ctx, connKind{}, viaUnix)
	}
	return context.WithValue(ctx, connKind{}, viaTCP)
}

func via(ctx context.Context) string {
	v, _ := ctx.Value(connKind{}).(string)
	return v
}
