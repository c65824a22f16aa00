package server

import (
	"errors"
	"io"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/internal/rpc"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"google.golang.org/grpc"
)

// Rehydrate implements the Rehydrate call: it reads the header and the
// whole return (exactly return_size bytes, at most
// rehydrate.MaxReturnBytes), runs service.Rehydrate, and streams the
// output back sealed to the client's ephemeral key (the header's
// output_key, seal.OutputSealer) in pieces of rpc.RehydrateChunk bytes, the
// receipt and the consumed lease in the last message. A header without a
// usable output key is refused (InvalidArgument, field output_key) before
// the return is read, so the lease is not touched. Each piece of the
// plaintext output is cleared as soon as it is sealed: gRPC's buffers only
// ever hold ciphertext.
func (s *handler) Rehydrate(ss grpc.BidiStreamingServer[vaultpb.RehydrateChunk, vaultpb.RehydrateReply]) error {
	const op = "rehydrate"
	bad := func(field string) error {
		return rpc.ToStatus(op, vaultapi.Invalid(op, field))
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
		return rpc.ToStatus(op, vaultapi.New(receipts.LimitExceeded, op, "return", nil))
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
			return rpc.ToStatus(op, vaultapi.Fail(op, vaultapi.ErrUnavailable))
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
		return rpc.ToStatus(op, err)
	}
	res, err := s.v.Rehydrate(ss.Context(), principal(ss.Context()), req)
	if err != nil {
		return rpc.ToStatus(op, err)
	}
	defer clear(res.Output)
	rc, err := canon.Marshal(res.Receipt)
	if err != nil {
		return rpc.ToStatus(op, err)
	}
	lj, err := leaseJSON(res.Lease)
	if err != nil {
		return rpc.ToStatus(op, err)
	}
	out := res.Output
	eph := sealer.Ephemeral()
	msg := &vaultpb.RehydrateReply{OutputSize: uint64(len(out)), OutputEphemeralKey: eph[:]}
	for {
		k := min(len(out), rpc.RehydrateChunk)
		var piece []byte
		piece, out = out[:k], out[k:]
		last := len(out) == 0
		sealed, err := sealer.Seal(make([]byte, 0, k+seal.Overhead), piece, last)
		clear(piece)
		if err != nil {
			return rpc.ToStatus(op, vaultapi.Fail(op, vaultapi.ErrInternal))
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
func rehydrateRequest(h *vaultpb.RehydrateHeader, ret []byte) (vaultapi.RehydrateRequest, error) {
	const op = "rehydrate"
	bad := func(field string) error { return vaultapi.Invalid(op, field) }
	exp, err := time.Parse(time.RFC3339Nano, h.CutExpiry)
	if err != nil {
		return vaultapi.RehydrateRequest{}, bad("cut_expiry")
	}
	ek, err := rpc.SealedFromWire(op, "evidence_key", h.EvidenceKey)
	if err != nil {
		return vaultapi.RehydrateRequest{}, err
	}
	return vaultapi.RehydrateRequest{
		Lease:  h.LeaseId,
		Claim:  vaultapi.ClaimRequest{Run: h.Run, Attempt: h.Attempt, Station: h.Station, ReturnDigest: h.ReturnDigest},
		Schema: h.Schema, Return: ret, CutExpiry: exp, Retention: h.Retention,
		PolicyRevision: h.PolicyRevision, VerifierRevision: h.VerifierRevision, LabelDigest: h.LabelDigest,
		EvidenceKey: ek,
	}, nil
}
