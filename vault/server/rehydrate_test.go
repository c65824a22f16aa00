package server

import (
	"bytes"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/internal/rpc"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// rhSchema marks owner (modules) and team (teams) for purpose, at most max
// substitutions each; note is prose.
func rhSchema(purpose string, max int) []byte {
	m := func(cat string) string {
		return `{"type":"string","x-privacycut-rehydrate":{"category":"` + cat + `","purpose":"` + purpose + `","max":` + itoa(max) + `}}`
	}
	return []byte(`{"type":"object","additionalProperties":false,"required":["items"],"properties":{
  "items":{"type":"array","items":{"type":"object","additionalProperties":false,"properties":{
    "owner":` + m("module") + `,"team":` + m("team") + `,"note":{"type":"string"}}}}}}`)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

type rhItem struct {
	Owner string `json:"owner,omitempty"`
	Team  string `json:"team,omitempty"`
	Note  string `json:"note,omitempty"`
}

type rhDoc struct {
	Items []rhItem `json:"items"`
}

func (d rhDoc) bytes(t testing.TB) []byte {
	t.Helper()
	b, err := canon.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rhPairs is a module and a team (canary values) for leases over the same
// values.
func rhPairs() []seal.Pair {
	tag := hexDigest("")[:12]
	return []seal.Pair{
		{Category: "module", Value: []byte("VAULTD-CANARY-rh-mod-" + tag)},
		{Category: "team", Value: []byte("VAULTD-CANARY-rh-team-" + tag)},
	}
}

func newEvidenceKey(t testing.TB) *receipts.EvidenceKey {
	t.Helper()
	b := make([]byte, receipts.EvidenceKeySize)
	rand.Read(b)
	k, err := receipts.NewEvidenceKey(b)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Wipe)
	return k
}

// rhRequest is a rehydration request for ret under lease id, through c.
func rhRequest(t testing.TB, c *client.Client, id string, schema, ret []byte, ek *receipts.EvidenceKey) service.RehydrateRequest {
	t.Helper()
	sealed, err := c.SealEvidenceKey(ctx, ek)
	if err != nil {
		t.Fatalf("SealEvidenceKey: %v", err)
	}
	return service.RehydrateRequest{
		Lease:  id,
		Claim:  service.ClaimRequest{Run: "run-1", Attempt: 1, Station: "station-a", ReturnDigest: receipts.SHA256(ret)},
		Schema: schema, Return: ret,
		CutExpiry: time.Now().Add(time.Hour), Retention: rehydrate.RetentionSession,
		PolicyRevision: "policy/1", VerifierRevision: "verifier/1",
		LabelDigest: "hmac-sha256:" + strings.Repeat("cd", 32), EvidenceKey: sealed,
	}
}

// TestRehydrateRoundTrip: through the socket, an honest return comes back
// substituted with a keyed receipt and a consumed lease; a refusal arrives
// with its code, path and position; a replay is LEASE_NOT_ACTIVE.
func TestRehydrateRoundTrip(t *testing.T) {
	f := start(t, Options{})
	ek := newEvidenceKey(t)
	ps := rhPairs()
	schema := rhSchema("triage", 2)
	res := f.grantSchema(t, ps, schema)
	f.bind(t, res)

	// A refusal first: an exact token in prose.
	bad := rhDoc{Items: []rhItem{{Owner: res.Tokens[0]}, {Note: res.Tokens[1]}}}.bytes(t)
	_, err := f.c.Rehydrate(ctx, rhRequest(t, f.c, res.Lease.ID, schema, bad, ek))
	var r *receipts.Refusal
	if vaultapi.CodeOf(err) != receipts.TokenWrongPath || !errors.As(err, &r) {
		t.Fatalf("refusal across the socket: %v", err)
	}
	if diff := cmp.Diff(&receipts.Refusal{Code: receipts.TokenWrongPath, Part: -1, Kind: "return", Path: "$.items[1].note",
		Line: 1, Column: bytes.LastIndex(bad, []byte(res.Tokens[1])), Length: len(res.Tokens[1]) + 2, Reason: r.Reason}, r); diff != "" || r.Reason == "" {
		t.Errorf("refusal detail (-want +got):\n%s", diff)
	}
	for _, p := range ps {
		if strings.Contains(err.Error(), string(p.Value)) {
			t.Errorf("the error names a value")
		}
	}
	for _, tok := range res.Tokens {
		if strings.Contains(err.Error(), tok) {
			t.Errorf("the error names a token")
		}
	}
	in, _ := f.c.Show(ctx, res.Lease.ID)
	if in.Lease.State != lease.Claimed {
		t.Fatalf("after the refusal: %v", in.Lease.State)
	}

	// An honest return on a fresh lease.
	res = f.grantSchema(t, ps, schema)
	f.bind(t, res)
	ret := rhDoc{Items: []rhItem{{Owner: res.Tokens[0], Team: res.Tokens[1], Note: "upgrade"}, {Owner: res.Tokens[0]}}}.bytes(t)
	out, err := f.c.Rehydrate(ctx, rhRequest(t, f.c, res.Lease.ID, schema, ret, ek))
	if err != nil {
		t.Fatalf("Rehydrate: %v", err)
	}
	want := rhDoc{Items: []rhItem{{Owner: string(ps[0].Value), Team: string(ps[1].Value), Note: "upgrade"}, {Owner: string(ps[0].Value)}}}.bytes(t)
	if !bytes.Equal(out.Output, want) {
		t.Errorf("output %s, want %s", out.Output, want)
	}
	if out.Receipt.FinalDigest != ek.HMAC(want) || out.Receipt.ReturnDigest != receipts.SHA256(ret) ||
		out.Receipt.OutputSchemaDigest != res.Lease.OutputSchemaDigest || out.Receipt.OutputSchemaDigest == "" ||
		!cmp.Equal(out.Receipt.Substitutions, map[string]int{"module": 2, "team": 1}) {
		t.Errorf("receipt %+v", out.Receipt)
	}
	if out.Lease.State != lease.Consumed || !out.Lease.KeyDestroyed {
		t.Errorf("lease %v key destroyed %v", out.Lease.State, out.Lease.KeyDestroyed)
	}
	_, err = f.c.Rehydrate(ctx, rhRequest(t, f.c, res.Lease.ID, schema, ret, ek))
	if vaultapi.CodeOf(err) != receipts.LeaseNotActive {
		t.Errorf("replay: %v", err)
	}
	// A schema refusal carries a refusal of kind schema.
	res = f.grantSchema(t, ps, schema)
	f.bind(t, res)
	_, err = f.c.Rehydrate(ctx, rhRequest(t, f.c, res.Lease.ID, []byte(`{"type":"integer"}`), ret, ek))
	var se *receipts.Refusal
	if vaultapi.CodeOf(err) != receipts.MalformedRecord || !errors.As(err, &se) || se.Line != 1 || se.Column != 9 {
		t.Errorf("schema refusal: %v", err)
	}
}

// TestRehydrateLargeReturn streams a return and an output larger than one
// gRPC message (rpc.MaxMessage) through the socket.
func TestRehydrateLargeReturn(t *testing.T) {
	f := start(t, Options{})
	ek := newEvidenceKey(t)
	ps := rhPairs()
	res := f.grantSchema(t, ps, rhSchema("triage", 1<<20))
	f.bind(t, res)
	note := strings.Repeat("prose ", 1000)
	var d, w rhDoc
	for len(d.Items)*len(note) < rpc.MaxMessage+rpc.MaxMessage/2 {
		d.Items = append(d.Items, rhItem{Owner: res.Tokens[0], Note: note})
		w.Items = append(w.Items, rhItem{Owner: string(ps[0].Value), Note: note})
	}
	ret, want := d.bytes(t), w.bytes(t)
	out, err := f.c.Rehydrate(ctx, rhRequest(t, f.c, res.Lease.ID, rhSchema("triage", 1<<20), ret, ek))
	if err != nil {
		t.Fatalf("Rehydrate of %d bytes: %v", len(ret), err)
	}
	if !bytes.Equal(out.Output, want) {
		t.Errorf("output of %d bytes differs from the %d expected", len(out.Output), len(want))
	}
}

// TestRehydrateConcurrentAPI: N goroutines rehydrate one lease through the
// socket; exactly one gets the output.
func TestRehydrateConcurrentAPI(t *testing.T) {
	f := start(t, Options{})
	ek := newEvidenceKey(t)
	ps := rhPairs()
	schema := rhSchema("triage", 4)
	res := f.grantSchema(t, ps, schema)
	f.bind(t, res)
	const n = 8
	reqs := make([]service.RehydrateRequest, n)
	for i := range n {
		// Half repeat one return (same tuple), half send their own.
		note := "same"
		if i%2 == 1 {
			note = itoa(i)
		}
		ret := rhDoc{Items: []rhItem{{Owner: res.Tokens[0], Note: note}}}.bytes(t)
		reqs[i] = rhRequest(t, f.c, res.Lease.ID, schema, ret, ek)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	outs := make([][]byte, n)
	for i := range n {
		wg.Go(func() {
			r, err := f.c.Rehydrate(ctx, reqs[i])
			outs[i], errs[i] = r.Output, err
		})
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch vaultapi.CodeOf(err) {
		case "":
			if err != nil {
				t.Errorf("rehydration %d: %v", i, err)
				continue
			}
			wins++
			if !bytes.Contains(outs[i], ps[0].Value) {
				t.Errorf("winner %d without the value", i)
			}
		case receipts.LeaseNotActive, receipts.LeaseClaimConflict:
			if outs[i] != nil {
				t.Errorf("loser %d has output", i)
			}
		default:
			t.Errorf("rehydration %d: %v", i, err)
		}
	}
	if wins != 1 {
		t.Errorf("%d winners, want 1", wins)
	}
}

// TestRehydrateStreamChecks: the server refuses a stream whose header is
// missing or repeated, or whose return is longer or shorter than declared.
func TestRehydrateStreamChecks(t *testing.T) {
	f := start(t, Options{})
	ek := newEvidenceKey(t)
	res := f.grantSchema(t, rhPairs(), rhSchema("triage", 1))
	f.bind(t, res)
	ret := rhDoc{Items: []rhItem{{Owner: res.Tokens[0]}}}.bytes(t)
	req := rhRequest(t, f.c, res.Lease.ID, rhSchema("triage", 1), ret, ek)
	outKey, err := seal.NewOutputKey()
	if err != nil {
		t.Fatal(err)
	}
	pub := outKey.Public()
	header := func(size uint64) *vaultpb.RehydrateHeader {
		h := wireHeader(t, req, size)
		h.OutputKey = pub[:]
		return h
	}
	withKey := func(key []byte) *vaultpb.RehydrateHeader {
		h := header(uint64(len(ret)))
		h.OutputKey = key
		return h
	}
	one := make([]byte, seal.KeySize)
	one[0] = 1 // the point of order 1
	tests := []struct {
		name  string
		msgs  []*vaultpb.RehydrateChunk
		code  codes.Code
		field string
	}{
		{"no header", []*vaultpb.RehydrateChunk{{Data: ret}}, codes.InvalidArgument, "header"},
		{"second header", []*vaultpb.RehydrateChunk{{Header: header(uint64(len(ret))), Data: ret[:1]}, {Header: header(1), Data: ret[1:]}}, codes.InvalidArgument, "header"},
		{"longer than declared", []*vaultpb.RehydrateChunk{{Header: header(uint64(len(ret) - 1)), Data: ret}}, codes.InvalidArgument, "return_size"},
		{"shorter than declared", []*vaultpb.RehydrateChunk{{Header: header(uint64(len(ret) + 1)), Data: ret}}, codes.InvalidArgument, "return_size"},
		{"over the limit", []*vaultpb.RehydrateChunk{{Header: header(rehydrate.MaxReturnBytes + 1)}}, codes.ResourceExhausted, "return"},
		{"no output key", []*vaultpb.RehydrateChunk{{Header: withKey(nil), Data: ret}}, codes.InvalidArgument, "output_key"},
		{"short output key", []*vaultpb.RehydrateChunk{{Header: withKey(one[:31]), Data: ret}}, codes.InvalidArgument, "output_key"},
		{"long output key", []*vaultpb.RehydrateChunk{{Header: withKey(append(one, 0)), Data: ret}}, codes.InvalidArgument, "output_key"},
		{"zero output key", []*vaultpb.RehydrateChunk{{Header: withKey(make([]byte, seal.KeySize)), Data: ret}}, codes.InvalidArgument, "output_key"},
		{"low-order output key", []*vaultpb.RehydrateChunk{{Header: withKey(one), Data: ret}}, codes.InvalidArgument, "output_key"},
		{"bad cut expiry", []*vaultpb.RehydrateChunk{{Header: func() *vaultpb.RehydrateHeader {
			h := header(uint64(len(ret)))
			h.CutExpiry = "tomorrow"
			return h
		}(), Data: ret}}, codes.InvalidArgument, "cut_expiry"},
	}
	raw := rawClient(t, f.sock)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := raw.Rehydrate(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range tc.msgs {
				if s.Send(m) != nil {
					break
				}
			}
			s.CloseSend()
			_, err = s.Recv()
			st, _ := status.FromError(err)
			e := rpc.FromStatus("rehydrate", err)
			var se *vaultapi.Error
			if st.Code() != tc.code || !errors.As(e, &se) || se.Field != tc.field {
				t.Errorf("status %v (%v), want %v field %s", st.Code(), e, tc.code, tc.field)
			}
		})
	}
	if in, _ := f.c.Show(ctx, res.Lease.ID); in.Lease.State != lease.Active {
		t.Errorf("refused streams left the lease %v", in.Lease.State)
	}
}
