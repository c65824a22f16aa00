package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/internal/rpc"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"google.golang.org/grpc"
)

// Client is a connection to vaultd. Its methods mirror the vault's calls
// and return *vaultapi.Error values carrying the same refusal codes and
// sentinels as the daemon's (errors.Is and vaultapi.CodeOf work across the
// socket). The principal of every call is the client process's uid, as the
// daemon reads it from the socket.
type Client struct {
	conn *grpc.ClientConn
	c    vaultpb.VaultClient

	mu      sync.Mutex
	sealKey [seal.KeySize]byte // the last public key Status returned, zero when none
	profile *harden.Profile    // the last profile Status returned, nil when none
}

// DialOptions are the options of DialWith.
type DialOptions struct {
	// ServerUIDs are uids the vault may run as besides root and this
	// process's effective uid (a vaultd under a service account).
	ServerUIDs []uint32
}

// Dial connects to the vault's unix socket with the default options. The
// connection is lazy: an unreachable vault shows as vaultapi.ErrUnavailable
// on the first call.
func Dial(socketPath string) (*Client, error) { return DialWith(socketPath, DialOptions{}) }

// DialWith connects to the vault's unix socket. The process listening there
// must run as root, as this process's effective uid or as one of
// opt.ServerUIDs, as the kernel reports it (SO_PEERCRED): otherwise anyone
// who could put a socket at the path would be sent owner values sealed to
// a key of theirs. That is checked once here, so that an untrusted server
// is vaultapi.ErrServerUntrusted at once, and again in the handshake of every
// connection gRPC makes. An unreachable socket is left to the first call.
func DialWith(socketPath string, opt DialOptions) (*Client, error) {
	return dial(socketPath, trustedServer(os.Geteuid(), opt.ServerUIDs))
}

func dial(socketPath string, trust func(uid uint32) bool) (*Client, error) {
	if c, err := net.DialTimeout("unix", socketPath, time.Second); err == nil {
		info, perr := rpc.PeerCred(c)
		c.Close()
		if perr == nil && !trust(info.UID) {
			return nil, vaultapi.Fail("dial", vaultapi.ErrServerUntrusted)
		}
	}
	conn, err := grpc.NewClient("unix:"+socketPath,
		grpc.WithTransportCredentials(&rpc.Creds{Trust: trust}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(rpc.MaxMessage), grpc.MaxCallSendMsgSize(rpc.MaxMessage),
			grpc.ForceCodecV2(rpc.Codec)),
	)
	if err != nil {
		return nil, vaultapi.Fail("dial", vaultapi.ErrUnavailable)
	}
	return &Client{conn: conn, c: vaultpb.NewVaultClient(conn)}, nil
}

// trustedServer returns the client's check of the server's uid: root, euid
// or one of extra.
func trustedServer(euid int, extra []uint32) func(uint32) bool {
	return func(uid uint32) bool {
		return uid == 0 || int64(uid) == int64(euid) || slices.Contains(extra, uid)
	}
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// decodeLease reads a lease record from the daemon strictly and checks it.
func decodeLease(op string, b []byte) (lease.Lease, error) {
	var l lease.Lease
	if err := canon.Unmarshal(b, &l, canon.Options{MaxBytes: vaultapi.MaxRecord}); err != nil {
		return l, vaultapi.Fail(op, vaultapi.ErrInternal)
	}
	if err := l.Check(); err != nil {
		return l, vaultapi.Refuse(op, receipts.LeaseUnrecoverable)
	}
	return l, nil
}

// decodeProfile reads VaultProfile@1 from the daemon. The strict decoder
// is tried first; a profile whose core limit reads "unlimited" (2^64-1,
// beyond the I-JSON integer range the strict decoder enforces) is decoded
// with encoding/json, unknown fields and trailing data still refused, so
// that an unhardened daemon can still say why it is not proven.
func decodeProfile(b []byte) (harden.Profile, error) {
	var p harden.Profile
	if err := canon.Unmarshal(b, &p, canon.Options{}); err != nil {
		p = harden.Profile{}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			return harden.Profile{}, err
		}
		if dec.More() {
			return harden.Profile{}, errors.New("client: trailing data after the profile")
		}
	}
	if p.Schema != harden.Schema {
		return harden.Profile{}, errors.New("client: not a VaultProfile@1")
	}
	return p, nil
}

// Status returns the vault's status: VaultProfile@1, sealing key, station,
// epoch, lease counts.
func (c *Client) Status(ctx context.Context) (vaultapi.Status, error) {
	const op = "status"
	r, err := c.c.Status(ctx, &vaultpb.StatusRequest{})
	if err != nil {
		return vaultapi.Status{}, rpc.FromStatus(op, err)
	}
	st := vaultapi.Status{Station: r.Station, Epoch: r.Epoch, MaxLease: time.Duration(r.MaxLeaseS) * time.Second,
		Leases: map[string]int{}, ArenaError: r.ArenaError, Storage: rpc.StorageFromPB(r.Storage)}
	p, err := decodeProfile(r.ProfileJson)
	if err != nil {
		return vaultapi.Status{}, vaultapi.Fail(op, vaultapi.ErrInternal)
	}
	st.Profile = p
	switch len(r.SealPublicKey) {
	case 0:
	case seal.KeySize:
		st.SealKey = [seal.KeySize]byte(r.SealPublicKey)
	default:
		return vaultapi.Status{}, vaultapi.Fail(op, vaultapi.ErrInternal)
	}
	for k, n := range r.Leases {
		st.Leases[k] = int(n)
	}
	c.mu.Lock()
	c.sealKey, c.profile = st.SealKey, &p
	c.mu.Unlock()
	return st, nil
}

// Profile returns the vault's hardening profile as the client's last
// Status call returned it, or fetches it now if there is none. The vault
// itself refuses every reversible call while its profile is not accepted,
// whatever a client kept; a client forgets what it kept when a call is
// refused with VAULT_PROFILE_NOT_PROVEN or a stale key (the vault
// restarted), so the next Profile asks again.
func (c *Client) Profile(ctx context.Context) (harden.Profile, error) {
	c.mu.Lock()
	p := c.profile
	c.mu.Unlock()
	if p != nil {
		return *p, nil
	}
	st, err := c.Status(ctx)
	return st.Profile, err
}

// Seal seals the pairs to the vault's public key (SealKey): the
// client-side half of CreateLease (package vault/seal).
func (c *Client) Seal(ctx context.Context, pairs []seal.Pair) (seal.Request, error) {
	key, err := c.SealKey(ctx)
	if err != nil {
		return seal.Request{}, err
	}
	req, err := seal.Seal(key, pairs)
	if err != nil {
		var se *seal.Error
		if errors.As(err, &se) && se.Code != "" {
			return seal.Request{}, vaultapi.New(se.Code, "seal", "values", nil)
		}
		return seal.Request{}, vaultapi.Invalid("seal", "values")
	}
	return req, nil
}

// SealKey returns the vault's public sealing key: the one the client's
// last Status call returned, or fetched now if there is none. A key gone
// stale (the vault restarted) is refused, as vaultapi.ErrStaleKey, by the
// call it sealed for, before that call changes anything; the client then
// forgets it, and the next SealKey fetches it again. A vault without a
// sealing key (its profile not proven) is VAULT_PROFILE_NOT_PROVEN.
func (c *Client) SealKey(ctx context.Context) ([seal.KeySize]byte, error) {
	c.mu.Lock()
	key := c.sealKey
	c.mu.Unlock()
	if key == [seal.KeySize]byte{} {
		st, err := c.Status(ctx)
		if err != nil {
			return key, err
		}
		key = st.SealKey
	}
	if key == [seal.KeySize]byte{} {
		return key, vaultapi.Refuse("seal", receipts.VaultProfileNotProven)
	}
	return key, nil
}

// forgetStatus forgets the kept sealing key and profile when err is a
// refusal that says they are out of date: a stale key, or a profile the
// vault no longer accepts.
func (c *Client) forgetStatus(err error) {
	if errors.Is(err, vaultapi.ErrStaleKey) || vaultapi.CodeOf(err) == receipts.VaultProfileNotProven {
		c.mu.Lock()
		c.sealKey, c.profile = [seal.KeySize]byte{}, nil
		c.mu.Unlock()
	}
}

// CreateLease asks for a lease over req.Values (sealed with Seal).
func (c *Client) CreateLease(ctx context.Context, req vaultapi.CreateRequest) (vaultapi.CreateResult, error) {
	const op = "create"
	pr := &vaultpb.CreateLeaseRequest{
		Run: req.Run, Attempt: req.Attempt, Target: req.Target, Purpose: req.Purpose,
		SourceDigest: req.SourceDigest, Station: req.Station,
		RemoteDeadlineS: req.RemoteDeadlineS, ReturnWindowS: req.ReturnWindowS,
		LifetimeS:          int64(req.Lifetime / time.Second),
		Values:             rpc.SealedToWire(req.Values),
		OutputSchemaDigest: req.OutputSchemaDigest,
	}
	r, err := c.c.CreateLease(ctx, pr)
	if err != nil {
		err = rpc.FromStatus(op, err)
		c.forgetStatus(err)
		return vaultapi.CreateResult{}, err
	}
	l, err := decodeLease(op, r.LeaseJson)
	if err != nil {
		return vaultapi.CreateResult{}, err
	}
	return vaultapi.CreateResult{Lease: l, Tokens: r.Tokens}, nil
}

// Bind binds a lease to its sealed cut.
func (c *Client) Bind(ctx context.Context, leaseID, cutEvent, candidateDigest, exportDigest string, export []byte) error {
	_, err := c.c.Bind(ctx, &vaultpb.BindRequest{LeaseId: leaseID, CutEvent: cutEvent,
		CandidateDigest: candidateDigest, ExportDigest: exportDigest, Export: export})
	return rpc.FromStatus("bind", err)
}

// Issued asks the vault, for each (category, value) pair of values (sealed
// with Seal, exactly as a grant's), whether tokens[i] is the token the lease
// issued for it: the reversible-token check a verifier makes. The values
// never cross the socket in clear; the answer is one bool per pair. Only
// the lease's principal may ask, and only while the lease is ACTIVE or
// CLAIMED (LEASE_NOT_ACTIVE after).
func (c *Client) Issued(ctx context.Context, leaseID string, values seal.Request, tokens []string) ([]bool, error) {
	const op = "issued"
	r, err := c.c.Issued(ctx, &vaultpb.IssuedRequest{LeaseId: leaseID, Values: rpc.SealedToWire(values), Tokens: tokens})
	if err != nil {
		err = rpc.FromStatus(op, err)
		c.forgetStatus(err)
		return nil, err
	}
	if len(r.Issued) != len(tokens) {
		return nil, vaultapi.Fail(op, vaultapi.ErrInternal)
	}
	return r.Issued, nil
}

func claimMsg(leaseID string, req vaultapi.ClaimRequest) *vaultpb.ClaimRequest {
	return &vaultpb.ClaimRequest{LeaseId: leaseID, Run: req.Run, Attempt: req.Attempt, Station: req.Station, ReturnDigest: req.ReturnDigest}
}

// Claim claims a lease.
func (c *Client) Claim(ctx context.Context, leaseID string, req vaultapi.ClaimRequest) (vaultapi.ClaimResult, error) {
	r, err := c.c.Claim(ctx, claimMsg(leaseID, req))
	if err != nil {
		return vaultapi.ClaimResult{}, rpc.FromStatus("claim", err)
	}
	l, err := decodeLease("claim", r.LeaseJson)
	return vaultapi.ClaimResult{Lease: l, Repeated: r.Repeated}, err
}

// Consume consumes a claimed lease.
func (c *Client) Consume(ctx context.Context, leaseID string, req vaultapi.ClaimRequest) (lease.Lease, error) {
	r, err := c.c.Consume(ctx, claimMsg(leaseID, req))
	if err != nil {
		return lease.Lease{}, rpc.FromStatus("consume", err)
	}
	return decodeLease("consume", r.LeaseJson)
}

// Revoke revokes a live lease.
func (c *Client) Revoke(ctx context.Context, leaseID string) (lease.Lease, error) {
	r, err := c.c.Revoke(ctx, &vaultpb.LeaseRef{LeaseId: leaseID})
	if err != nil {
		return lease.Lease{}, rpc.FromStatus("revoke", err)
	}
	return decodeLease("revoke", r.LeaseJson)
}

func infoOf(op string, r *vaultpb.LeaseReply) (vaultapi.Info, error) {
	l, err := decodeLease(op, r.LeaseJson)
	if err != nil {
		return vaultapi.Info{}, err
	}
	switch k := vaultapi.KeyState(r.Key); k {
	case vaultapi.KeyPresent, vaultapi.KeyMissing, vaultapi.KeyDestroyed:
		return vaultapi.Info{Lease: l, Key: k}, nil
	}
	return vaultapi.Info{}, vaultapi.Fail(op, vaultapi.ErrInternal)
}

// List lists every lease.
func (c *Client) List(ctx context.Context) ([]vaultapi.Info, error) {
	r, err := c.c.List(ctx, &vaultpb.ListRequest{})
	if err != nil {
		return nil, rpc.FromStatus("list", err)
	}
	out := make([]vaultapi.Info, 0, len(r.Leases))
	for _, lr := range r.Leases {
		in, err := infoOf("list", lr)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, nil
}

// Show shows one lease.
func (c *Client) Show(ctx context.Context, leaseID string) (vaultapi.Info, error) {
	r, err := c.c.Show(ctx, &vaultpb.LeaseRef{LeaseId: leaseID})
	if err != nil {
		return vaultapi.Info{}, rpc.FromStatus("show", err)
	}
	return infoOf("show", r)
}

// Backup writes the vault's backup stream to w and returns its counts. On
// error, what was written to w is incomplete and must be discarded (its
// checksum trailer is missing).
func (c *Client) Backup(ctx context.Context, w io.Writer) (vaultapi.BackupStats, error) {
	const op = "backup"
	s, err := c.c.Backup(ctx, &vaultpb.BackupRequest{})
	if err != nil {
		return vaultapi.BackupStats{}, rpc.FromStatus(op, err)
	}
	var st vaultapi.BackupStats
	var n int64
	for {
		m, err := s.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return st, rpc.FromStatus(op, err)
		}
		if _, err := w.Write(m.Data); err != nil {
			return st, vaultapi.Fail(op, err)
		}
		n += int64(len(m.Data))
		if m.Stats != nil {
			st = vaultapi.BackupStats{Leases: int(m.Stats.Leases), Maps: int(m.Stats.Maps), Bytes: m.Stats.Bytes}
		}
	}
	if st.Bytes != n {
		return st, vaultapi.Fail(op, vaultapi.ErrUnavailable)
	}
	return st, nil
}

// sendAll streams r in chunks; first builds the first message.
func sendAll[M any](r io.Reader, send func(*M) error, mk func(data []byte, first bool) *M) error {
	buf := make([]byte, rpc.ChunkSize)
	first := true
	for {
		n, err := io.ReadFull(r, buf)
		if n > 0 || first {
			if serr := send(mk(append([]byte(nil), buf[:n]...), first)); serr != nil {
				return serr
			}
			first = false
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// Restore streams a backup to the vault, which merges it.
func (c *Client) Restore(ctx context.Context, r io.Reader) (vaultapi.RestoreStats, error) {
	const op = "restore"
	s, err := c.c.Restore(ctx)
	if err != nil {
		return vaultapi.RestoreStats{}, rpc.FromStatus(op, err)
	}
	err = sendAll(r, s.Send, func(d []byte, _ bool) *vaultpb.RestoreChunk { return &vaultpb.RestoreChunk{Data: d} })
	if err != nil && !errors.Is(err, io.EOF) {
		var rerr error
		if _, rerr = s.CloseAndRecv(); rerr != nil {
			return vaultapi.RestoreStats{}, rpc.FromStatus(op, rerr)
		}
		return vaultapi.RestoreStats{}, vaultapi.Fail(op, err)
	}
	rep, err := s.CloseAndRecv()
	if err != nil {
		return vaultapi.RestoreStats{}, rpc.FromStatus(op, err)
	}
	return vaultapi.RestoreStats{Restored: int(rep.Restored), Maps: int(rep.Maps), Skipped: int(rep.Skipped)}, nil
}

// Rotate rotates the key epoch.
func (c *Client) Rotate(ctx context.Context) (vaultapi.Rotation, error) {
	r, err := c.c.Rotate(ctx, &vaultpb.RotateRequest{})
	if err != nil {
		return vaultapi.Rotation{}, rpc.FromStatus("rotate", err)
	}
	return vaultapi.Rotation{From: r.From, To: r.To, Rewrapped: int(r.Rewrapped), Dropped: int(r.Dropped)}, nil
}

// ProveErasure streams a backup to the vault, which restores it into a
// scratch store and reports whether the destroyed lease's map is
// undecryptable while the live one's (if given) decrypts.
func (c *Client) ProveErasure(ctx context.Context, backup io.Reader, destroyed, live string) (vaultapi.Report, error) {
	const op = "prove-erasure"
	s, err := c.c.ProveErasure(ctx)
	if err != nil {
		return vaultapi.Report{}, rpc.FromStatus(op, err)
	}
	err = sendAll(backup, s.Send, func(d []byte, first bool) *vaultpb.ProveErasureChunk {
		m := &vaultpb.ProveErasureChunk{Data: d}
		if first {
			m.DestroyedLease, m.LiveLease = destroyed, live
		}
		return m
	})
	if err != nil && !errors.Is(err, io.EOF) {
		if _, rerr := s.CloseAndRecv(); rerr != nil {
			return vaultapi.Report{}, rpc.FromStatus(op, rerr)
		}
		return vaultapi.Report{}, vaultapi.Fail(op, err)
	}
	rep, err := s.CloseAndRecv()
	if err != nil {
		return vaultapi.Report{}, rpc.FromStatus(op, err)
	}
	var out vaultapi.Report
	if err := canon.Unmarshal(rep.ReportJson, &out, canon.Options{}); err != nil || out.Schema != vaultapi.ErasureSchema {
		return vaultapi.Report{}, vaultapi.Fail(op, vaultapi.ErrInternal)
	}
	return out, nil
}
