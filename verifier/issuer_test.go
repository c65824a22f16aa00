package verifier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier/internal/cuttest"
)

// issuedParts: three values of two categories, one of them twice, one
// written with escapes.
var issuedParts = []testPart{{"block", "k",
	"finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module=\"git.corp.example/pay/ledger\" owner.team=\"pay core\"\n" +
		"finding GO-2024-2687 golang.org/x/crypto@v0.14.0 fixed https://go.dev/issue/63417 owner.module=\"git.corp.example/id/sso\" owner.team=\"a \\\"b\\\" c\" owner.module=\"git.corp.example/pay/ledger\"\n"}}

// The honest tokens cuttest issues for issuedParts.
const (
	tokLedger = "pcv:abcdefghij:module:qqqqqqqqqqqqqqqqqqqb"
	tokSSO    = "pcv:abcdefghij:module:qqqqqqqqqqqqqqqqqqqc"
	tokPay    = "pcv:abcdefghij:team:qqqqqqqqqqqqqqqqqqqb"
)

// reversibleCut makes a reversible cut of issuedParts whose tokens, all
// digests bound to them, are the honest ones mapped by tokens (nil: kept).
func reversibleCut(t *testing.T, tokens map[string]string) Request {
	t.Helper()
	return makeCut(t, issuedParts, cutOptions{Mode: receipts.ModeReversible, Token: func(_ int, tok string) string {
		if to, ok := tokens[tok]; ok {
			return to
		}
		return tok
	}})
}

// TestVerifyIssuedTokens: in a reversible cut made consistently around its
// tokens (each value keeps one token, every digest and receipt bound to
// them), a token that is not the one the vault issued for its slot's value
// fails token-consistency, and nothing else; the issuer is asked about the
// source's distinct values in order of first appearance, as they read.
func TestVerifyIssuedTokens(t *testing.T) {
	const invented = "pcv:abcdefghij:module:zzzzzzzzzzzzzzzzzzzz"
	for _, tc := range []struct {
		name   string
		tokens map[string]string
		pass   bool
	}{
		{"a genuine cut", nil, true},
		{"tokens swapped between two values", map[string]string{tokLedger: tokSSO, tokSSO: tokLedger}, false},
		{"a mac altered", map[string]string{tokPay: tokPay[:len(tokPay)-1] + "x"}, false},
		{"an invented token", map[string]string{tokSSO: invented}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := reversibleCut(t, tc.tokens)
			v := Verify(req)
			checkShape(t, v)
			want := []string{receipts.ClaimTokenConsistent}
			if tc.pass {
				want = []string{}
			}
			if diff := cmp.Diff(want, failedClaims(v)); diff != "" {
				t.Fatalf("failed claims (-want +got):\n%s\n%+v", diff, v.Claims)
			}
			d := v.Claims[cTokens].Detail
			if !tc.pass && !strings.Contains(d, "not issued under the lease for its value: part 0 line ") {
				t.Errorf("token-consistency %q", d)
			}
			checkContentFreeVerification(t, v, "git.corp.example", "pay core", `"b"`, "qqqqqqqqq", "zzzzzzzzzz")
			f := req.Issuer.(*fakeIssuer)
			if len(f.asked) != 1 {
				t.Fatalf("issuer asked %d times", len(f.asked))
			}
			var got []string
			for _, p := range f.asked[0] {
				got = append(got, p.Category+"="+string(p.Value))
			}
			if diff := cmp.Diff([]string{"module=git.corp.example/pay/ledger", "team=pay core", "module=git.corp.example/id/sso", `team=a "b" c`}, got); diff != "" {
				t.Fatalf("pairs asked (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVerifyTokenOfAnotherLease: a cut whose tokens are all another lease's
// (each well formed, one namespace, consistent) fails when its lease is
// asked.
func TestVerifyTokenOfAnotherLease(t *testing.T) {
	other := map[string]string{}
	for _, tok := range []string{tokLedger, tokSSO, tokPay, "pcv:abcdefghij:team:qqqqqqqqqqqqqqqqqqqc"} {
		other[tok] = strings.Replace(tok, "abcdefghij", "klmnopqrst", 1)
	}
	req := reversibleCut(t, other)
	f := req.Issuer.(*fakeIssuer)
	// The other lease did issue those tokens.
	f.issued["pcl:other"] = map[[2]string]string{}
	for k, tok := range f.issued[req.Lease] {
		f.issued["pcl:other"][k] = other[tok]
	}
	if got := failedClaims(Verify(req)); !slices.Equal(got, []string{receipts.ClaimTokenConsistent}) {
		t.Fatalf("asked under its own lease: failed %v", got)
	}
	req.Lease = "pcl:other"
	if got := failedClaims(Verify(req)); len(got) != 0 {
		t.Fatalf("asked under the lease that issued them: failed %v", got)
	}
}

// TestVerifyIssuerCannotAnswer: without an issuer, or when it cannot
// answer, token-consistency fails naming why, and the error's text never
// reaches the verification.
func TestVerifyIssuerCannotAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(r *Request)
		detail string
	}{
		{"no issuer", func(r *Request) { r.Issuer = nil }, "no issuer given"},
		{"no lease", func(r *Request) { r.Lease = "" }, "no lease given"},
		{"lease ended", func(r *Request) {
			r.Issuer.(*fakeIssuer).err = fmt.Errorf("vault: lease pcl:secret: %w", &IssuerError{Code: receipts.LeaseNotActive})
		}, "token issuer: refused LEASE_NOT_ACTIVE"},
		{"vault unreachable", func(r *Request) {
			r.Issuer.(*fakeIssuer).err = fmt.Errorf("dial /run/secret.sock: %w", ErrIssuerUnavailable)
		}, "token issuer: unavailable"},
		{"another error", func(r *Request) { r.Issuer.(*fakeIssuer).err = errors.New("pay core") }, "token issuer: no answer"},
		{"a code outside the set", func(r *Request) {
			r.Issuer.(*fakeIssuer).err = &IssuerError{Code: "pay core"}
		}, "token issuer: no answer"},
		{"canceled", func(r *Request) { r.Issuer.(*fakeIssuer).err = context.Canceled }, "token issuer: canceled"},
		{"an answer short of one", func(r *Request) { r.Issuer.(*fakeIssuer).short = true }, "answered for 3 of 4 values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := reversibleCut(t, nil)
			tc.change(&req)
			v := Verify(req)
			if got := failedClaims(v); !slices.Equal(got, []string{receipts.ClaimTokenConsistent}) {
				t.Fatalf("failed %v", got)
			}
			if d := v.Claims[cTokens].Detail; !strings.Contains(d, tc.detail) {
				t.Fatalf("token-consistency %q, want %q", d, tc.detail)
			}
			checkContentFreeVerification(t, v, "pay core", "secret", "git.corp")
		})
	}
}

// TestVerifyIssuerNotAsked: the issuer is asked about reversible cuts
// whose tokens are otherwise in order only.
func TestVerifyIssuerNotAsked(t *testing.T) {
	irr := makeCut(t, issuedParts, cutOptions{})
	f := &fakeIssuer{}
	irr.Issuer, irr.Lease = f, "pcl:x"
	if got := failedClaims(Verify(irr)); len(got) != 0 || len(f.asked) != 0 {
		t.Fatalf("irreversible: failed %v, issuer asked %d times", got, len(f.asked))
	}
	// One value with two tokens: inconsistent before any issuer is asked.
	occ := 0
	bad := makeCut(t, issuedParts, cutOptions{Mode: receipts.ModeReversible, Token: func(_ int, tok string) string {
		occ++
		if occ == 5 { // the second slot of the first module value
			return tokSSO
		}
		return tok
	}})
	v := Verify(bad)
	if got := failedClaims(v); !slices.Equal(got, []string{receipts.ClaimTokenConsistent}) || len(bad.Issuer.(*fakeIssuer).asked) != 0 {
		t.Fatalf("failed %v, issuer asked %d times: %+v", got, len(bad.Issuer.(*fakeIssuer).asked), v.Claims[cTokens])
	}
}

// clearIssuer keeps the pairs it was given, to look at them once Verify has
// returned.
type clearIssuer struct{ pairs []Pair }

func (c *clearIssuer) Issued(_ context.Context, _ string, pairs []Pair) ([]bool, error) {
	c.pairs = pairs
	ok := make([]bool, len(pairs))
	for i := range ok {
		ok[i] = true
	}
	return ok, nil
}

// TestVerifyClearsIssuerValues: the values given to the issuer are cleared
// once it has answered, and a Pair prints redacted.
func TestVerifyClearsIssuerValues(t *testing.T) {
	req := reversibleCut(t, nil)
	ci := &clearIssuer{}
	req.Issuer = ci
	if got := failedClaims(Verify(req)); len(got) != 0 {
		t.Fatalf("failed %v", got)
	}
	if len(ci.pairs) != 4 {
		t.Fatalf("%d pairs", len(ci.pairs))
	}
	for i, p := range ci.pairs {
		if strings.Trim(string(p.Value), "\x00") != "" {
			t.Errorf("pair %d: value not cleared", i)
		}
	}
	p := Pair{Category: "team", Value: receipts.Plaintext("pay core"), Token: tokPay}
	for _, s := range []string{fmt.Sprint(p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p), fmt.Sprintf("%s", []Pair{p})} {
		if strings.Contains(s, "pay core") {
			t.Errorf("a Pair prints its value: %s", s)
		}
	}
}

// TestReversibleForgeryVectors: the generator's reversible forgeries, whose
// tokens are consistent and every digest rebound, fail token-consistency
// only, through the issuer: answered "issued" for every token, they would
// pass every claim.
func TestReversibleForgeryVectors(t *testing.T) {
	vs := map[string]cuttest.Vector{}
	for _, v := range cuttest.LoadVectors(t, "testdata/vectors", 14) {
		vs[v.Name] = v
	}
	for _, name := range []string{"reversible-tokens-swapped-consistently", "reversible-mac-altered"} {
		t.Run(name, func(t *testing.T) {
			v, ok := vs[name]
			if !ok {
				t.Fatal("no such vector")
			}
			req := vectorRequest(t, v)
			got := Verify(req)
			if diff := cmp.Diff([]string{receipts.ClaimTokenConsistent}, failedClaims(got)); diff != "" {
				t.Fatalf("failed claims (-want +got):\n%s\n%+v", diff, got.Claims)
			}
			if !strings.Contains(got.Claims[cTokens].Detail, "not issued under the lease") {
				t.Fatalf("token-consistency %q", got.Claims[cTokens].Detail)
			}
			req.Issuer = &clearIssuer{}
			if got := failedClaims(Verify(req)); len(got) != 0 {
				t.Fatalf("with every token answered issued: failed %v", got)
			}
		})
	}
}

// TestGranted: a grant reply answers for the pairs in its order, under its
// lease: the honest tokens are issued; a swap, a reordering, another lease
// or another number of values are not.
func TestGranted(t *testing.T) {
	req := reversibleCut(t, nil)
	grant := []string{tokLedger, tokPay, tokSSO, "pcv:abcdefghij:team:qqqqqqqqqqqqqqqqqqqc"}
	for _, tc := range []struct {
		name   string
		grant  *Granted
		tokens map[string]string // the cut's tokens, swapped
		pass   bool
	}{
		{"the grant", &Granted{Lease: req.Lease, Tokens: grant}, nil, true},
		{"tokens swapped in the cut", &Granted{Lease: req.Lease, Tokens: grant}, map[string]string{tokLedger: tokSSO, tokSSO: tokLedger}, false},
		{"another order", &Granted{Lease: req.Lease, Tokens: []string{grant[2], grant[1], grant[0], grant[3]}}, nil, false},
		{"another lease", &Granted{Lease: "pcl:other", Tokens: grant}, nil, false},
		{"one token fewer", &Granted{Lease: req.Lease, Tokens: grant[:3]}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := reversibleCut(t, tc.tokens)
			r.Issuer = tc.grant
			got := failedClaims(Verify(r))
			want := []string{receipts.ClaimTokenConsistent}
			if tc.pass {
				want = []string{}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("failed claims (-want +got):\n%s", diff)
			}
		})
	}
}
