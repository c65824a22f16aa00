package api

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
	"google.golang.org/grpc"
)

// Rehydration stream limits.
const (
	// rehydrateChunk is the size of the return pieces, and of the
	// plaintext of the sealed output pieces, on the Rehydrate stream.
	rehydrateChunk = 1 << 20
	// MaxOutput bounds the output a client accepts from Rehydrate (1 GiB):
	// it allocates the announced size once and opens every sealed piece
	// into it, so that no grown-out copy of restored values is left
	// behind.
	MaxOutput = 1 << 30
)

// Rehydrate implements the Rehydrate call: it reads the header and the
// whole return (exactly return_size bytes, at most
// rehydrate.MaxReturnBytes), runs service.Rehydrate, and streams the
// output back sealed to the client's ephemeral key (the header's
// output_key, seal.OutputSealer) in pieces of rehydrateChunk bytes, the
// receipt and the consumed lease in the last message. A header without a
// usable output key is refused (InvalidArgument, field output_key) before
// the return is read, so the lease is not touched. Each piece of the
// plaintext output is cleared as soon as it is sealed: gRPC's buffers only
// ever hold ciphertext.
func (s *handler) Rehydrate(ss grpc.BidiStreamingServer[vaultpb.RehydrateChunk, vaultpb.RehydrateReply]) error {
	const op = "rehydrate"
	bad := func(field string) error {
		return toStatus(op, &service.Error{Op: op, Field: field, Err: service.ErrInvalid})
	}
	first, err := ss.Recv()
	if err != nil {
		return bad("stream")
	}
	h := first.Header
	if h == nil {
		return bad("header")
	}
	if h.ReturnSize > rehydrate.MaxReturnBytes {
		return toStatus(op, &service.Error{Code: receipts.LimitExceeded, Op: op, Field: "return"})
	}
	if len(h.OutputKey) != seal.KeySize {
		return bad("output_key")
	}
	sealer, err := seal.NewOutputSealer([seal.KeySize]byte(h.OutputKey),
		seal.OutputBinding{Lease: h.LeaseId, ReturnDigest: h.ReturnDigest})
	if errors.Is(err, seal.ErrKey) {
		return bad("output_key")
	}
	if err != nil { // a lease id or digest far over any valid one
		return bad("header")
	}
	ret := make([]byte, 0, h.ReturnSize)
	for m := first; ; {
		if uint64(len(ret))+uint64(len(m.Data)) > h.ReturnSize {
			return bad("return_size")
		}
		ret = append(ret, m.Data...)
		m, err = ss.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return toStatus(op, &service.Error{Op: op, Err: ErrUnavailable})
		}
		if m.Header != nil {
			return bad("header")
		}
	}
	if uint64(len(ret)) != h.ReturnSize {
		return bad("return_size")
	}
	req, err := rehydrateRequest(h, ret)
	if err != nil {
		return toStatus(op, err)
	}
	res, err := s.v.Rehydrate(ss.Context(), principal(ss.Context()), req)
	if err != nil {
		return toStatus(op, err)
	}
	defer clear(res.Output)
	rc, err := canon.Marshal(res.Receipt)
	if err != nil {
		return toStatus(op, err)
	}
	lj, err := leaseJSON(res.Lease)
	if err != nil {
		return toStatus(op, err)
	}
	out := res.Output
	eph := sealer.Ephemeral()
	msg := &vaultpb.RehydrateReply{OutputSize: uint64(len(out)), OutputEphemeralKey: eph[:]}
	for {
		k := min(len(out), rehydrateChunk)
		var piece []byte
		piece, out = out[:k], out[k:]
		last := len(out) == 0
		sealed, err := sealer.Seal(make([]byte, 0, k+seal.Overhead), piece, last)
		clear(piece)
		if err != nil {
			return toStatus(op, &service.Error{Op: op, Err: service.ErrInternal})
		}
		msg.Sealed = sealed
		if last {
			msg.ReceiptJson, msg.LeaseJson = rc, lj
		}
		if err := ss.Send(msg); err != nil {
			return err
		}
		if last {
			return nil
		}
		msg = &vaultpb.RehydrateReply{}
	}
}

// rehydrateRequest converts the wire header.
func rehydrateRequest(h *vaultpb.RehydrateHeader, ret []byte) (service.RehydrateRequest, error) {
	const op = "rehydrate"
	bad := func(field string) error { return &service.Error{Op: op, Field: field, Err: service.ErrInvalid} }
	exp, err := time.Parse(time.RFC3339Nano, h.CutExpiry)
	if err != nil {
		return service.RehydrateRequest{}, bad("cut_expiry")
	}
	ek, err := sealedFromWire(op, "evidence_key", h.EvidenceKey)
	if err != nil {
		return service.RehydrateRequest{}, err
	}
	return service.RehydrateRequest{
		Lease:  h.LeaseId,
		Claim:  service.ClaimRequest{Run: h.Run, Attempt: h.Attempt, Station: h.Station, ReturnDigest: h.ReturnDigest},
		Schema: h.Schema, Return: ret, CutExpiry: exp, Retention: h.Retention,
		PolicyRevision: h.PolicyRevision, VerifierRevision: h.VerifierRevision, LabelDigest: h.LabelDigest,
		EvidenceKey: ek,
	}, nil
}

// SealEvidenceKey fetches the vault's public key and seals the cut's
// evidence key to it: the form RehydrateRequest.EvidenceKey takes
// (service.SealEvidenceKey). Only ciphertext crosses the socket.
func (c *Client) SealEvidenceKey(ctx context.Context, key *receipts.EvidenceKey) (seal.Request, error) {
	st, err := c.Status(ctx)
	if err != nil {
		return seal.Request{}, err
	}
	if st.SealKey == [seal.KeySize]byte{} {
		return seal.Request{}, &service.Error{Code: receipts.VaultProfileNotProven, Op: "seal-evidence-key"}
	}
	return service.SealEvidenceKey(st.SealKey, key)
}

// Rehydrate asks the vault to rehydrate a return (service.Vault.Rehydrate):
// req.Claim.ReturnDigest must be receipts.SHA256(req.Return) and
// req.EvidenceKey the cut's evidence key sealed with SealEvidenceKey. The
// output comes back sealed to an ephemeral key drawn for this call and is
// opened here. On success the lease is CONSUMED and its key destroyed, and
// the result holds restored values: the caller clears Output after use. A refused
// return is a *service.Error with the refusal code (service.CodeOf) that
// wraps a *receipts.Refusal naming the JSON path and position (errors.As);
// the lease then stays CLAIMED by this tuple. A refused schema wraps a
// *receipts.Refusal instead.
//
// If the connection breaks after the vault consumed the lease, or a piece
// of the sealed output fails authentication (ErrInternal), the result is
// lost: nothing can rehydrate the return again.
func (c *Client) Rehydrate(ctx context.Context, req service.RehydrateRequest) (service.RehydrateResult, error) {
	const op = "rehydrate"
	if req.EvidenceKey.Len() != 1 {
		return service.RehydrateResult{}, &service.Error{Op: op, Field: "evidence_key", Err: service.ErrInvalid}
	}
	if req.CutExpiry.IsZero() {
		return service.RehydrateResult{}, &service.Error{Op: op, Field: "cut_expiry", Err: service.ErrInvalid}
	}
	// The output comes back sealed to a key pair drawn for this call; its
	// private scalar is wiped once the output key is derived, or on return.
	outKey, err := seal.NewOutputKey()
	if err != nil {
		return service.RehydrateResult{}, &service.Error{Op: op, Err: service.ErrInternal}
	}
	defer outKey.Wipe()
	okPub := outKey.Public()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := c.c.Rehydrate(ctx)
	if err != nil {
		return service.RehydrateResult{}, fromStatus(op, err)
	}
	ev := req.EvidenceKey
	h := &vaultpb.RehydrateHeader{
		LeaseId: req.Lease, Run: req.Claim.Run, Attempt: req.Claim.Attempt, Station: req.Claim.Station,
		ReturnDigest: req.Claim.ReturnDigest, ReturnSize: uint64(len(req.Return)), Schema: req.Schema,
		CutExpiry: req.CutExpiry.UTC().Format(time.RFC3339Nano), Retention: req.Retention,
		PolicyRevision: req.PolicyRevision, VerifierRevision: req.VerifierRevision, LabelDigest: req.LabelDigest,
		EvidenceKey: sealedToWire(ev), OutputKey: okPub[:],
	}
	// Send the return in pieces; a send error means the server ended the
	// call, whose status Recv reports.
	rest := req.Return
	msg := &vaultpb.RehydrateChunk{Header: h}
	for sent := false; !sent || len(rest) > 0; sent = true {
		k := min(len(rest), rehydrateChunk)
		msg.Data, rest = rest[:k], rest[k:]
		if err := s.Send(msg); err != nil {
			break
		}
		msg = &vaultpb.RehydrateChunk{}
	}
	_ = s.CloseSend()

	// Each sealed piece is opened straight into out, allocated once at the
	// announced size.
	internal := &service.Error{Op: op, Err: service.ErrInternal}
	var out []byte
	var size uint64
	var opener *seal.OutputOpener
	for first := true; ; first = false {
		m, err := s.Recv()
		if err != nil {
			clear(out)
			if errors.Is(err, io.EOF) {
				err = &service.Error{Op: op, Err: ErrUnavailable}
			} else {
				err = fromStatus(op, err)
			}
			return service.RehydrateResult{}, err
		}
		if first {
			if m.OutputSize > MaxOutput {
				return service.RehydrateResult{}, &service.Error{Code: receipts.LimitExceeded, Op: op, Field: "output"}
			}
			if len(m.OutputEphemeralKey) != seal.KeySize {
				return service.RehydrateResult{}, internal
			}
			opener, err = outKey.Opener([seal.KeySize]byte(m.OutputEphemeralKey),
				seal.OutputBinding{Lease: req.Lease, ReturnDigest: req.Claim.ReturnDigest})
			if err != nil {
				return service.RehydrateResult{}, internal
			}
			size = m.OutputSize
			out = make([]byte, 0, size)
		}
		n := len(m.Sealed) - seal.Overhead
		if n < 0 || uint64(len(out))+uint64(n) > size {
			clear(out)
			return service.RehydrateResult{}, internal
		}
		last := uint64(len(out))+uint64(n) == size
		if out, err = opener.Open(out, m.Sealed, last); err != nil {
			clear(out)
			return service.RehydrateResult{}, internal
		}
		if last != (m.ReceiptJson != nil || m.LeaseJson != nil) {
			clear(out)
			return service.RehydrateResult{}, internal
		}
		if last {
			res, err := rehydrateResult(op, req, out, size, m)
			if err != nil {
				clear(out)
				return service.RehydrateResult{}, err
			}
			return res, nil
		}
	}
}

// rehydrateResult checks and decodes the last reply message.
func rehydrateResult(op string, req service.RehydrateRequest, out []byte, size uint64, m *vaultpb.RehydrateReply) (service.RehydrateResult, error) {
	internal := &service.Error{Op: op, Err: service.ErrInternal}
	if uint64(len(out)) != size {
		return service.RehydrateResult{}, internal
	}
	var rc receipts.RehydrationReceipt
	if err := canon.Unmarshal(m.ReceiptJson, &rc, canon.Options{MaxBytes: 64 << 10}); err != nil {
		return service.RehydrateResult{}, internal
	}
	if rc.Schema != receipts.SchemaRehydration || rc.Lease != req.Lease || rc.ReturnDigest != req.Claim.ReturnDigest {
		return service.RehydrateResult{}, internal
	}
	l, err := decodeLease(op, m.LeaseJson)
	if err != nil {
		return service.RehydrateResult{}, err
	}
	if l.ID != req.Lease {
		return service.RehydrateResult{}, internal
	}
	return service.RehydrateResult{Output: out, Receipt: rc, Lease: l}, nil
}
