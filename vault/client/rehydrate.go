package client

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/rpc"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// MaxOutput bounds the output a client accepts from Rehydrate (1 GiB): it
// allocates the announced size once and opens every sealed piece into it,
// so that no grown-out copy of restored values is left behind.
const MaxOutput = 1 << 30

// SealEvidenceKey fetches the vault's public key and seals the cut's
// evidence key to it: the form RehydrateRequest.EvidenceKey takes
// (vaultapi.SealEvidenceKey). Only ciphertext crosses the socket.
func (c *Client) SealEvidenceKey(ctx context.Context, key *receipts.EvidenceKey) (seal.Request, error) {
	st, err := c.Status(ctx)
	if err != nil {
		return seal.Request{}, err
	}
	if st.SealKey == [seal.KeySize]byte{} {
		return seal.Request{}, vaultapi.Refuse("seal-evidence-key", receipts.VaultProfileNotProven)
	}
	return vaultapi.SealEvidenceKey(st.SealKey, key)
}

// Rehydrate asks the vault to rehydrate a return (the vault's Rehydrate):
// req.Claim.ReturnDigest must be receipts.SHA256(req.Return) and
// req.EvidenceKey the cut's evidence key sealed with SealEvidenceKey. The
// output comes back sealed to an ephemeral key drawn for this call and is
// opened here. On success the lease is CONSUMED and its key destroyed, and
// the result holds restored values: the caller clears Output after use. A refused
// return is a *vaultapi.Error with the refusal code (vaultapi.CodeOf) that
// wraps a *receipts.Refusal naming the JSON path and position (errors.As);
// the lease then stays CLAIMED by this tuple. A refused schema wraps a
// *receipts.Refusal instead.
//
// If the connection breaks after the vault consumed the lease, or a piece
// of the sealed output fails authentication (ErrInternal), the result is
// lost: nothing can rehydrate the return again.
func (c *Client) Rehydrate(ctx context.Context, req vaultapi.RehydrateRequest) (vaultapi.RehydrateResult, error) {
	res, err := c.rehydrate(ctx, req)
	c.forgetStatus(err)
	return res, err
}

func (c *Client) rehydrate(ctx context.Context, req vaultapi.RehydrateRequest) (vaultapi.RehydrateResult, error) {
	const op = "rehydrate"
	if req.EvidenceKey.Len() != 1 {
		return vaultapi.RehydrateResult{}, vaultapi.Invalid(op, "evidence_key")
	}
	if req.CutExpiry.IsZero() {
		return vaultapi.RehydrateResult{}, vaultapi.Invalid(op, "cut_expiry")
	}
	// The output comes back sealed to a key pair drawn for this call; its
	// private scalar is wiped once the output key is derived, or on return.
	outKey, err := seal.NewOutputKey()
	if err != nil {
		return vaultapi.RehydrateResult{}, vaultapi.Fail(op, vaultapi.ErrInternal)
	}
	defer outKey.Wipe()
	okPub := outKey.Public()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := c.c.Rehydrate(ctx)
	if err != nil {
		return vaultapi.RehydrateResult{}, rpc.FromStatus(op, err)
	}
	ev := req.EvidenceKey
	h := &vaultpb.RehydrateHeader{
		LeaseId: req.Lease, Run: req.Claim.Run, Attempt: req.Claim.Attempt, Station: req.Claim.Station,
		ReturnDigest: req.Claim.ReturnDigest, ReturnSize: uint64(len(req.Return)), Schema: req.Schema,
		CutExpiry: req.CutExpiry.UTC().Format(time.RFC3339Nano), Retention: req.Retention,
		PolicyRevision: req.PolicyRevision, VerifierRevision: req.VerifierRevision, LabelDigest: req.LabelDigest,
		EvidenceKey: rpc.SealedToWire(ev), OutputKey: okPub[:],
	}
	// Send the return in pieces; a send error means the server ended the
	// call, whose status Recv reports.
	rest := req.Return
	msg := &vaultpb.RehydrateChunk{Header: h}
	for sent := false; !sent || len(rest) > 0; sent = true {
		k := min(len(rest), rpc.RehydrateChunk)
		msg.Data, rest = rest[:k], rest[k:]
		if err := s.Send(msg); err != nil {
			break
		}
		msg = &vaultpb.RehydrateChunk{}
	}
	_ = s.CloseSend()

	// Each sealed piece is opened straight into out, allocated once at the
	// announced size.
	internal := vaultapi.Fail(op, vaultapi.ErrInternal)
	var out []byte
	var size uint64
	var opener *seal.OutputOpener
	for first := true; ; first = false {
		m, err := s.Recv()
		if err != nil {
			clear(out)
			if errors.Is(err, io.EOF) {
				err = vaultapi.Fail(op, vaultapi.ErrUnavailable)
			} else {
				err = rpc.FromStatus(op, err)
			}
			return vaultapi.RehydrateResult{}, err
		}
		if first {
			if m.OutputSize > MaxOutput {
				return vaultapi.RehydrateResult{}, vaultapi.New(receipts.LimitExceeded, op, "output", nil)
			}
			if len(m.OutputEphemeralKey) != seal.KeySize {
				return vaultapi.RehydrateResult{}, internal
			}
			opener, err = outKey.Opener([seal.KeySize]byte(m.OutputEphemeralKey),
				seal.OutputBinding{Lease: req.Lease, ReturnDigest: req.Claim.ReturnDigest})
			if err != nil {
				return vaultapi.RehydrateResult{}, internal
			}
			size = m.OutputSize
			out = make([]byte, 0, size)
		}
		n := len(m.Sealed) - seal.Overhead
		if n < 0 || uint64(len(out))+uint64(n) > size {
			clear(out)
			return vaultapi.RehydrateResult{}, internal
		}
		last := uint64(len(out))+uint64(n) == size
		if out, err = opener.Open(out, m.Sealed, last); err != nil {
			clear(out)
			return vaultapi.RehydrateResult{}, internal
		}
		if last != (m.ReceiptJson != nil || m.LeaseJson != nil) {
			clear(out)
			return vaultapi.RehydrateResult{}, internal
		}
		if last {
			res, err := rehydrateResult(op, req, out, size, m)
			if err != nil {
				clear(out)
				return vaultapi.RehydrateResult{}, err
			}
			return res, nil
		}
	}
}

// rehydrateResult checks and decodes the last reply message.
func rehydrateResult(op string, req vaultapi.RehydrateRequest, out []byte, size uint64, m *vaultpb.RehydrateReply) (vaultapi.RehydrateResult, error) {
	internal := vaultapi.Fail(op, vaultapi.ErrInternal)
	if uint64(len(out)) != size {
		return vaultapi.RehydrateResult{}, internal
	}
	var rc receipts.RehydrationReceipt
	if err := canon.Unmarshal(m.ReceiptJson, &rc, canon.Options{MaxBytes: 64 << 10}); err != nil {
		return vaultapi.RehydrateResult{}, internal
	}
	if rc.Schema != receipts.SchemaRehydration || rc.Lease != req.Lease || rc.ReturnDigest != req.Claim.ReturnDigest {
		return vaultapi.RehydrateResult{}, internal
	}
	l, err := decodeLease(op, m.LeaseJson)
	if err != nil {
		return vaultapi.RehydrateResult{}, err
	}
	if l.ID != req.Lease {
		return vaultapi.RehydrateResult{}, internal
	}
	return vaultapi.RehydrateResult{Output: out, Receipt: rc, Lease: l}, nil
}
