package gateway

import (
	"context"
	"errors"
	"net"
	"slices"

	"github.com/privacycut/privacycut/internal/unixsock"
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

// listenUnix listens on path, of the group listen.group names when group ≥ 0
// (internal/unixsock states how the socket and its directory are made and
// checked). A group the gateway's user cannot give is a listen.group
// configuration error, any other refusal a listen.unix one.
func listenUnix(path string, group int) (*net.UnixListener, error) {
	l, err := unixsock.Listen(path, group)
	var e *unixsock.Error
	switch {
	case !errors.As(err, &e):
		return l, err
	case errors.Is(err, unixsock.ErrGroup):
		return nil, configErr("listen.group", e.Error())
	default:
		return nil, configErr("listen.unix", e.Error())
	}
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
