package service

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// rhSchema marks owner_module (modules) and owner_team (teams) for the
// purpose the test leases carry, at most 3 substitutions each; advice and
// summary are prose.
const rhSchema = `{"type":"object","additionalProperties":false,"required":["findings"],"properties":{
  "summary":{"type":"string","maxLength":4000},
  "findings":{"type":"array","maxItems":50,"items":{"type":"object","additionalProperties":false,"required":["advice"],"properties":{
    "owner_module":{"type":"string","maxLength":128,"x-privacycut-rehydrate":{"category":"module","purpose":"dependency-triage","max":3}},
    "owner_team":{"type":"string","maxLength":128,"x-privacycut-rehydrate":{"category":"team","purpose":"dependency-triage","max":3}},
    "advice":{"type":"string","maxLength":4000}}}}}}`

// finding is one entry of a return or an output shaped by rhSchema.
type finding struct {
	OwnerModule string `json:"owner_module,omitempty"`
	OwnerTeam   string `json:"owner_team,omitempty"`
	Advice      string `json:"advice"`
}

type answer struct {
	Summary  string    `json:"summary,omitempty"`
	Findings []finding `json:"findings"`
}

func (a answer) bytes(t testing.TB) []byte {
	t.Helper()
	b, err := canon.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rhLease is a granted and bound lease over two modules and a team, with
// its tokens and values by name.
type rhLease struct {
	res    CreateResult
	tokens map[string]string // "mod0", "mod1", "team0" → token
	values map[string][]byte // the same names → value
}

var rhNames = []string{"mod0", "mod1", "team0"}

// rhPairs returns fresh canary values for rhNames.
func rhPairs() []seal.Pair {
	return []seal.Pair{
		{Category: "module", Value: canary("mod0")},
		{Category: "module", Value: canary("mod1")},
		{Category: "team", Value: canary("team0")},
	}
}

func grantRH(t *testing.T, v *Vault, ps []seal.Pair) rhLease {
	t.Helper()
	res := grant(t, v, ps)
	bind(t, v, res)
	l := rhLease{res: res, tokens: map[string]string{}, values: map[string][]byte{}}
	for i, n := range rhNames {
		l.tokens[n], l.values[n] = res.Tokens[i], ps[i].Value
	}
	return l
}

// honest is an answer that puts every token at a path marked for it.
func (l rhLease) honest() answer {
	return answer{Summary: "two modules need an upgrade", Findings: []finding{
		{OwnerModule: l.tokens["mod0"], OwnerTeam: l.tokens["team0"], Advice: "upgrade golang.org/x/net to v0.17.0"},
		{OwnerModule: l.tokens["mod1"], Advice: "no action"},
	}}
}

// restored is the honest answer with the values in place of the tokens.
func (l rhLease) restored() answer {
	return answer{Summary: "two modules need an upgrade", Findings: []finding{
		{OwnerModule: string(l.values["mod0"]), OwnerTeam: string(l.values["team0"]), Advice: "upgrade golang.org/x/net to v0.17.0"},
		{OwnerModule: string(l.values["mod1"]), Advice: "no action"},
	}}
}

// evidence is a fresh evidence key.
func evidence(t testing.TB) *receipts.EvidenceKey {
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

// rhReq is a rehydration request for ret under lease id, with the evidence
// key sealed to v.
func rhReq(t testing.TB, v *Vault, id string, ret []byte, ek *receipts.EvidenceKey) RehydrateRequest {
	t.Helper()
	st, err := v.Status()
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := vaultapi.SealEvidenceKey(st.SealKey, ek)
	if err != nil {
		t.Fatalf("SealEvidenceKey: %v", err)
	}
	return RehydrateRequest{
		Lease: id, Claim: claimReq(receipts.SHA256(ret)), Schema: []byte(rhSchema), Return: ret,
		CutExpiry: t0.Add(90 * time.Minute), Retention: rehydrate.RetentionSession,
		PolicyRevision: "policy/7", VerifierRevision: "verifier/1",
		LabelDigest: "hmac-sha256:" + strings.Repeat("ab", 32), EvidenceKey: sealed,
	}
}

// noSecrets fails if b holds a value or a token of l.
func (l rhLease) noSecrets(t *testing.T, what string, b []byte) {
	t.Helper()
	for _, n := range rhNames {
		if bytes.Contains(b, l.values[n]) {
			t.Errorf("%s holds the value of %s", what, n)
		}
		if bytes.Contains(b, []byte(l.tokens[n])) {
			t.Errorf("%s holds the token of %s", what, n)
		}
	}
}

// TestRehydrate: an honest return is substituted at its marked paths, the
// receipt holds digests and counts only (final_digest keyed), the lease
// ends CONSUMED with its key destroyed, and a replay is LEASE_NOT_ACTIVE.
func TestRehydrate(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	l := grantRH(t, v, rhPairs())
	ek := evidence(t)
	ret := l.honest().bytes(t)
	req := rhReq(t, v, l.res.Lease.ID, ret, ek)
	e.clock.Add(10 * time.Minute)
	res, err := v.Rehydrate(ctx, principal, req)
	if err != nil {
		t.Fatalf("Rehydrate: %v", err)
	}
	want := l.restored().bytes(t)
	if !bytes.Equal(res.Output, want) {
		t.Errorf("output:\n%s\nwant:\n%s", res.Output, want)
	}
	now := t0.Add(10 * time.Minute)
	wantRc := receipts.RehydrationReceipt{
		Schema: receipts.SchemaRehydration, CutEvent: "evt:seal1", Lease: l.res.Lease.ID,
		ReturnDigest: receipts.SHA256(ret), FinalDigest: ek.HMAC(want),
		Substitutions:    map[string]int{"module": 2, "team": 1},
		VerifierRevision: "verifier/1", PolicyRevision: "policy/7", LabelDigest: req.LabelDigest,
		// min(lease deadline t0+1h, cut expiry t0+90m, now+24h)
		PurgeAt:            l.res.Lease.Deadline.Format(time.RFC3339Nano),
		RehydratedAt:       now.Format(time.RFC3339Nano),
		OutputSchemaDigest: rhSchemaDigest(t),
	}
	if diff := cmp.Diff(wantRc, res.Receipt); diff != "" {
		t.Errorf("receipt (-want +got):\n%s", diff)
	}
	rc, err := canon.Marshal(res.Receipt)
	if err != nil {
		t.Fatal(err)
	}
	l.noSecrets(t, "receipt", rc)
	if res.Lease.State != lease.Consumed || !res.Lease.KeyDestroyed {
		t.Errorf("lease after rehydration: %v, key destroyed %v", res.Lease.State, res.Lease.KeyDestroyed)
	}
	if s, k := state(t, v, l.res.Lease.ID); s != lease.Consumed || k != KeyDestroyed {
		t.Errorf("stored lease: %v %v", s, k)
	}
	if _, err := os.Stat(wrapFile(e, l.res.Lease.ID, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the consumed lease's wrapped key survived: %v", err)
	}
	// Replay after consume, same tuple.
	_, err = v.Rehydrate(ctx, principal, rhReq(t, v, l.res.Lease.ID, ret, ek))
	wantCode(t, err, receipts.LeaseNotActive)
}

// TestRehydratePurgeAt: purge_at = min(lease deadline, cut expiry, now +
// retention maximum), each bound in turn the smallest. The lease lives 90
// minutes; the rehydration happens at t0.
func TestRehydratePurgeAt(t *testing.T) {
	tests := []struct {
		name      string
		cutExpiry time.Duration // after t0
		retention string
		want      time.Duration // purge_at after t0
	}{
		{"lease deadline", 3 * time.Hour, rehydrate.RetentionSession, 90 * time.Minute},
		{"cut expiry", 40 * time.Minute, rehydrate.RetentionShort, 40 * time.Minute},
		{"retention", 3 * time.Hour, rehydrate.RetentionNone, time.Hour},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t).open(t)
			ps := rhPairs()
			cr := request(t, v, ps)
			cr.Lifetime = 90 * time.Minute
			res, err := v.CreateLease(ctx, principal, cr)
			if err != nil {
				t.Fatal(err)
			}
			bind(t, v, res)
			l := rhLease{res: res, tokens: map[string]string{}, values: map[string][]byte{}}
			for i, n := range rhNames {
				l.tokens[n], l.values[n] = res.Tokens[i], ps[i].Value
			}
			req := rhReq(t, v, res.Lease.ID, l.honest().bytes(t), evidence(t))
			req.CutExpiry, req.Retention = t0.Add(tc.cutExpiry), tc.retention
			out, err := v.Rehydrate(ctx, principal, req)
			if err != nil {
				t.Fatalf("Rehydrate: %v", err)
			}
			purge, err := time.Parse(time.RFC3339Nano, out.Receipt.PurgeAt)
			if err != nil {
				t.Fatal(err)
			}
			keep, _ := rehydrate.RetentionMax(tc.retention)
			bound := minT(res.Lease.Deadline, minT(req.CutExpiry, t0.Add(keep)))
			if purge.After(bound) {
				t.Errorf("purge_at %v after min(deadline, cut expiry, now+retention) = %v", purge, bound)
			}
			if !purge.Equal(t0.Add(tc.want)) {
				t.Errorf("purge_at %v, want %v", purge, t0.Add(tc.want))
			}
		})
	}
}

func minT(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// nearMiss is an adversarial return built from two leases over the SAME
// values: l (the one rehydrated) and other (a second lease, whose tokens
// differ because every lease has a fresh namespace).
type nearMiss struct {
	name string
	ret  func(l, other rhLease) answer
	code receipts.Code
	path string
}

// flipCase swaps the case of every letter.
func flipCase(s string) string {
	b := []byte(s)
	for i, c := range b {
		switch {
		case c >= 'a' && c <= 'z':
			b[i] = c - 32
		case c >= 'A' && c <= 'Z':
			b[i] = c + 32
		}
	}
	return string(b)
}

// oneEdit changes the token's last mac character.
func oneEdit(tok string) string {
	last := tok[len(tok)-1]
	rep := byte('a')
	if last == 'a' {
		rep = 'b'
	}
	return tok[:len(tok)-1] + string(rep)
}

var nearMisses = []nearMiss{
	{"one edit away", func(l, _ rhLease) answer {
		a := l.honest()
		a.Findings[0].OwnerModule = oneEdit(l.tokens["mod0"])
		return a
	}, receipts.TokenNotIssued, "$.findings[0].owner_module"},
	{"case flipped", func(l, _ rhLease) answer {
		a := l.honest()
		a.Findings[1].OwnerModule = flipCase(l.tokens["mod1"])
		return a
	}, receipts.TokenNotIssued, "$.findings[1].owner_module"},
	{"HTML escaped", func(l, _ rhLease) answer {
		a := l.honest()
		a.Findings[0].OwnerTeam = strings.ReplaceAll(l.tokens["team0"], ":", "&#58;")
		return a
	}, receipts.TokenNotIssued, "$.findings[0].owner_team"},
	{"whitespace padded", func(l, _ rhLease) answer {
		a := l.honest()
		a.Findings[0].OwnerModule = " " + l.tokens["mod0"]
		return a
	}, receipts.TokenNotIssued, "$.findings[0].owner_module"},
	{"truncated", func(l, _ rhLease) answer {
		a := l.honest()
		a.Findings[1].OwnerModule = l.tokens["mod1"][:len(l.tokens["mod1"])-1]
		return a
	}, receipts.TokenNotIssued, "$.findings[1].owner_module"},
	{"split across values", func(l, _ rhLease) answer {
		tok := l.tokens["mod0"]
		a := l.honest()
		a.Findings[0].OwnerModule = tok[:20]
		a.Findings[1].OwnerModule = tok[20:]
		return a
	}, receipts.TokenNotIssued, "$.findings[0].owner_module"},
	{"wrong category", func(l, _ rhLease) answer {
		a := l.honest()
		a.Findings[0].OwnerModule = l.tokens["team0"]
		return a
	}, receipts.TokenWrongCategory, "$.findings[0].owner_module"},
	{"forged category, real mac", func(l, _ rhLease) answer {
		a := l.honest()
		a.Findings[0].OwnerTeam = strings.Replace(l.tokens["mod0"], ":module:", ":team:", 1)
		return a
	}, receipts.TokenNotIssued, "$.findings[0].owner_team"},
	{"another lease's token, same value", func(l, other rhLease) answer {
		a := l.honest()
		a.Findings[1].OwnerModule = other.tokens["mod1"]
		return a
	}, receipts.TokenOtherNamespace, "$.findings[1].owner_module"},
	{"exact token at an unmarked path", func(l, _ rhLease) answer {
		a := l.honest()
		a.Findings[1].Advice = l.tokens["mod1"]
		return a
	}, receipts.TokenWrongPath, "$.findings[1].advice"},
	{"exact token in the summary", func(l, _ rhLease) answer {
		a := l.honest()
		a.Summary = l.tokens["team0"]
		return a
	}, receipts.TokenWrongPath, "$.summary"},
	{"irreversible token", func(l, _ rhLease) answer {
		a := l.honest()
		a.Findings[0].OwnerModule = "redacted:module:1"
		return a
	}, receipts.TokenNotIssued, "$.findings[0].owner_module"},
	{"over cardinality", func(l, _ rhLease) answer {
		a := l.honest()
		for range 2 {
			a.Findings = append(a.Findings, finding{OwnerModule: l.tokens["mod0"], Advice: "again"})
		}
		return a
	}, receipts.TokenOverCardinality, "$.findings[3].owner_module"},
}

// TestRehydrateNearMisses: each near miss refuses the whole return with its
// code and JSON path, returns no output, names neither a token nor a
// value, and leaves the lease CLAIMED by the tuple, which may retry (and
// gets the same refusal, the lease unchanged).
func TestRehydrateNearMisses(t *testing.T) {
	for _, tc := range nearMisses {
		t.Run(tc.name, func(t *testing.T) {
			v := newEnv(t).open(t)
			ps := rhPairs()
			l := grantRH(t, v, ps)
			other := grantRH(t, v, ps)
			ret := tc.ret(l, other).bytes(t)
			req := rhReq(t, v, l.res.Lease.ID, ret, evidence(t))
			var first lease.Lease
			for try := range 2 {
				res, err := v.Rehydrate(ctx, principal, req)
				wantCode(t, err, tc.code)
				var r *receipts.Refusal
				if !errors.As(err, &r) || r.Path != tc.path {
					t.Fatalf("try %d: %v: want a *receipts.Refusal at %s", try, err, tc.path)
				}
				if r.Line < 1 || r.Column < 1 || r.Length < 1 {
					t.Errorf("refusal without a position: %+v", r)
				}
				if res.Output != nil {
					t.Errorf("a refused return produced output")
				}
				l.noSecrets(t, "error", []byte(err.Error()))
				other.noSecrets(t, "error", []byte(err.Error()))
				in, err := v.Show(ctx, l.res.Lease.ID)
				if err != nil {
					t.Fatal(err)
				}
				if in.Lease.State != lease.Claimed || in.Key != KeyPresent || in.Lease.ClaimedBy.ReturnDigest != receipts.SHA256(ret) {
					t.Fatalf("try %d: lease %v key %v after a refusal, want CLAIMED by the tuple", try, in.Lease.State, in.Key)
				}
				if try == 0 {
					first = in.Lease
				} else if diff := cmp.Diff(first, in.Lease); diff != "" {
					t.Errorf("the retry changed the lease (-first +retry):\n%s", diff)
				}
			}
			// The other lease was never touched.
			if s, _ := state(t, v, other.res.Lease.ID); s != lease.Active {
				t.Errorf("the other lease is %v", s)
			}
		})
	}
}

// TestRehydrateClaims: a return whose digest differs from a standing claim
// is LEASE_CLAIM_CONFLICT; a claim made beforehand with the same tuple is
// idempotent (the rehydration proceeds); a request whose claimed digest is
// not the return's is refused before anything is claimed.
func TestRehydrateClaims(t *testing.T) {
	v := newEnv(t).open(t)
	ek := evidence(t)

	l := grantRH(t, v, rhPairs())
	ret := l.honest().bytes(t)
	if _, err := v.Claim(ctx, principal, l.res.Lease.ID, claimReq(receipts.SHA256(ret))); err != nil {
		t.Fatal(err)
	}
	other := l.honest()
	other.Summary = "another answer"
	_, err := v.Rehydrate(ctx, principal, rhReq(t, v, l.res.Lease.ID, other.bytes(t), ek))
	wantCode(t, err, receipts.LeaseClaimConflict)
	// Same tuple as the standing claim: idempotent.
	res, err := v.Rehydrate(ctx, principal, rhReq(t, v, l.res.Lease.ID, ret, ek))
	if err != nil || res.Lease.State != lease.Consumed {
		t.Fatalf("Rehydrate with the claimed tuple: %v", err)
	}

	// Another principal, run or station: LEASE_CLAIM_CONFLICT.
	m := grantRH(t, v, rhPairs())
	ret = m.honest().bytes(t)
	_, err = v.Rehydrate(ctx, "uid:4242", rhReq(t, v, m.res.Lease.ID, ret, ek))
	wantCode(t, err, receipts.LeaseClaimConflict)
	req := rhReq(t, v, m.res.Lease.ID, ret, ek)
	req.Claim.Run = "run-2"
	_, err = v.Rehydrate(ctx, principal, req)
	wantCode(t, err, receipts.LeaseClaimConflict)

	// A claimed digest that is not the return's: refused, nothing claimed.
	req = rhReq(t, v, m.res.Lease.ID, ret, ek)
	req.Claim.ReturnDigest = receipts.SHA256([]byte("something else"))
	_, err = v.Rehydrate(ctx, principal, req)
	wantErr(t, err, ErrInvalid)
	if s, _ := state(t, v, m.res.Lease.ID); s != lease.Active {
		t.Errorf("a malformed request left the lease %v", s)
	}
	// An unbound lease cannot be claimed.
	u := grant(t, v, rhPairs())
	_, err = v.Rehydrate(ctx, principal, rhReq(t, v, u.Lease.ID, ret, ek))
	wantCode(t, err, receipts.LeaseNotActive)
	if _, err := v.Rehydrate(ctx, principal, rhReq(t, v, m.res.Lease.ID, ret, ek)); err != nil {
		t.Errorf("the refused requests spoiled the lease: %v", err)
	}
}

// TestRehydrateRequestChecks: malformed requests are refused before the
// lease is claimed, each naming its field.
func TestRehydrateRequestChecks(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	l := grantRH(t, v, rhPairs())
	ret := l.honest().bytes(t)
	ek := evidence(t)
	st, _ := v.Status()
	tests := []struct {
		name  string
		edit  func(*RehydrateRequest)
		code  receipts.Code
		err   error
		field string
	}{
		{"schema not JSON", func(r *RehydrateRequest) { r.Schema = []byte("{") }, receipts.MalformedRecord, nil, "schema"},
		{"schema outside the subset", func(r *RehydrateRequest) { r.Schema = []byte(`{"type":"number"}`) }, receipts.MalformedRecord, nil, "schema"},
		{"unknown retention", func(r *RehydrateRequest) { r.Retention = "forever" }, "", ErrInvalid, "retention"},
		{"plain label digest", func(r *RehydrateRequest) { r.LabelDigest = receipts.SHA256(nil) }, "", ErrInvalid, "label_digest"},
		{"no cut expiry", func(r *RehydrateRequest) { r.CutExpiry = time.Time{} }, "", ErrInvalid, "cut_expiry"},
		{"cut expired", func(r *RehydrateRequest) { r.CutExpiry = t0 }, receipts.PlanMismatch, nil, "cut_expiry"},
		{"revision with a token", func(r *RehydrateRequest) { r.PolicyRevision = l.tokens["mod0"] }, "", ErrInvalid, "revision"},
		{"two evidence values", func(r *RehydrateRequest) {
			k, _ := seal.Seal(st.SealKey, []seal.Pair{{Category: EvidenceKeyCategory, Value: make([]byte, 32)}, {Category: EvidenceKeyCategory, Value: make([]byte, 32)}})
			r.EvidenceKey = k
		}, "", ErrInvalid, "evidence_key"},
		{"evidence key of another category", func(r *RehydrateRequest) {
			k, _ := seal.Seal(st.SealKey, []seal.Pair{{Category: "module", Value: make([]byte, 32)}})
			r.EvidenceKey = k
		}, "", ErrInvalid, "evidence_key"},
		{"evidence key of 16 bytes", func(r *RehydrateRequest) {
			k, _ := seal.Seal(st.SealKey, []seal.Pair{{Category: EvidenceKeyCategory, Value: make([]byte, 16)}})
			r.EvidenceKey = k
		}, "", ErrInvalid, "evidence_key"},
		{"evidence key tampered", func(r *RehydrateRequest) {
			r.EvidenceKey.Sealed[0] ^= 1
		}, receipts.MalformedRecord, nil, "evidence_key"},
		{"evidence key sealed to another vault", func(r *RehydrateRequest) { r.EvidenceKey.Recipient[0] ^= 1 }, "", ErrStaleKey, "evidence_key"},
		// An honest answer padded past the limit, its digest claimed: refused
		// for its size before anything else, the lease not claimed.
		{"return over the limit", func(r *RehydrateRequest) {
			big := make([]byte, rehydrate.MaxReturnBytes+1)
			n := copy(big, ret)
			for i := n; i < len(big); i++ {
				big[i] = ' '
			}
			r.Return, r.Claim.ReturnDigest = big, receipts.SHA256(big)
		}, receipts.LimitExceeded, nil, "return"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := rhReq(t, v, l.res.Lease.ID, ret, ek)
			tc.edit(&req)
			_, err := v.Rehydrate(ctx, principal, req)
			var se *Error
			if !errors.As(err, &se) || se.Code != tc.code || se.Field != tc.field || (tc.err != nil && !errors.Is(err, tc.err)) {
				t.Fatalf("error %v, want code %q, %v, field %s", err, tc.code, tc.err, tc.field)
			}
			if s, _ := state(t, v, l.res.Lease.ID); s != lease.Active {
				t.Fatalf("a refused request left the lease %v", s)
			}
		})
	}
	// A schema refusal carries its position.
	req := rhReq(t, v, l.res.Lease.ID, ret, ek)
	req.Schema = []byte(`{"type":"string","pattern":"x"}`)
	_, err := v.Rehydrate(ctx, principal, req)
	var sch *receipts.Refusal
	if !errors.As(err, &sch) || sch.Line != 1 || sch.Column != 18 {
		t.Errorf("schema refusal %v, want a schema refusal at line 1 column 18", err)
	}
}

// TestRehydrateDisjointTokens: the same projection cut twice gets disjoint
// token sets, and each lease's tokens rehydrate only in their own lease;
// concurrent cuts with identical values never cross.
func TestRehydrateDisjointTokens(t *testing.T) {
	v := newEnv(t).open(t)
	ps := rhPairs()
	const n = 6
	leases := make([]rhLease, n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []error
	for i := range n {
		wg.Go(func() {
			res, err := v.CreateLease(ctx, principal, request(t, v, ps))
			if err == nil {
				ex := export(res.Tokens)
				err = v.Bind(ctx, principal, res.Lease.ID, "evt:seal1", digest("hmac-sha256:"), receipts.SHA256(ex), ex)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				failed = append(failed, err)
				return
			}
			leases[i] = rhLease{res: res, tokens: map[string]string{}, values: map[string][]byte{}}
			for j, nm := range rhNames {
				leases[i].tokens[nm], leases[i].values[nm] = res.Tokens[j], ps[j].Value
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("grants: %v", failed)
	}
	seen := map[string]int{}
	for i, l := range leases {
		for _, tok := range l.res.Tokens {
			if j, ok := seen[tok]; ok && j != i {
				t.Fatalf("leases %d and %d share a token", j, i)
			}
			seen[tok] = i
		}
	}
	ek := evidence(t)
	// Lease i is presented lease i+1's tokens, concurrently: refused.
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			foreign := leases[(i+1)%n].honest().bytes(t)
			_, errs[i] = v.Rehydrate(ctx, principal, rhReq(t, v, leases[i].res.Lease.ID, foreign, ek))
		})
	}
	wg.Wait()
	for i, err := range errs {
		if CodeOf(err) != receipts.TokenOtherNamespace {
			t.Errorf("lease %d with another lease's tokens: %v", i, err)
		}
	}
	// Each lease's own tokens rehydrate to the same values (fresh leases:
	// the refusals above left the first ones claimed by another digest).
	for i := range 2 {
		l := grantRH(t, v, ps)
		res, err := v.Rehydrate(ctx, principal, rhReq(t, v, l.res.Lease.ID, l.honest().bytes(t), ek))
		if err != nil {
			t.Fatalf("lease %d: %v", i, err)
		}
		if want := l.restored().bytes(t); !bytes.Equal(res.Output, want) {
			t.Errorf("lease %d output differs", i)
		}
	}
}

// TestRehydrateConcurrent: N concurrent rehydrations of one lease, with the
// same tuple and with different returns, give exactly one output.
func TestRehydrateConcurrent(t *testing.T) {
	for _, sameTuple := range []bool{true, false} {
		name := map[bool]string{true: "same tuple", false: "different returns"}[sameTuple]
		t.Run(name, func(t *testing.T) {
			v := newEnv(t).open(t)
			l := grantRH(t, v, rhPairs())
			ek := evidence(t)
			const n = 8
			reqs := make([]RehydrateRequest, n)
			for i := range n {
				a := l.honest()
				if !sameTuple {
					a.Summary = strings.Repeat("x", i+1)
				}
				reqs[i] = rhReq(t, v, l.res.Lease.ID, a.bytes(t), ek)
			}
			outs := make([][]byte, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					res, err := v.Rehydrate(ctx, principal, reqs[i])
					outs[i], errs[i] = res.Output, err
				})
			}
			wg.Wait()
			wins := 0
			for i := range n {
				switch code := CodeOf(errs[i]); {
				case errs[i] == nil:
					wins++
					if outs[i] == nil {
						t.Errorf("winner %d has no output", i)
					}
				case code == receipts.LeaseNotActive || code == receipts.LeaseClaimConflict:
					if outs[i] != nil {
						t.Errorf("loser %d has output", i)
					}
				default:
					t.Errorf("rehydration %d: %v", i, errs[i])
				}
			}
			if wins != 1 {
				t.Errorf("%d rehydrations succeeded, want exactly 1", wins)
			}
			if s, k := state(t, v, l.res.Lease.ID); s != lease.Consumed || k != KeyDestroyed {
				t.Errorf("lease %v key %v", s, k)
			}
		})
	}
}

// TestRehydrateArenaClean: after a rehydration, refused or not, the arena
// holds only what it held before (the vault's own keys): the map and the
// evidence key were wiped.
func TestRehydrateArenaClean(t *testing.T) {
	v := newEnv(t).open(t)
	ek := evidence(t)
	used := v.arena.Used()
	l := grantRH(t, v, rhPairs())
	a := l.honest()
	a.Findings[0].Advice = l.tokens["mod0"]
	if _, err := v.Rehydrate(ctx, principal, rhReq(t, v, l.res.Lease.ID, a.bytes(t), ek)); CodeOf(err) != receipts.TokenWrongPath {
		t.Fatalf("Rehydrate: %v", err)
	}
	if got := v.arena.Used(); got != used {
		t.Errorf("arena use %d after a refused rehydration, %d before", got, used)
	}
	m := grantRH(t, v, rhPairs())
	if _, err := v.Rehydrate(ctx, principal, rhReq(t, v, m.res.Lease.ID, m.honest().bytes(t), ek)); err != nil {
		t.Fatal(err)
	}
	if got := v.arena.Used(); got != used {
		t.Errorf("arena use %d after a rehydration, %d before", got, used)
	}
}

// TestRehydrateCanceled: a caller gone before the lease is consumed leaves
// it CLAIMED, so the same tuple may retry.
func TestRehydrateCanceled(t *testing.T) {
	v := newEnv(t).open(t)
	l := grantRH(t, v, rhPairs())
	ek := evidence(t)
	ret := l.honest().bytes(t)
	if _, err := v.Claim(ctx, principal, l.res.Lease.ID, claimReq(receipts.SHA256(ret))); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, err := v.Rehydrate(cctx, principal, rhReq(t, v, l.res.Lease.ID, ret, ek))
	wantErr(t, err, context.Canceled)
	if s, k := state(t, v, l.res.Lease.ID); s != lease.Claimed || k != KeyPresent {
		t.Fatalf("after a canceled rehydration: %v %v", s, k)
	}
	if _, err := v.Rehydrate(ctx, principal, rhReq(t, v, l.res.Lease.ID, ret, ek)); err != nil {
		t.Fatalf("retry: %v", err)
	}
}

// TestRehydrateProfileGate: a vault whose profile is not proven refuses
// rehydration before reading the request, and leaves the lease alone.
func TestRehydrateProfileGate(t *testing.T) {
	v := newEnv(t).open(t)
	l := grantRH(t, v, rhPairs())
	req := rhReq(t, v, l.res.Lease.ID, l.honest().bytes(t), evidence(t))
	t.Setenv("GOTRACEBACK", "all")
	if p := v.Prove(); p.Accepted() {
		t.Fatalf("GOTRACEBACK=all: profile accepted")
	}
	_, err := v.Rehydrate(ctx, principal, req)
	wantCode(t, err, receipts.VaultProfileNotProven)
	if s, _ := state(t, v, l.res.Lease.ID); s != lease.Active {
		t.Errorf("lease %v", s)
	}
}

// TestSealEvidenceKey: the sealed key is one value of the evidence-key
// category, and a wiped key is refused.
func TestSealEvidenceKey(t *testing.T) {
	v := newEnv(t).open(t)
	st, _ := v.Status()
	ek := evidence(t)
	req, err := vaultapi.SealEvidenceKey(st.SealKey, ek)
	if err != nil {
		t.Fatal(err)
	}
	if req.Len() != 1 || req.Category(0) != EvidenceKeyCategory || req.Recipient != st.SealKey {
		t.Fatalf("sealed request: %d values", req.Len())
	}
	var raw []byte
	_ = ek.Reveal(func(k []byte) error { raw = bytes.Clone(k); return nil })
	if bytes.Contains(req.Sealed, raw) {
		t.Errorf("the sealed value holds the key")
	}
	ks, err := v.seal.Open(v.arena, req)
	if err != nil {
		t.Fatal(err)
	}
	if !ks.EqualBytes(raw) {
		t.Errorf("the vault opens another key")
	}
	ks.Wipe()
	w := evidence(t)
	w.Wipe()
	_, err = vaultapi.SealEvidenceKey(st.SealKey, w)
	wantErr(t, err, ErrInvalid)
	_, err = vaultapi.SealEvidenceKey(st.SealKey, nil)
	wantErr(t, err, ErrInvalid)
}

// FuzzIssued: over a well-formed map, Lookup answers exactly for the
// issued tokens of the namespace (with their category) and AppendValue
// returns exactly their values; any other byte string is not issued, and
// AppendValue leaves dst as it was.
func FuzzIssued(f *testing.F) {
	const ns = "abcdefghij"
	type ent struct {
		cat byte
		mac string
		val string
	}
	ents := []ent{
		{1, "aaaaaaaaaaaaaaaaaaaa", "git.corp.example/payments/ledger"},
		{5, "bbbbbbbbbbbbbbbbbbbb", "team \"core\""},
		{1, "bbbbbbbbbbbbbbbbbbbb", "another module"}, // same mac, other category
	}
	plain := []byte("PCM1\x00\x00\x00\x03")
	want := map[string]ent{}
	for _, e := range ents {
		plain = append(plain, e.cat)
		plain = append(plain, e.mac...)
		plain = append(plain, 0, 0, 0, byte(len(e.val)))
		plain = append(plain, e.val...)
		want[Token(ns, Categories[e.cat-1], e.mac)] = e
	}
	for tok := range want {
		f.Add([]byte(tok))
		f.Add([]byte(strings.ToUpper(tok)))
		f.Add([]byte(tok[:len(tok)-1]))
		f.Add([]byte(tok + "a"))
		f.Add([]byte(strings.Replace(tok, ns, "abcdefghik", 1)))
	}
	f.Add([]byte("pcv:abcdefghij:team:aaaaaaaaaaaaaaaaaaaa"))
	f.Add([]byte("pcv:abcdefghij::aaaaaaaaaaaaaaaaaaaa"))
	f.Fuzz(func(t *testing.T, tok []byte) {
		iss, err := newIssued(plain, ns)
		if err != nil {
			t.Fatal(err)
		}
		e, issuedTok := want[string(tok)]
		cat, ok := iss.Lookup(tok)
		if ok != issuedTok || (ok && cat != Categories[e.cat-1]) {
			t.Fatalf("Lookup(%q) = %q, %v; issued %v", tok, cat, ok, issuedTok)
		}
		dst := []byte("prefix:")
		got, err := iss.AppendValue(dst, tok)
		switch {
		case issuedTok && (err != nil || string(got) != "prefix:"+e.val):
			t.Fatalf("AppendValue(%q) = %q, %v", tok, got, err)
		case !issuedTok && (err == nil || string(got) != "prefix:"):
			t.Fatalf("AppendValue of a token not issued: %q, %v", got, err)
		}
	})
}

// TestRehydrateSchemaBound: the lease binds the plan's output schema
// digest at grant. A return rehydrated under another schema (one that
// also marks summary, where a token would then be substituted instead of
// refused TOKEN_WRONG_PATH) is PLAN_MISMATCH before any claim; a lease
// granted without a digest refuses every schema, its own included; the
// receipt names the schema used.
func TestRehydrateSchemaBound(t *testing.T) {
	v := newEnv(t).open(t)
	l := grantRH(t, v, rhPairs())
	ek := evidence(t)
	wide := strings.Replace(rhSchema, `"summary":{"type":"string","maxLength":4000}`,
		`"summary":{"type":"string","maxLength":4000,"x-privacycut-rehydrate":{"category":"module","purpose":"dependency-triage","max":3}}`, 1)
	if wide == rhSchema {
		t.Fatal("the wider schema is the same schema")
	}
	a := l.honest()
	a.Summary = l.tokens["mod0"]
	ret := a.bytes(t)
	req := rhReq(t, v, l.res.Lease.ID, ret, ek)
	req.Schema = []byte(wide)
	_, err := v.Rehydrate(ctx, principal, req)
	wantCode(t, err, receipts.PlanMismatch)
	if e, ok := err.(*Error); !ok || e.Field != "output_schema_digest" {
		t.Errorf("refusal %v, want field output_schema_digest", err)
	}
	if s, _ := state(t, v, l.res.Lease.ID); s != lease.Active {
		t.Errorf("a refused schema left the lease %v, want ACTIVE (not claimed)", s)
	}
	// Under the plan's schema the same return is refused at the unmarked
	// path, and the receipt of an honest return names the schema.
	_, err = v.Rehydrate(ctx, principal, rhReq(t, v, l.res.Lease.ID, ret, ek))
	wantCode(t, err, receipts.TokenWrongPath)

	l2 := grantRH(t, v, rhPairs())
	res, err := v.Rehydrate(ctx, principal, rhReq(t, v, l2.res.Lease.ID, l2.honest().bytes(t), ek))
	if err != nil || res.Receipt.OutputSchemaDigest != rhSchemaDigest(t) || l2.res.Lease.OutputSchemaDigest != rhSchemaDigest(t) {
		t.Fatalf("honest rehydration: %v, receipt schema %q", err, res.Receipt.OutputSchemaDigest)
	}

	// A lease granted without a schema digest: no schema is its schema.
	creq := request(t, v, rhPairs())
	creq.OutputSchemaDigest = ""
	old, err := v.CreateLease(ctx, principal, creq)
	if err != nil {
		t.Fatal(err)
	}
	bind(t, v, old)
	_, err = v.Rehydrate(ctx, principal, rhReq(t, v, old.Lease.ID, l2.honest().bytes(t), ek))
	wantCode(t, err, receipts.PlanMismatch)
	// A malformed digest is refused at grant.
	creq = request(t, v, rhPairs())
	creq.OutputSchemaDigest = "sha256:1234"
	_, err = v.CreateLease(ctx, principal, creq)
	wantErr(t, err, ErrInvalid)
}
