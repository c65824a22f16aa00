package rpc

import (
	"context"
	"errors"
	"net"
	"strconv"

	"github.com/privacycut/privacycut/vault/vaultapi"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// PeerInfo is the AuthInfo of a connection: the peer's credentials as the
// kernel reported them with SO_PEERCRED when the connection was accepted.
type PeerInfo struct {
	credentials.CommonAuthInfo
	UID, GID uint32
	PID      int32
}

// AuthType names the mechanism.
func (PeerInfo) AuthType() string { return "peercred" }

// Principal is the principal string the vault records: "uid:<n>".
func (p PeerInfo) Principal() string { return "uid:" + strconv.FormatUint(uint64(p.UID), 10) }

// errNotUnix: the transport is not a unix socket, so it has no peer
// credentials.
var errNotUnix = errors.New("rpc: connection is not a unix socket")

// PeerCred reads SO_PEERCRED of a unix connection.
func PeerCred(conn net.Conn) (PeerInfo, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return PeerInfo{}, errNotUnix
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return PeerInfo{}, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return PeerInfo{}, err
	}
	if cerr != nil {
		return PeerInfo{}, cerr
	}
	return PeerInfo{
		CommonAuthInfo: credentials.CommonAuthInfo{SecurityLevel: credentials.NoSecurity},
		UID:            cred.Uid, GID: cred.Gid, PID: cred.Pid,
	}, nil
}

// Creds is the transport credential of both ends. On the server it
// reads every new connection's SO_PEERCRED during the handshake, before
// gRPC reads a single frame, and refuses a uid that is not allowed: such a
// connection is closed and no handler ever runs for it. On the client it
// refuses a server whose uid it does not trust, and records the server's
// credentials. It adds no encryption: the socket is local and its
// directory is 0700.
type Creds struct {
	Allow    func(uid uint32) bool // the server's allow-list; nil on the client
	OnReject func(uid uint32)      // called for a refused peer; may be nil
	Trust    func(uid uint32) bool // the client's check of the server; nil on the server
}

func (c *Creds) ServerHandshake(conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	info, err := PeerCred(conn)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if c.Allow == nil || !c.Allow(info.UID) {
		if c.OnReject != nil {
			c.OnReject(info.UID)
		}
		conn.Close()
		return nil, nil, vaultapi.ErrPeerRejected
	}
	return conn, info, nil
}

func (c *Creds) ClientHandshake(_ context.Context, _ string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	info, err := PeerCred(conn)
	if err != nil {
		conn.Close()
		return nil, nil, err
	}
	if c.Trust == nil || !c.Trust(info.UID) {
		conn.Close()
		return nil, nil, vaultapi.ErrServerUntrusted
	}
	return conn, info, nil
}

func (c *Creds) Info() credentials.ProtocolInfo {
	return credentials.ProtocolInfo{SecurityProtocol: "peercred"}
}

func (c *Creds) Clone() credentials.TransportCredentials {
	cp := *c
	return &cp
}

func (c *Creds) OverrideServerName(string) error { return nil }

// PeerOf returns the authenticated peer of a call.
func PeerOf(ctx context.Context) (PeerInfo, bool) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return PeerInfo{}, false
	}
	info, ok := p.AuthInfo.(PeerInfo)
	return info, ok
}
