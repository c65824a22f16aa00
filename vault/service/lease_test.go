package service

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/seal"
)

var tokenRE = regexp.MustCompile(`^pcv:([a-z2-7]{10}):(module|package|function|file|team|person|host):[a-z2-7]{20}$`)

func TestTokens(t *testing.T) {
	v := newEnv(t).open(t)
	mod := canary("mod")
	team := canary("team")
	pairs := []seal.Pair{
		{Category: "module", Value: mod},
		{Category: "team", Value: team},
		{Category: "module", Value: mod},  // same pair again: same token
		{Category: "package", Value: mod}, // same value, other category: other token
	}
	res := grant(t, v, pairs)
	if len(res.Tokens) != 4 {
		t.Fatalf("%d tokens, want 4", len(res.Tokens))
	}
	for i, tok := range res.Tokens {
		m := tokenRE.FindStringSubmatch(tok)
		if m == nil || m[1] != res.Lease.Namespace {
			t.Errorf("token %d %q is not pcv:<lease namespace>:<category>:<mac>", i, tok)
		}
		if !strings.Contains(tok, ":"+pairs[i].Category+":") {
			t.Errorf("token %d does not name its category", i)
		}
	}
	if res.Tokens[0] != res.Tokens[2] {
		t.Errorf("the same (category, value) got two tokens")
	}
	if res.Tokens[0] == res.Tokens[3] || res.Tokens[0] == res.Tokens[1] {
		t.Errorf("distinct pairs share a token")
	}
	// The map holds each distinct token once, in issue order, with its value.
	err := v.WithMap(ctx, res.Lease.ID, func(m *Map) error {
		toks, err := m.Tokens()
		if err != nil {
			return err
		}
		if diff := cmp.Diff([]string{res.Tokens[0], res.Tokens[1], res.Tokens[3]}, toks); diff != "" {
			t.Errorf("map tokens (-want +got):\n%s", diff)
		}
		for i, tok := range res.Tokens {
			err := m.Lookup(tok, func(cat string, val []byte) error {
				if cat != pairs[i].Category || !bytes.Equal(val, pairs[i].Value) {
					t.Errorf("token %d maps to another pair", i)
				}
				return nil
			})
			if err != nil {
				t.Errorf("Lookup %d: %v", i, err)
			}
		}
		// Not issued, other namespace, altered: refused with codes.
		other := strings.Replace(res.Tokens[0], res.Lease.Namespace, "aaaaaaaaaa", 1)
		if code := CodeOf(m.Lookup(other, nil)); code != receipts.TokenOtherNamespace {
			t.Errorf("other-namespace token: %s", code)
		}
		altered := res.Tokens[0][:len(res.Tokens[0])-1] + "q"
		if altered == res.Tokens[0] {
			altered = res.Tokens[0][:len(res.Tokens[0])-1] + "r"
		}
		for _, bad := range []string{altered, strings.Replace(res.Tokens[0], ":module:", ":team:", 1), "pcv:", "redacted:module:1"} {
			if code := CodeOf(m.Lookup(bad, nil)); code != receipts.TokenNotIssued {
				t.Errorf("Lookup(%q): %s, want TOKEN_NOT_ISSUED", bad, code)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("WithMap: %v", err)
	}
	// A second lease over the same values: a fresh namespace, other tokens.
	res2 := grant(t, v, pairs)
	if res2.Lease.Namespace == res.Lease.Namespace || res2.Tokens[0] == res.Tokens[0] {
		t.Errorf("a new lease reused the namespace or a token")
	}
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("life", 3)
	res := grant(t, v, ps)
	if s, k := state(t, v, res.Lease.ID); s != lease.Active || k != KeyPresent {
		t.Fatalf("after grant: %v %v", s, k)
	}
	// Claiming an unbound lease is refused.
	_, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(digest("sha256:")))
	wantCode(t, err, receipts.LeaseNotActive)
	bind(t, v, res)
	ret := digest("sha256:")
	c1, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(ret))
	if err != nil || c1.Repeated || c1.Lease.State != lease.Claimed {
		t.Fatalf("Claim: %+v, %v", c1, err)
	}
	c2, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(ret))
	if err != nil || !c2.Repeated || c2.Lease.Seq != c1.Lease.Seq {
		t.Fatalf("repeated Claim: %+v, %v", c2, err)
	}
	// A map operation works while CLAIMED.
	if err := v.WithMap(ctx, res.Lease.ID, func(m *Map) error { return nil }); err != nil {
		t.Errorf("WithMap while claimed: %v", err)
	}
	l, err := v.Consume(ctx, principal, res.Lease.ID, claimReq(ret))
	if err != nil || l.State != lease.Consumed || !l.KeyDestroyed {
		t.Fatalf("Consume: %v destroyed=%v, %v", l.State, l.KeyDestroyed, err)
	}
	if s, k := state(t, v, res.Lease.ID); s != lease.Consumed || k != KeyDestroyed {
		t.Errorf("after consume: %v %v", s, k)
	}
	if _, err := os.Stat(filepath.Join(e.keys, "dek", strings.TrimPrefix(res.Lease.ID, "pcl:")+".1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the wrapped key survived consume: %v", err)
	}
	// Single use: everything after is LEASE_NOT_ACTIVE.
	_, err = v.Consume(ctx, principal, res.Lease.ID, claimReq(ret))
	wantCode(t, err, receipts.LeaseNotActive)
	_, err = v.Claim(ctx, principal, res.Lease.ID, claimReq(ret))
	wantCode(t, err, receipts.LeaseNotActive)
	wantCode(t, v.WithMap(ctx, res.Lease.ID, func(*Map) error { return nil }), receipts.LeaseNotActive)
	_, err = v.Revoke(ctx, principal, res.Lease.ID)
	wantCode(t, err, receipts.LeaseNotActive)
	// Unknown leases.
	_, err = v.Show(ctx, "pcl:aaaaaaaaaaaaaaaaaaaaaaaaaa")
	wantErr(t, err, ErrNotFound)
	_, err = v.Show(ctx, "not-a-lease")
	wantErr(t, err, ErrInvalid)
}

func TestBindChecks(t *testing.T) {
	v := newEnv(t).open(t)
	ps, _ := pairsOf("bind", 2)
	res := grant(t, v, ps)
	ex := export(res.Tokens)
	id := res.Lease.ID
	cand := digest("hmac-sha256:")
	tests := []struct {
		name      string
		principal string
		digest    string
		export    []byte
		want      error
	}{
		{"digest mismatch", principal, digest("sha256:"), ex, ErrInvalid},
		{"another principal", "uid:1000", receipts.SHA256(ex), ex, ErrForbidden},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Bind(ctx, tc.principal, id, "evt:seal1", cand, tc.digest, tc.export)
			wantErr(t, err, tc.want)
		})
	}
	short := export(res.Tokens[:1])
	err := v.Bind(ctx, principal, id, "evt:seal1", cand, receipts.SHA256(short), short)
	wantCode(t, err, receipts.PlanMismatch)
	if l, _ := v.Show(ctx, id); l.Lease.Bound() {
		t.Fatalf("a refused bind bound the lease")
	}
	if err := v.Bind(ctx, principal, id, "evt:seal1", cand, receipts.SHA256(ex), ex); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	if err := v.Bind(ctx, principal, id, "evt:seal1", cand, receipts.SHA256(ex), ex); err != nil {
		t.Errorf("repeated identical Bind: %v", err)
	}
	err = v.Bind(ctx, principal, id, "evt:seal2", cand, receipts.SHA256(ex), ex)
	wantCode(t, err, receipts.LeaseNotActive)
}

// TestBindTokens: Bind refuses an export in which a slot does not hold the
// token the lease issued for it, as far as the export shows it — two
// values' tokens swapped, an invented token, an altered mac, another
// lease's token, a token in a slot of another category, a value left in
// clear — each PLAN_MISMATCH at its slot, and the refused lease stays
// unbound (so it can be neither claimed nor rehydrated onto the wrong
// owner). The export the censor would write binds.
func TestBindTokens(t *testing.T) {
	v := newEnv(t).open(t)
	a, b, c := canary("bind-a"), canary("bind-b"), canary("bind-c")
	pairs := []seal.Pair{{Category: "module", Value: a}, {Category: "team", Value: b}, {Category: "module", Value: c}}
	res := grant(t, v, pairs)
	other := grant(t, v, pairs)
	t0, t1, t2 := res.Tokens[0], res.Tokens[1], res.Tokens[2]
	// text puts the tokens of the slots of a, b, c and a again.
	text := func(a1, b, c, a2 string) []byte {
		return vecExport(vecText(a1, b, c, a2))
	}
	altered := t1[:len(t1)-1] + "a"
	if altered == t1 {
		altered = t1[:len(t1)-1] + "b"
	}
	invented := strings.Replace(t0, t0[len(t0)-20:], "aaaaaaaaaaaaaaaaaaaa", 1)
	tests := []struct {
		name   string
		export []byte
		line   int
		reason string
	}{
		{"a and c swapped", text(t2, t1, t0, t2), 1, reasonOrder},
		{"a and b swapped", text(t1, t0, t2, t1), 1, reasonWrongCategory},
		{"invented", text(invented, t1, t2, invented), 1, reasonNotIssued},
		{"altered mac", text(t0, altered, t2, t0), 1, reasonNotIssued},
		{"another lease's token", text(other.Tokens[0], t1, t2, t0), 1, reasonOtherNamespace},
		{"module token in a team slot", text(t0, t2, t2, t0), 1, reasonWrongCategory},
		{"value in clear", text(t0, t1, string(c), t0), 2, reasonNotToken},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Bind(ctx, principal, res.Lease.ID, "evt:seal1", digest("hmac-sha256:"), receipts.SHA256(tc.export), tc.export)
			wantCode(t, err, receipts.PlanMismatch)
			var r *receipts.Refusal
			if !errors.As(err, &r) || r.Reason != tc.reason || r.Line != tc.line || r.Part != 0 || r.Kind != "export" {
				t.Errorf("refusal %+v, want line %d reason %q", r, tc.line, tc.reason)
			}
			for _, s := range [][]byte{a, b, c} {
				if strings.Contains(err.Error(), string(s)) {
					t.Errorf("the error quotes a value")
				}
			}
			if l, _ := v.Show(ctx, res.Lease.ID); l.Lease.Bound() {
				t.Fatalf("a refused export bound the lease")
			}
		})
	}
	// A partial swap that keeps every first appearance (a's second slot
	// given c's token) is not visible to Bind: it binds. The verifier's
	// token-consistency claim is what refuses it.
	partial := text(t0, t1, t2, t2)
	if err := v.Bind(ctx, principal, res.Lease.ID, "evt:seal1", digest("hmac-sha256:"), receipts.SHA256(partial), partial); err != nil {
		t.Errorf("partial swap (documented limit): %v", err)
	}
	good := text(t0, t1, t2, t0)
	if err := v.Bind(ctx, principal, other.Lease.ID, "evt:seal3", digest("hmac-sha256:"), receipts.SHA256(good), good); CodeOf(err) != receipts.PlanMismatch {
		t.Errorf("one lease's export bound to another: %v", err)
	}
	oe := text(other.Tokens[0], other.Tokens[1], other.Tokens[2], other.Tokens[0])
	if err := v.Bind(ctx, principal, other.Lease.ID, "evt:seal3", digest("hmac-sha256:"), receipts.SHA256(oe), oe); err != nil {
		t.Errorf("the censor's export: %v", err)
	}
}

// TestClaimCompareAndSet is C6: the same tuple twice gives identical
// results, a different tuple LEASE_CLAIM_CONFLICT, and concurrent claims
// with distinct tuples exactly one winner.
func TestClaimCompareAndSet(t *testing.T) {
	v := newEnv(t).open(t)
	ps, _ := pairsOf("cas", 1)
	res := grant(t, v, ps)
	bind(t, v, res)
	const n = 12
	rets := make([]string, n)
	for i := range rets {
		rets[i] = digest("sha256:")
	}
	var winners, conflicts atomic.Int32
	var win atomic.Int32
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(rets[i]))
			switch {
			case err == nil:
				winners.Add(1)
				win.Store(int32(i))
			case CodeOf(err) == receipts.LeaseClaimConflict:
				conflicts.Add(1)
			default:
				t.Errorf("claim %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if winners.Load() != 1 || conflicts.Load() != n-1 {
		t.Fatalf("%d winners, %d conflicts; want 1 and %d", winners.Load(), conflicts.Load(), n-1)
	}
	w := rets[win.Load()]
	a, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(w))
	if err != nil {
		t.Fatal(err)
	}
	b, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(w))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("the same claim twice differs (-first +second):\n%s", diff)
	}
	// Other members of the tuple conflict too.
	for _, r := range []ClaimRequest{
		{Run: "run-2", Attempt: 1, Station: "station-a", ReturnDigest: w},
		{Run: "run-1", Attempt: 2, Station: "station-a", ReturnDigest: w},
		{Run: "run-1", Attempt: 1, Station: "station-b", ReturnDigest: w},
	} {
		_, err := v.Claim(ctx, principal, res.Lease.ID, r)
		wantCode(t, err, receipts.LeaseClaimConflict)
	}
	_, err = v.Claim(ctx, "uid:1000", res.Lease.ID, claimReq(w))
	wantCode(t, err, receipts.LeaseClaimConflict)
	_, err = v.Consume(ctx, principal, res.Lease.ID, claimReq(rets[(win.Load()+1)%n]))
	wantCode(t, err, receipts.LeaseClaimConflict)
}

// TestDurabilityInsufficient is C7.
func TestDurabilityInsufficient(t *testing.T) {
	v := newEnv(t).open(t) // MaxLease 2h
	ps, _ := pairsOf("dur", 1)
	tests := []struct {
		name           string
		remote, window uint64
		life           time.Duration
		want           receipts.Code
	}{
		{"need beyond the maximum lease", 3600, 3601, 3 * time.Hour, receipts.LeaseDurabilityInsufficient},
		{"need beyond the requested lifetime", 600, 600, 10 * time.Minute, receipts.LeaseDurabilityInsufficient},
		{"need overflowing", 1 << 62, 1 << 62, time.Hour, receipts.LeaseDurabilityInsufficient},
		{"need exactly the maximum", 3600, 3600, 3 * time.Hour, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := request(t, v, ps)
			req.RemoteDeadlineS, req.ReturnWindowS, req.Lifetime = tc.remote, tc.window, tc.life
			res, err := v.CreateLease(ctx, principal, req)
			if CodeOf(err) != tc.want || (tc.want == "" && err != nil) {
				t.Fatalf("CreateLease: %v, want %q", err, tc.want)
			}
			if tc.want == "" && !res.Lease.Deadline.Equal(res.Lease.CreatedAt.Add(2*time.Hour)) {
				t.Errorf("deadline not capped at the maximum lease")
			}
		})
	}
}

func TestCreateRefusals(t *testing.T) {
	v := newEnv(t).open(t)
	ps, _ := pairsOf("ref", 2)
	other := newEnv(t).open(t)
	tests := []struct {
		name   string
		mutate func(r *CreateRequest)
		code   receipts.Code
		err    error
	}{
		{"prohibited category", func(r *CreateRequest) { r.Values.Categories[0] = "credential" }, receipts.ProhibitedCategory, nil},
		{"unknown category", func(r *CreateRequest) { r.Values.Categories[0] = "email" }, receipts.UnknownCategory, nil},
		{"other station", func(r *CreateRequest) { r.Station = "station-b" }, receipts.PlanMismatch, nil},
		{"tampered value", func(r *CreateRequest) { r.Values.Sealed[3] ^= 1 }, receipts.MalformedRecord, nil},
		{"sealed to another vault", func(r *CreateRequest) {
			st, _ := other.Status()
			r.Values, _ = seal.Seal(st.SealKey, ps)
		}, "", ErrStaleKey},
		{"malformed run", func(r *CreateRequest) { r.Run = "has space" }, "", ErrInvalid},
		{"malformed source digest", func(r *CreateRequest) { r.SourceDigest = "sha256:00" }, "", ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			base := v.arena.Used()
			req := request(t, v, ps)
			tc.mutate(&req)
			_, err := v.CreateLease(ctx, principal, req)
			if CodeOf(err) != tc.code || (tc.err != nil && !errors.Is(err, tc.err)) || err == nil {
				t.Fatalf("CreateLease: %v, want code %q err %v", err, tc.code, tc.err)
			}
			if v.arena.Used() != base {
				t.Errorf("a refused grant left %d bytes in the arena", v.arena.Used()-base)
			}
		})
	}
	if infos, _ := v.List(ctx); len(infos) != 0 {
		t.Errorf("refused grants stored %d leases", len(infos))
	}
}

// laterCanceled is a context that is live for its first n calls of Err and
// canceled after: a caller that goes away while its request is served.
type laterCanceled struct {
	context.Context
	n atomic.Int32
}

func (c *laterCanceled) Err() error {
	if c.n.Add(-1) >= 0 {
		return nil
	}
	return context.Canceled
}

// TestCreateAbandoned: a grant whose caller has gone away by the time the
// map is sealed is not committed (no lease, no wrapped key, the arena as
// before), and the vault still grants the next one.
func TestCreateAbandoned(t *testing.T) {
	v := newEnv(t).open(t)
	ps, _ := pairsOf("gone", 3)
	base := v.arena.Used()
	lc := &laterCanceled{Context: ctx}
	lc.n.Store(1) // the check on entry passes
	_, err := v.CreateLease(lc, principal, request(t, v, ps))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("CreateLease: %v, want context.Canceled", err)
	}
	if infos, _ := v.List(ctx); len(infos) != 0 {
		t.Fatalf("an abandoned grant stored %d leases", len(infos))
	}
	if w, err := v.keys.Wrapped(); err != nil || len(w) != 0 {
		t.Errorf("an abandoned grant left wrapped keys %v (%v)", w, err)
	}
	if v.arena.Used() != base {
		t.Errorf("an abandoned grant left %d bytes in the arena", v.arena.Used()-base)
	}
	grant(t, v, ps)
}

// TestProfileGate: with the profile not accepted every reversible request
// is VAULT_PROFILE_NOT_PROVEN while Status, List, Show, Revoke and Backup
// still answer (P4/P5 in process).
func TestProfileGate(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("gate", 1)
	res := grant(t, v, ps)
	req := request(t, v, ps)

	t.Setenv("GOTRACEBACK", "all")
	p := v.Prove()
	if p.Accepted() || !containsStr(p.Reasons, "traceback") {
		t.Fatalf("GOTRACEBACK=all: profile %s reasons %v", p.Profile, p.Reasons)
	}
	checkGate(t, v, res, req)

	// No arena at all (the size is over the arena's maximum): the vault
	// opens, and the profile names the arena.
	e2 := newEnv(t)
	e2.opt.ArenaSize = 2 << 30
	v2 := e2.openAny(t)
	p2 := v2.Prove()
	if p2.Accepted() || !containsStr(p2.Reasons, "arena") || !containsStr(p2.Reasons, "arena_locked") {
		t.Fatalf("no arena: profile %s reasons %v", p2.Profile, p2.Reasons)
	}
	st, err := v2.Status()
	if err != nil || st.ArenaError == "" || st.SealKey != [32]byte{} {
		t.Errorf("status without arena: %+v, %v", st, err)
	}
	_, err = v2.CreateLease(ctx, principal, req)
	wantCode(t, err, receipts.VaultProfileNotProven)
}

func checkGate(t *testing.T, v *Vault, res CreateResult, req CreateRequest) {
	t.Helper()
	ex := export(res.Tokens)
	refused := map[string]error{
		"create": func() error { _, err := v.CreateLease(ctx, principal, req); return err }(),
		"bind":   v.Bind(ctx, principal, res.Lease.ID, "evt:s", digest("hmac-sha256:"), receipts.SHA256(ex), ex),
		"claim": func() error {
			_, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(digest("sha256:")))
			return err
		}(),
		"consume": func() error {
			_, err := v.Consume(ctx, principal, res.Lease.ID, claimReq(digest("sha256:")))
			return err
		}(),
		"with-map": v.WithMap(ctx, res.Lease.ID, func(*Map) error { return nil }),
		"rotate":   func() error { _, err := v.Rotate(); return err }(),
		"prove":    func() error { _, err := v.ProveErasure(principal, bytes.NewReader(nil), res.Lease.ID, ""); return err }(),
	}
	for op, err := range refused {
		if CodeOf(err) != receipts.VaultProfileNotProven {
			t.Errorf("%s: %v, want VAULT_PROFILE_NOT_PROVEN", op, err)
		}
	}
	if _, err := v.Status(); err != nil {
		t.Errorf("Status: %v", err)
	}
	if _, err := v.List(ctx); err != nil {
		t.Errorf("List: %v", err)
	}
	if _, err := v.Show(ctx, res.Lease.ID); err != nil {
		t.Errorf("Show: %v", err)
	}
	var buf bytes.Buffer
	if _, err := v.Backup(&buf); err != nil {
		t.Errorf("Backup: %v", err)
	}
	l, err := v.Revoke(ctx, principal, res.Lease.ID)
	if err != nil || l.State != lease.Revoked || !l.KeyDestroyed {
		t.Errorf("Revoke: %v %v, %v", l.State, l.KeyDestroyed, err)
	}
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestLeaseLimit: one principal holds at most MaxLeasesPerPrincipal live
// leases, grants in progress included: one more is LIMIT_EXCEEDED (field
// leases) and commits nothing; another principal is not held back; a
// revocation, a consume or an expiry frees a place; the count survives a
// restart; concurrent grants past the limit get exactly the places left.
func TestLeaseLimit(t *testing.T) {
	e := newEnv(t)
	e.opt.MaxLeasesPerPrincipal = 2
	v := e.open(t)
	ps, vals := pairsOf("lim", 1)
	a := grant(t, v, ps)
	b := grant(t, v, ps)
	_, err := v.CreateLease(ctx, principal, request(t, v, ps))
	wantCode(t, err, receipts.LimitExceeded)
	if e, ok := err.(*Error); !ok || e.Field != "leases" || strings.Contains(err.Error(), string(vals[0])) {
		t.Errorf("refusal %v", err)
	}
	if infos, _ := v.List(ctx); len(infos) != 2 {
		t.Errorf("a refused grant committed a lease: %d leases", len(infos))
	}
	if _, err := v.CreateLease(ctx, "uid:1000", request(t, v, ps)); err != nil {
		t.Errorf("another principal: %v", err)
	}
	if _, err := v.Revoke(ctx, principal, a.Lease.ID); err != nil {
		t.Fatal(err)
	}
	c := grant(t, v, ps)
	bind(t, v, c)
	ret := digest("sha256:")
	if _, err := v.Claim(ctx, principal, c.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	// CLAIMED counts as live.
	_, err = v.CreateLease(ctx, principal, request(t, v, ps))
	wantCode(t, err, receipts.LimitExceeded)
	if _, err := v.Consume(ctx, principal, c.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	d := grant(t, v, ps)
	if v.Held(principal) != 2 {
		t.Errorf("held %d, want 2 (b, d)", v.Held(principal))
	}
	// The count survives a restart.
	v.Close()
	v = e.open(t)
	_, err = v.CreateLease(ctx, principal, request(t, v, ps))
	wantCode(t, err, receipts.LimitExceeded)
	// Expiry frees both places.
	e.clock.Add(2 * time.Hour)
	if n, err := v.Sweep(); err != nil || n < 2 {
		t.Fatalf("Sweep: %d expired, %v", n, err)
	}
	if v.Held(principal) != 0 {
		t.Errorf("held %d after b and d expired", v.Held(principal))
	}
	_ = b
	_ = d
	// A grant refused after its place was reserved gives the place back.
	short := request(t, v, ps)
	short.Lifetime = time.Minute
	_, err = v.CreateLease(ctx, principal, short)
	wantCode(t, err, receipts.LeaseDurabilityInsufficient)
	if v.Held(principal) != 0 {
		t.Errorf("a refused grant kept its place: held %d", v.Held(principal))
	}
	// Concurrent grants: exactly the two places are taken.
	var wg sync.WaitGroup
	var won, refused atomic.Int32
	for range 8 {
		wg.Go(func() {
			_, err := v.CreateLease(ctx, principal, request(t, v, ps))
			switch CodeOf(err) {
			case "":
				if err == nil {
					won.Add(1)
				}
			case receipts.LimitExceeded:
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if won.Load() != 2 || refused.Load() != 6 {
		t.Errorf("concurrent grants: %d won, %d refused; want 2 and 6", won.Load(), refused.Load())
	}
}
