package service

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/seal"
)

// sealPairs seals pairs to v as a client seals a grant's values.
func sealPairs(t *testing.T, v *Vault, ps []seal.Pair) seal.Request {
	t.Helper()
	st, err := v.Status()
	if err != nil {
		t.Fatal(err)
	}
	r, err := seal.Seal(st.SealKey, ps)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestIssued: for each sealed pair the vault answers whether the token
// beside it is the one this lease issued for it. The censor's pairing is
// all true; a swap, an invented token, an altered mac, another lease's
// token, another category's token, the right token beside another value
// are false, pair by pair. The values and map are wiped afterwards; the
// refusals (a terminal lease, another principal, a malformed request, an
// unproven profile) carry codes and no value.
func TestIssued(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	a, b, c := canary("iss-a"), canary("iss-b"), canary("iss-c")
	ps := []seal.Pair{{Category: "module", Value: a}, {Category: "team", Value: b}, {Category: "module", Value: c}}
	res := grant(t, v, ps)
	other := grant(t, v, ps)
	t0, t1, t2 := res.Tokens[0], res.Tokens[1], res.Tokens[2]
	altered := t1[:len(t1)-1] + "a"
	if altered == t1 {
		altered = t1[:len(t1)-1] + "b"
	}
	issued := func(t *testing.T, ps []seal.Pair, tokens []string) []bool {
		t.Helper()
		got, err := v.Issued(ctx, principal, res.Lease.ID, sealPairs(t, v, ps), tokens)
		if err != nil {
			t.Fatalf("Issued: %v", err)
		}
		return got
	}
	tests := []struct {
		name   string
		pairs  []seal.Pair
		tokens []string
		want   []bool
	}{
		{"the censor's pairing", ps, res.Tokens, []bool{true, true, true}},
		{"a repeated pair", []seal.Pair{ps[0], ps[0]}, []string{t0, t0}, []bool{true, true}},
		{"a and c swapped", ps, []string{t2, t1, t0}, []bool{false, true, false}},
		{"a and b swapped", ps, []string{t1, t0, t2}, []bool{false, false, true}},
		{"invented", ps[:1], []string{t0[:len(t0)-20] + "aaaaaaaaaaaaaaaaaaaa"}, []bool{false}},
		{"altered mac", ps[1:2], []string{altered}, []bool{false}},
		{"another lease's token", ps, other.Tokens, []bool{false, false, false}},
		{"category renamed", ps[:1], []string{strings.Replace(t0, ":module:", ":package:", 1)}, []bool{false}},
		{"pair of another category", []seal.Pair{{Category: "package", Value: a}}, []string{t0}, []bool{false}},
		{"another value", []seal.Pair{{Category: "module", Value: c}}, []string{t0}, []bool{false}},
		{"a prefix of the value", []seal.Pair{{Category: "module", Value: a[:len(a)-1]}}, []string{t0}, []bool{false}},
		{"not a token", ps[:1], []string{"redacted:module:1"}, []bool{false}},
		{"nothing asked", nil, nil, []bool{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, issued(t, tc.pairs, tc.tokens)); diff != "" {
				t.Errorf("issued (-want +got):\n%s", diff)
			}
		})
	}
	size := v.arena.Size()
	if !v.arena.IsZero(liveKeys, size-liveKeys) || v.arena.Used() != liveKeys {
		t.Errorf("the arena holds more than the long-lived keys after Issued (%d bytes used)", v.arena.Used())
	}

	// Refusals.
	_, err := v.Issued(ctx, "uid:1000", res.Lease.ID, sealPairs(t, v, ps), res.Tokens)
	wantErr(t, err, ErrForbidden)
	_, err = v.Issued(ctx, principal, res.Lease.ID, sealPairs(t, v, ps), res.Tokens[:2])
	wantErr(t, err, ErrInvalid)
	_, err = v.Issued(ctx, principal, res.Lease.ID, sealPairs(t, v, []seal.Pair{{Category: "credential", Value: a}}), []string{t0})
	wantCode(t, err, receipts.ProhibitedCategory)
	_, err = v.Issued(ctx, principal, "pcl:aaaaaaaaaaaaaaaaaaaaaaaaaa", sealPairs(t, v, ps), res.Tokens)
	wantErr(t, err, ErrNotFound)
	if _, err := v.Revoke(ctx, principal, res.Lease.ID); err != nil {
		t.Fatal(err)
	}
	_, err = v.Issued(ctx, principal, res.Lease.ID, sealPairs(t, v, ps), res.Tokens)
	wantCode(t, err, receipts.LeaseNotActive)
	for _, s := range [][]byte{a, b, c} {
		if strings.Contains(err.Error(), string(s)) {
			t.Errorf("the refusal names a value")
		}
	}
	// A claimed lease still answers.
	bind(t, v, other)
	if _, err := v.Claim(ctx, principal, other.Lease.ID, claimReq(digest("sha256:"))); err != nil {
		t.Fatal(err)
	}
	got, err := v.Issued(ctx, principal, other.Lease.ID, sealPairs(t, v, ps), other.Tokens)
	if err != nil || !cmp.Equal(got, []bool{true, true, true}) {
		t.Errorf("claimed lease: %v, %v", got, err)
	}
	// The profile gate.
	t.Setenv("GOTRACEBACK", "all")
	v.Prove()
	_, err = v.Issued(ctx, principal, other.Lease.ID, sealPairs(t, v, ps), other.Tokens)
	wantCode(t, err, receipts.VaultProfileNotProven)
}

// TestTokenUnpredictability: tokens keep at least 96 bits of keyed
// unpredictability (the mac is 20 base32 characters: 100 bits of
// HMAC-SHA256 under a random per-lease key) and are never derived from the
// value alone: the same (category, value) gets unrelated macs in two
// leases.
func TestTokenUnpredictability(t *testing.T) {
	if macLen*5 < 96 {
		t.Fatalf("mac of %d base32 characters holds %d bits, under 96", macLen, macLen*5)
	}
	v := newEnv(t).open(t)
	ps := []seal.Pair{{Category: "module", Value: canary("unp")}}
	seen := map[string]bool{}
	for range 8 {
		tok := grant(t, v, ps).Tokens[0]
		m := tokenRE.FindStringSubmatch(tok)
		if m == nil {
			t.Fatalf("token %q not of the documented form", tok)
		}
		mac := tok[len(tok)-macLen:]
		if seen[mac] {
			t.Fatalf("two leases gave one value the same mac")
		}
		seen[mac] = true
	}
}
