package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"github.com/privacycut/privacycut/internal/unixsock"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/vault/internal/rpc"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/store"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Options configure New.
type Options struct {
	// AllowUIDs are the uids allowed to connect. Empty means only the uid
	// the server runs as.
	AllowUIDs []uint32
	// Logger receives connection refusals (uids only); nil discards.
	Logger *slog.Logger
}

// Server is vaultd's gRPC server over a unix socket.
type Server struct {
	grpc     *grpc.Server
	allow    []uint32
	log      *slog.Logger
	calls    atomic.Uint64
	rejected atomic.Uint64
}

// New returns a server for v. Every connection's peer uid is read
// with SO_PEERCRED during the transport handshake and checked against the
// allow-list before gRPC reads any frame of it; every call re-checks the
// uid from the connection's AuthInfo before its handler runs.
func New(v *service.Vault, opt Options) *Server {
	s := &Server{allow: slices.Clone(opt.AllowUIDs), log: opt.Logger}
	if len(s.allow) == 0 {
		s.allow = []uint32{uint32(os.Geteuid())}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	creds := &rpc.Creds{Allow: s.allowed, OnReject: func(uid uint32) {
		s.rejected.Add(1)
		s.log.Warn("vaultd: connection refused: peer uid not on the allow-list", "uid", uid)
	}}
	s.grpc = grpc.NewServer(
		grpc.Creds(creds),
		grpc.UnaryInterceptor(s.unary),
		grpc.StreamInterceptor(s.stream),
		grpc.MaxRecvMsgSize(rpc.MaxMessage),
		grpc.MaxSendMsgSize(rpc.MaxMessage),
		grpc.ConnectionTimeout(10*time.Second),
		grpc.ForceServerCodecV2(rpc.Codec),
	)
	vaultpb.RegisterVaultServer(s.grpc, &handler{v: v})
	return s
}

// handler implements the generated service interface. It is unexported so
// that no generated type appears in an exported signature.
type handler struct {
	vaultpb.UnimplementedVaultServer
	v *service.Vault
}

func (s *Server) allowed(uid uint32) bool { return slices.Contains(s.allow, uid) }

// Calls returns how many calls reached a handler.
func (s *Server) Calls() uint64 { return s.calls.Load() }

// Rejected returns how many connections the peer-credential check refused.
func (s *Server) Rejected() uint64 { return s.rejected.Load() }

// authorise re-checks the peer of a call.
func (s *Server) authorise(ctx context.Context) (rpc.PeerInfo, error) {
	p, ok := rpc.PeerOf(ctx)
	if !ok || !s.allowed(p.UID) {
		s.log.Warn("vaultd: call from a peer not on the allow-list refused")
		return rpc.PeerInfo{}, rpc.ToStatus("auth", vaultapi.Fail("auth", vaultapi.ErrPeerRejected))
	}
	s.calls.Add(1)
	return p, nil
}

func (s *Server) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if _, err := s.authorise(ctx); err != nil {
		return nil, err
	}
	return h(ctx, req)
}

func (s *Server) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if _, err := s.authorise(ss.Context()); err != nil {
		return err
	}
	return h(srv, ss)
}

// Serve serves on l until Stop or GracefulStop.
func (s *Server) Serve(l net.Listener) error { return s.grpc.Serve(l) }

// GracefulStop stops accepting connections and waits for running calls.
func (s *Server) GracefulStop() { s.grpc.GracefulStop() }

// Stop closes every connection at once.
func (s *Server) Stop() { s.grpc.Stop() }

// Listen creates the unix socket at path as internal/unixsock does: its
// directory 0700 and vaultd's (an existing one must not grant group or
// other access), a stale socket left by a killed vaultd removed, a live one
// refused, the socket 0600.
func Listen(path string) (net.Listener, error) {
	l, err := unixsock.Listen(path, unixsock.NoGroup)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	return l, nil
}

func principal(ctx context.Context) string {
	p, _ := rpc.PeerOf(ctx)
	return p.Principal()
}

func leaseJSON(l lease.Lease) ([]byte, error) { return json.Marshal(l) }

func infoReply(in vaultapi.Info) (*vaultpb.LeaseReply, error) {
	b, err := leaseJSON(in.Lease)
	if err != nil {
		return nil, err
	}
	return &vaultpb.LeaseReply{LeaseJson: b, Key: string(in.Key)}, nil
}

// Status implements the Status call.
func (s *handler) Status(ctx context.Context, _ *vaultpb.StatusRequest) (*vaultpb.StatusReply, error) {
	st, err := s.v.Status()
	if err != nil {
		return nil, rpc.ToStatus("status", err)
	}
	p, err := json.Marshal(st.Profile)
	if err != nil {
		return nil, rpc.ToStatus("status", err)
	}
	r := &vaultpb.StatusReply{ProfileJson: p, Station: st.Station, Epoch: st.Epoch,
		MaxLeaseS: int64(st.MaxLease / time.Second), Leases: map[string]uint64{}, ArenaError: st.ArenaError,
		Storage: rpc.StorageToPB(st.Storage)}
	if st.SealKey != [seal.KeySize]byte{} {
		r.SealPublicKey = st.SealKey[:]
	}
	for k, n := range st.Leases {
		r.Leases[k] = uint64(n)
	}
	return r, nil
}

// CreateLease implements the CreateLease call.
func (s *handler) CreateLease(ctx context.Context, req *vaultpb.CreateLeaseRequest) (*vaultpb.CreateLeaseReply, error) {
	const op = "create"
	values, err := rpc.SealedFromWire(op, "values", req.Values)
	if err != nil {
		return nil, rpc.ToStatus(op, err)
	}
	if req.LifetimeS < 0 || req.LifetimeS > int64(1<<62)/int64(time.Second) {
		return nil, rpc.ToStatus(op, vaultapi.Invalid(op, "lifetime_s"))
	}
	cr := vaultapi.CreateRequest{
		Run: req.Run, Attempt: req.Attempt, Target: req.Target, Purpose: req.Purpose,
		SourceDigest: req.SourceDigest, Station: req.Station,
		RemoteDeadlineS: req.RemoteDeadlineS, ReturnWindowS: req.ReturnWindowS,
		Lifetime:           time.Duration(req.LifetimeS) * time.Second,
		Values:             values,
		OutputSchemaDigest: req.OutputSchemaDigest,
	}
	res, err := s.v.CreateLease(ctx, principal(ctx), cr)
	if err != nil {
		return nil, rpc.ToStatus(op, err)
	}
	b, err := leaseJSON(res.Lease)
	if err != nil {
		return nil, rpc.ToStatus(op, err)
	}
	return &vaultpb.CreateLeaseReply{LeaseJson: b, Tokens: res.Tokens}, nil
}

// Bind implements the Bind call.
func (s *handler) Bind(ctx context.Context, req *vaultpb.BindRequest) (*vaultpb.BindReply, error) {
	err := s.v.Bind(ctx, principal(ctx), req.LeaseId, req.CutEvent, req.CandidateDigest, req.ExportDigest, req.Export)
	if err != nil {
		return nil, rpc.ToStatus("bind", err)
	}
	return &vaultpb.BindReply{}, nil
}

// Issued implements the Issued call.
func (s *handler) Issued(ctx context.Context, req *vaultpb.IssuedRequest) (*vaultpb.IssuedReply, error) {
	const op = "issued"
	values, err := rpc.SealedFromWire(op, "values", req.Values)
	if err != nil {
		return nil, rpc.ToStatus(op, err)
	}
	out, err := s.v.Issued(ctx, principal(ctx), req.LeaseId, values, req.Tokens)
	if err != nil {
		return nil, rpc.ToStatus(op, err)
	}
	return &vaultpb.IssuedReply{Issued: out}, nil
}

func claimOf(req *vaultpb.ClaimRequest) vaultapi.ClaimRequest {
	return vaultapi.ClaimRequest{Run: req.Run, Attempt: req.Attempt, Station: req.Station, ReturnDigest: req.ReturnDigest}
}

// Claim implements the Claim call.
func (s *handler) Claim(ctx context.Context, req *vaultpb.ClaimRequest) (*vaultpb.LeaseReply, error) {
	res, err := s.v.Claim(ctx, principal(ctx), req.LeaseId, claimOf(req))
	if err != nil {
		return nil, rpc.ToStatus("claim", err)
	}
	b, err := leaseJSON(res.Lease)
	if err != nil {
		return nil, rpc.ToStatus("claim", err)
	}
	return &vaultpb.LeaseReply{LeaseJson: b, Repeated: res.Repeated}, nil
}

// Consume implements the Consume call.
func (s *handler) Consume(ctx context.Context, req *vaultpb.ClaimRequest) (*vaultpb.LeaseReply, error) {
	l, err := s.v.Consume(ctx, principal(ctx), req.LeaseId, claimOf(req))
	if err != nil {
		return nil, rpc.ToStatus("consume", err)
	}
	b, err := leaseJSON(l)
	if err != nil {
		return nil, rpc.ToStatus("consume", err)
	}
	return &vaultpb.LeaseReply{LeaseJson: b}, nil
}

// Revoke implements the Revoke call.
func (s *handler) Revoke(ctx context.Context, req *vaultpb.LeaseRef) (*vaultpb.LeaseReply, error) {
	l, err := s.v.Revoke(ctx, principal(ctx), req.LeaseId)
	if err != nil {
		return nil, rpc.ToStatus("revoke", err)
	}
	b, err := leaseJSON(l)
	if err != nil {
		return nil, rpc.ToStatus("revoke", err)
	}
	return &vaultpb.LeaseReply{LeaseJson: b}, nil
}

// List implements the List call.
func (s *handler) List(ctx context.Context, _ *vaultpb.ListRequest) (*vaultpb.ListReply, error) {
	infos, err := s.v.List(ctx)
	if err != nil {
		return nil, rpc.ToStatus("list", err)
	}
	out := &vaultpb.ListReply{}
	for _, in := range infos {
		r, err := infoReply(in)
		if err != nil {
			return nil, rpc.ToStatus("list", err)
		}
		out.Leases = append(out.Leases, r)
	}
	return out, nil
}

// Show implements the Show call.
func (s *handler) Show(ctx context.Context, req *vaultpb.LeaseRef) (*vaultpb.LeaseReply, error) {
	in, err := s.v.Show(ctx, req.LeaseId)
	if err != nil {
		return nil, rpc.ToStatus("show", err)
	}
	r, err := infoReply(in)
	if err != nil {
		return nil, rpc.ToStatus("show", err)
	}
	return r, nil
}

// chunkWriter sends what is written to it as BackupChunk messages.
type chunkWriter struct {
	send func(*vaultpb.BackupChunk) error
	buf  []byte
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		k := min(len(p), rpc.ChunkSize-len(w.buf))
		w.buf = append(w.buf, p[:k]...)
		p = p[k:]
		if len(w.buf) == rpc.ChunkSize {
			if err := w.flush(nil); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (w *chunkWriter) flush(stats *vaultpb.BackupStats) error {
	if len(w.buf) == 0 && stats == nil {
		return nil
	}
	err := w.send(&vaultpb.BackupChunk{Data: w.buf, Stats: stats})
	w.buf = make([]byte, 0, rpc.ChunkSize)
	return err
}

// Backup implements the Backup call: the backup stream in chunks, with the
// counts on the last message.
func (s *handler) Backup(_ *vaultpb.BackupRequest, ss grpc.ServerStreamingServer[vaultpb.BackupChunk]) error {
	w := &chunkWriter{send: ss.Send, buf: make([]byte, 0, rpc.ChunkSize)}
	st, err := s.v.Backup(w)
	if err != nil {
		return rpc.ToStatus("backup", err)
	}
	return w.flush(&vaultpb.BackupStats{Leases: uint32(st.Leases), Maps: uint32(st.Maps), Bytes: st.Bytes})
}

// chunkReader reads the data of a client stream, at most limit bytes.
type chunkReader struct {
	recv  func() ([]byte, error)
	buf   []byte
	left  int64
	first []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if r.first != nil {
			r.buf, r.first = r.first, nil
			continue
		}
		b, err := r.recv()
		if err != nil {
			return 0, err
		}
		r.buf = b
	}
	if r.left <= 0 {
		return 0, status.Error(codes.ResourceExhausted, "server: backup stream over its limit")
	}
	n := copy(p, r.buf[:min(int64(len(r.buf)), r.left)])
	r.buf = r.buf[n:]
	r.left -= int64(n)
	return n, nil
}

// Restore implements the Restore call.
func (s *handler) Restore(ss grpc.ClientStreamingServer[vaultpb.RestoreChunk, vaultpb.RestoreReply]) error {
	r := &chunkReader{left: store.MaxBackup + 1, recv: func() ([]byte, error) {
		m, err := ss.Recv()
		if err != nil {
			return nil, err
		}
		return m.Data, nil
	}}
	st, err := s.v.Restore(r)
	if err != nil {
		return rpc.ToStatus("restore", err)
	}
	return ss.SendAndClose(&vaultpb.RestoreReply{Restored: uint32(st.Restored), Maps: uint32(st.Maps), Skipped: uint32(st.Skipped)})
}

// Rotate implements the Rotate call.
func (s *handler) Rotate(ctx context.Context, _ *vaultpb.RotateRequest) (*vaultpb.RotateReply, error) {
	r, err := s.v.Rotate()
	if err != nil {
		return nil, rpc.ToStatus("rotate", err)
	}
	return &vaultpb.RotateReply{From: r.From, To: r.To, Rewrapped: uint32(r.Rewrapped), Dropped: uint32(r.Dropped)}, nil
}

// ProveErasure implements the ProveErasure call: the first message names
// the leases, the data of every message is the backup stream.
func (s *handler) ProveErasure(ss grpc.ClientStreamingServer[vaultpb.ProveErasureChunk, vaultpb.ProveErasureReply]) error {
	const op = "prove-erasure"
	first, err := ss.Recv()
	if err != nil {
		return rpc.ToStatus(op, vaultapi.Invalid(op, "stream"))
	}
	r := &chunkReader{left: store.MaxBackup + 1, first: first.Data, recv: func() ([]byte, error) {
		m, err := ss.Recv()
		if err != nil {
			return nil, err
		}
		return m.Data, nil
	}}
	rep, err := s.v.ProveErasure(principal(ss.Context()), r, first.DestroyedLease, first.LiveLease)
	if err != nil {
		return rpc.ToStatus(op, err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return rpc.ToStatus(op, err)
	}
	return ss.SendAndClose(&vaultpb.ProveErasureReply{ReportJson: b})
}

var _ io.Reader = (*chunkReader)(nil)
