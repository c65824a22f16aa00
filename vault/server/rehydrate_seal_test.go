package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/rpc"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
)

// wireHeader is the header Client.Rehydrate sends for req, with the
// declared return size size and no output key.
func wireHeader(t testing.TB, req service.RehydrateRequest, size uint64) *vaultpb.RehydrateHeader {
	t.Helper()
	return &vaultpb.RehydrateHeader{LeaseId: req.Lease, Run: req.Claim.Run, Attempt: req.Claim.Attempt, Station: req.Claim.Station,
		ReturnDigest: req.Claim.ReturnDigest, ReturnSize: size, Schema: req.Schema,
		CutExpiry: req.CutExpiry.UTC().Format(time.RFC3339Nano), Retention: req.Retention,
		PolicyRevision: req.PolicyRevision, VerifierRevision: req.VerifierRevision, LabelDigest: req.LabelDigest,
		EvidenceKey: rpc.SealedToWire(req.EvidenceKey)}
}

// replyRecorder is the server side of a Rehydrate stream without a
// transport: it hands the handler the given request messages and records
// every reply message as the wire would carry it (its protobuf encoding).
type replyRecorder struct {
	grpc.ServerStream // nil: the handler uses only Context, Recv and Send
	ctx               context.Context
	in                []*vaultpb.RehydrateChunk
	sent              []*vaultpb.RehydrateReply
	wire              [][]byte
}

func (r *replyRecorder) Context() context.Context { return r.ctx }

func (r *replyRecorder) Recv() (*vaultpb.RehydrateChunk, error) {
	if len(r.in) == 0 {
		return nil, io.EOF
	}
	m := r.in[0]
	r.in = r.in[1:]
	return m, nil
}

func (r *replyRecorder) Send(m *vaultpb.RehydrateReply) error {
	b, err := proto.Marshal(m)
	if err != nil {
		return err
	}
	r.sent = append(r.sent, proto.Clone(m).(*vaultpb.RehydrateReply))
	r.wire = append(r.wire, b)
	return nil
}

// chunksOf is the request stream of a header and a return, in pieces of
// rpc.RehydrateChunk bytes, as Client.Rehydrate sends it.
func chunksOf(h *vaultpb.RehydrateHeader, ret []byte) []*vaultpb.RehydrateChunk {
	msgs := []*vaultpb.RehydrateChunk{{Header: h}}
	for len(ret) > 0 {
		k := min(len(ret), rpc.RehydrateChunk)
		msgs = append(msgs, &vaultpb.RehydrateChunk{Data: ret[:k]})
		ret = ret[k:]
	}
	return msgs
}

// TestRehydrateReplySealed: every message the server sends on a real
// rehydration — of an output of several pieces, canary values at both
// marked paths of every item — carries no plaintext of the output: no
// canary in any form (raw, hex, base64) in any message's encoding, nor in
// all of them end to end. Only the holder of the client's ephemeral key
// opens them, to exactly the expected output (the control: the stream does
// carry the values); another key fails authentication. (That the pieces
// are bound to their lease and return is seal's TestOutputRefused.)
func TestRehydrateReplySealed(t *testing.T) {
	f := start(t, Options{})
	ek := newEvidenceKey(t)
	ps := rhPairs()
	canaries := [][]byte{ps[0].Value, ps[1].Value}
	res := f.grantSchema(t, ps, rhSchema("triage", 1<<20))
	f.bind(t, res)
	note := strings.Repeat("prose ", 200)
	var d, w rhDoc
	for len(d.Items)*len(note) < 2*rpc.RehydrateChunk+rpc.RehydrateChunk/2 {
		d.Items = append(d.Items, rhItem{Owner: res.Tokens[0], Team: res.Tokens[1], Note: note})
		w.Items = append(w.Items, rhItem{Owner: string(ps[0].Value), Team: string(ps[1].Value), Note: note})
	}
	ret, want := d.bytes(t), w.bytes(t)
	req := rhRequest(t, f.c, res.Lease.ID, rhSchema("triage", 1<<20), ret, ek)
	key, err := seal.NewOutputKey()
	if err != nil {
		t.Fatal(err)
	}
	h := wireHeader(t, req, uint64(len(ret)))
	pub := key.Public()
	h.OutputKey = pub[:]
	ss := &replyRecorder{ctx: ctx, in: chunksOf(h, ret)}
	if err := (&handler{v: f.v}).Rehydrate(ss); err != nil {
		t.Fatalf("Rehydrate: %v", err)
	}
	if len(ss.sent) < 3 {
		t.Fatalf("%d reply messages for an output of %d bytes, want one per %d-byte piece", len(ss.sent), len(want), rpc.RehydrateChunk)
	}
	var all []byte
	for i, b := range ss.wire {
		if hits := vaulttest.Find(b, canaries); len(hits) > 0 {
			t.Errorf("reply message %d (%d bytes) carries canaries %v", i, len(b), hits)
		}
		all = append(all, b...)
	}
	if hits := vaulttest.Find(all, canaries); len(hits) > 0 {
		t.Errorf("the reply stream carries canaries %v across its messages", hits)
	}

	// The control: the holder of the key opens the stream to the output.
	first := ss.sent[0]
	if first.OutputSize != uint64(len(want)) || len(first.OutputEphemeralKey) != seal.KeySize {
		t.Fatalf("first reply: size %d, ephemeral key of %d bytes", first.OutputSize, len(first.OutputEphemeralKey))
	}
	eph := [seal.KeySize]byte(first.OutputEphemeralKey)
	b := seal.OutputBinding{Lease: res.Lease.ID, ReturnDigest: receipts.SHA256(ret)}
	open := func(k *seal.OutputKey, b seal.OutputBinding) ([]byte, error) {
		o, err := k.Opener(eph, b)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, first.OutputSize)
		for i, m := range ss.sent {
			if out, err = o.Open(out, m.Sealed, i == len(ss.sent)-1); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	stranger, _ := seal.NewOutputKey()
	if _, err := open(stranger, b); !errors.Is(err, seal.ErrAuth) {
		t.Errorf("opened with another client key: %v, want seal.ErrAuth", err)
	}
	out, err := open(key, b)
	if err != nil || !bytes.Equal(out, want) {
		t.Fatalf("opening the stream with the client's key: %v (%d bytes, want %d)", err, len(out), len(want))
	}
	last := ss.sent[len(ss.sent)-1]
	if last.ReceiptJson == nil || last.LeaseJson == nil {
		t.Errorf("the last reply lacks the receipt or the lease")
	}
	if in, _ := f.c.Show(ctx, res.Lease.ID); in.Lease.State != lease.Consumed {
		t.Errorf("lease %v after the rehydration", in.Lease.State)
	}
}

// TestRehydrateOutputKeyRefused: a header without a usable output key is
// refused before the lease is touched, with an error that names the field
// only; a retry with a key then succeeds.
func TestRehydrateOutputKeyRefused(t *testing.T) {
	f := start(t, Options{})
	ek := newEvidenceKey(t)
	ps := rhPairs()
	res := f.grantSchema(t, ps, rhSchema("triage", 1))
	f.bind(t, res)
	ret := rhDoc{Items: []rhItem{{Owner: res.Tokens[0], Team: res.Tokens[1]}}}.bytes(t)
	req := rhRequest(t, f.c, res.Lease.ID, rhSchema("triage", 1), ret, ek)
	for _, k := range [][]byte{nil, make([]byte, seal.KeySize), []byte("not a key")} {
		h := wireHeader(t, req, uint64(len(ret)))
		h.OutputKey = k
		ss := &replyRecorder{ctx: ctx, in: chunksOf(h, ret)}
		err := rpc.FromStatus("rehydrate", (&handler{v: f.v}).Rehydrate(ss))
		var se *vaultapi.Error
		if !errors.As(err, &se) || !errors.Is(err, vaultapi.ErrInvalid) || se.Field != "output_key" || len(ss.sent) > 0 {
			t.Errorf("output key %x: %v, %d replies; want invalid output_key and none", k, err, len(ss.sent))
		}
		if err != nil && len(vaulttest.FindRaw([]byte(err.Error()), [][]byte{ps[0].Value, ps[1].Value, []byte(res.Tokens[0])})) > 0 {
			t.Errorf("the refusal names values or tokens")
		}
		if in, _ := f.c.Show(ctx, res.Lease.ID); in.Lease.State != lease.Active || in.Key != service.KeyPresent {
			t.Fatalf("refused request left the lease %v (key %v)", in.Lease.State, in.Key)
		}
	}
	out, err := f.c.Rehydrate(ctx, req)
	if err != nil || !bytes.Contains(out.Output, ps[1].Value) {
		t.Fatalf("Rehydrate with a key: %v", err)
	}
}
