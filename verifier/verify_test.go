package verifier

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier/internal/cuttest"
)

var sampleParts = func() []testPart {
	var ps []testPart
	for _, p := range cuttest.Sample {
		ps = append(ps, testPart(p))
	}
	return ps
}()

// failedClaims returns the failed claims of v.
func failedClaims(v receipts.Verification) []string {
	f := v.Failed()
	if f == nil {
		f = []string{}
	}
	return f
}

func TestVerifyHonestCut(t *testing.T) {
	for _, mode := range []string{receipts.ModeIrreversible, receipts.ModeReversible} {
		t.Run(mode, func(t *testing.T) {
			req := makeCut(t, sampleParts, cutOptions{Mode: mode})
			v := Verify(req)
			checkShape(t, v)
			if diff := cmp.Diff([]string{}, failedClaims(v)); diff != "" {
				t.Fatalf("failed claims (-want +got):\n%s\n%+v", diff, v.Claims)
			}
			if v.Mode != mode || v.ExportDigest != req.ExportDigest || !strings.HasPrefix(v.SourceDigest, "hmac-sha256:") ||
				!strings.HasPrefix(v.ReceiptsDigest, "sha256:") || !strings.HasPrefix(v.PlanDigest, "sha256:") {
				t.Errorf("digests: %+v", v)
			}
		})
	}
}

// TestVerifyTampering changes one input at a time and names the claims
// that must fail.
func TestVerifyTampering(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(r *Request)
		parts  []testPart
		opt    cutOptions
		want   []string
	}{
		{
			name:   "no evidence key",
			mutate: func(r *Request) { r.EvidenceKey = nil },
			want:   []string{receipts.ClaimPlanMatch, receipts.ClaimReceiptChain},
		},
		{
			name: "wiped evidence key",
			mutate: func(r *Request) {
				k := testKey(t)
				k.Wipe()
				r.EvidenceKey = k
			},
			want: []string{receipts.ClaimPlanMatch, receipts.ClaimReceiptChain},
		},
		{
			name: "another evidence key",
			mutate: func(r *Request) {
				k, _ := receipts.NewEvidenceKey([]byte("ffffffffffffffffffffffffffffffff"))
				r.EvidenceKey = k
			},
			want: []string{receipts.ClaimPlanMatch, receipts.ClaimReceiptChain},
		},
		{
			name:   "no clock",
			mutate: func(r *Request) { r.Now = time.Time{} },
			want:   []string{receipts.ClaimPlanMatch},
		},
		{
			name:   "plan expired",
			mutate: func(r *Request) { r.Now = testNow.Add(48 * time.Hour) },
			want:   []string{receipts.ClaimPlanMatch},
		},
		{
			name:   "claimed export digest wrong",
			mutate: func(r *Request) { r.ExportDigest = receipts.SHA256([]byte("x")) },
			want:   []string{receipts.ClaimExportCanonical, receipts.ClaimReceiptChain},
		},
		{
			name:   "category not allowed",
			opt:    cutOptions{Allowed: []string{"module", "team"}},
			mutate: func(r *Request) {},
			want:   []string{receipts.ClaimCoverage, receipts.ClaimPlanMatch},
		},
		{
			name:   "plan allows credential",
			opt:    cutOptions{Allowed: []string{"module", "team", "person", "credential"}},
			mutate: func(r *Request) {},
			want:   []string{receipts.ClaimPlanMatch},
		},
		{
			name:   "source undecodable",
			mutate: func(r *Request) { r.Source = []byte(`{"schema":"Projection@1","schema":"x"}`) },
			want:   []string{receipts.ClaimCoverage, receipts.ClaimPublicPreserved, receipts.ClaimOwnersReplaced, receipts.ClaimTokenConsistent, receipts.ClaimNoResidual, receipts.ClaimPlanMatch, receipts.ClaimReceiptChain},
		},
		{
			name:   "export undecodable",
			mutate: func(r *Request) { r.Export = []byte("{") },
			want:   []string{receipts.ClaimExportCanonical, receipts.ClaimPublicPreserved, receipts.ClaimOwnersReplaced, receipts.ClaimTokenConsistent, receipts.ClaimNoResidual, receipts.ClaimReceiptChain},
		},
		{
			name: "reversible plan without output schema",
			opt: cutOptions{Mode: receipts.ModeReversible, Plan: func(p *receipts.Plan) {
				p.OutputSchemaDigest = ""
			}},
			mutate: func(r *Request) {},
			want:   []string{receipts.ClaimPlanMatch},
		},
		{
			name: "reversible plan with a keyed schema digest",
			opt: cutOptions{Mode: receipts.ModeReversible, Plan: func(p *receipts.Plan) {
				p.OutputSchemaDigest = receipts.PrefixHMAC + strings.Repeat("a", 64)
			}},
			mutate: func(r *Request) {},
			want:   []string{receipts.ClaimPlanMatch},
		},
		{
			name:   "reversible plan without station",
			opt:    cutOptions{Mode: receipts.ModeReversible, Plan: func(p *receipts.Plan) { p.Station = "" }},
			mutate: func(r *Request) {},
			want:   []string{receipts.ClaimPlanMatch},
		},
		{
			name:   "reversible plan without return window",
			opt:    cutOptions{Mode: receipts.ModeReversible, Plan: func(p *receipts.Plan) { p.ReturnWindowS = 0 }},
			mutate: func(r *Request) {},
			want:   []string{receipts.ClaimPlanMatch},
		},
		{
			name:   "plan undecodable",
			mutate: func(r *Request) { r.Plan = []byte(`{"schema":"DisclosurePlan@1","extra":1}`) },
			want:   []string{receipts.ClaimCoverage, receipts.ClaimTokenConsistent, receipts.ClaimPlanMatch, receipts.ClaimWireMatch},
		},
		{
			name:   "vocabulary undecodable",
			mutate: func(r *Request) { r.Vocabulary = []byte(`[]`) },
			want:   []string{receipts.ClaimCoverage, receipts.ClaimPublicPreserved, receipts.ClaimOwnersReplaced, receipts.ClaimTokenConsistent, receipts.ClaimNoResidual, receipts.ClaimPlanMatch, receipts.ClaimReceiptChain},
		},
		{
			name:   "receipts undecodable",
			mutate: func(r *Request) { r.Receipts = []byte(`{}`) },
			want:   []string{receipts.ClaimPlanMatch, receipts.ClaimReceiptChain},
		},
		{
			name: "source missing lineage",
			mutate: func(r *Request) {
				r.Source = []byte(strings.Replace(string(r.Source), `"lineage":["sha256:`, `"lineage":["unknown","sha256:`, 1))
			},
			want: []string{receipts.ClaimCoverage, receipts.ClaimPlanMatch, receipts.ClaimReceiptChain},
		},
		{
			name: "value with a boundary byte straddles public items",
			parts: []testPart{{"block", "k",
				"finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module=\"x/net@v0.15.0 affected\"\n"}},
			mutate: func(r *Request) {},
			want:   []string{receipts.ClaimNoResidual},
		},
		{
			// The third value reads `2" owner.team="redacted:team:3`:
			// the export's texts hold it as written by the cut.
			name: "value with escaped quotes reads as export text",
			parts: []testPart{{"query", "q",
				"finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417\n" +
					`ask triage.explain owner.team="a" owner.team="b" owner.team="2\" owner.team=\"redacted:team:3"` + "\n"}},
			mutate: func(r *Request) {},
			want:   []string{receipts.ClaimNoResidual},
		},
		{
			// The value reads `"},{"kind":"query"`: the export's JSON
			// structure between two parts.
			name: "value with escaped quotes reads as export JSON",
			parts: []testPart{
				{"block", "k", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.team=\"\\\"},{\\\"kind\\\":\\\"query\\\"\"\n"},
				{"query", "q", "ask triage.explain\n"}},
			mutate: func(r *Request) {},
			want:   []string{receipts.ClaimNoResidual},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parts := tt.parts
			if parts == nil {
				parts = sampleParts
			}
			req := makeCut(t, parts, tt.opt)
			tt.mutate(&req)
			v := Verify(req)
			checkShape(t, v)
			slices.Sort(tt.want)
			got := failedClaims(v)
			slices.Sort(got)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("failed claims (-want +got):\n%s\n%+v", diff, v.Claims)
			}
		})
	}
}

// TestVerifyValueInsidePublicItem: a value without boundary bytes that
// occurs inside a public item is not a residual.
func TestVerifyValueInsidePublicItem(t *testing.T) {
	parts := []testPart{{"block", "k",
		"finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module=\"x/net\" owner.team=\"redacted\"\n"}}
	v := Verify(makeCut(t, parts, cutOptions{}))
	if diff := cmp.Diff([]string{}, failedClaims(v)); diff != "" {
		t.Fatalf("failed claims:\n%s\n%+v", diff, v.Claims)
	}
}

// TestDetailsAreContentFree: a canary planted in every input never
// reaches the verification, whatever fails.
func TestDetailsAreContentFree(t *testing.T) {
	const canary = "CANARY-7f3a9"
	parts := []testPart{{"block", "k",
		"finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module=\"" + canary + "\"\n"}}
	base := makeCut(t, parts, cutOptions{})
	mutations := map[string]func(r *Request){
		"honest": func(r *Request) {},
		"value left": func(r *Request) {
			r.Export = []byte(strings.Replace(string(r.Export), "redacted:module:1", canary, 1))
		},
		"unknown kind": func(r *Request) {
			r.Source = []byte(strings.Replace(string(r.Source), `"kind":"block"`, `"kind":"`+canary+`"`, 1))
		},
		"uncovered source": func(r *Request) {
			r.Source = []byte(strings.Replace(string(r.Source), "affected", canary, 1))
		},
		"bad mode": func(r *Request) {
			r.Plan = []byte(strings.Replace(string(r.Plan), `"mode":"irreversible"`, `"mode":"`+canary+`"`, 1))
		},
		"bad category": func(r *Request) {
			r.Source = []byte(strings.Replace(string(r.Source), "owner.module", "owner."+canary, 1))
		},
	}
	for name, m := range mutations {
		t.Run(name, func(t *testing.T) {
			req := base
			m(&req)
			v := Verify(req)
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), canary) {
				t.Fatalf("verification holds the canary: %s", b)
			}
		})
	}
}

// TestVerifyNeverPanicsOnGarbage feeds every input arbitrary bytes.
func TestVerifyNeverPanicsOnGarbage(t *testing.T) {
	for _, base := range []Request{makeCut(t, sampleParts, cutOptions{}),
		makeCut(t, sampleParts, cutOptions{Wire: wireOf(receipts.WireOpenAIChat), Schema: []byte(testSchema)})} {
		testGarbage(t, base)
	}
}

func testGarbage(t *testing.T, base Request) {
	garbage := [][]byte{nil, {}, []byte("null"), []byte("[]"), []byte("{}"), []byte(`"x"`), {0xff, 0xfe}, []byte(`{"parts":[{"kind":1}]}`)}
	for _, g := range garbage {
		for i := range 8 {
			req := base
			switch i {
			case 0:
				req.Source = g
			case 1:
				req.Export = g
			case 2:
				req.Plan = g
			case 3:
				req.Vocabulary = g
			case 4:
				req.Receipts = g
			case 5:
				req.ExportDigest = string(g)
			case 6:
				req.Wire = g
			case 7:
				req.OutputSchema = g
			}
			v := verify(req) // not the recovering wrapper: a panic fails the test
			checkShape(t, v)
			// An export@1 cut has no schema, and no body but its export.
			ignored := base.Wire == nil && (i == 7 || i == 6 && len(g) == 0)
			if v.Verdict != "fail" && !ignored {
				t.Errorf("input %d = %q: verdict %s", i, g, v.Verdict)
			}
		}
	}
}

// TestVerifyRefusesWhatCensorRefuses: a cut whose source or plan the censor
// refuses does not pass the verifier either, even made consistently (every
// digest and receipt bound to that source and plan): each fails exactly the
// claim named, with the detail given.
func TestVerifyRefusesWhatCensorRefuses(t *testing.T) {
	const finding = "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417\n"
	// The part limit, lowered for the test (MaxParts+1 parts take seconds).
	defer func(n int) { maxParts = n }(maxParts)
	maxParts = 4
	many := make([]testPart, maxParts+1)
	for i := range many {
		many[i] = testPart{"block", "k" + strconv.Itoa(i), finding}
	}
	plan := func(f func(p *receipts.Plan)) cutOptions { return cutOptions{Plan: f} }
	for _, tc := range []struct {
		name   string
		parts  []testPart
		opt    cutOptions
		source func([]byte) []byte
		claim  string
		detail string
		more   bool // other claims fail with it (a source not recognized, an empty export)
	}{
		{name: "consumer without id", opt: plan(func(p *receipts.Plan) { p.Consumer.ID = "" }), claim: receipts.ClaimPlanMatch, detail: "consumer"},
		{name: "target not http", opt: plan(func(p *receipts.Plan) { p.Target = "ftp://models.example/v1" }), claim: receipts.ClaimPlanMatch, detail: "target"},
		{name: "another vocabulary", opt: plan(func(p *receipts.Plan) { p.VocabularyDigest = receipts.SHA256([]byte("other")) }), claim: receipts.ClaimPlanMatch, detail: "vocabulary_digest"},
		{name: "other policy revision", opt: plan(func(p *receipts.Plan) { p.PolicyRevision = "other/1" }), claim: receipts.ClaimPlanMatch, detail: "policy_revision"},
		{name: "no threat model", opt: plan(func(p *receipts.Plan) { p.ThreatModel = "" }), claim: receipts.ClaimPlanMatch, detail: "threat_model"},
		{name: "target with user info", opt: plan(func(p *receipts.Plan) { p.Target = "https://u:p@models.example/v1" }), claim: receipts.ClaimPlanMatch, detail: "target"},
		{name: "target with fragment", opt: plan(func(p *receipts.Plan) { p.Target = "https://models.example/v1#x" }), claim: receipts.ClaimPlanMatch, detail: "target"},
		{name: "max_parents 0", opt: plan(func(p *receipts.Plan) { p.MaxParents = 0 }), claim: receipts.ClaimPlanMatch, detail: "max_parents"},
		{name: "credential not prohibited", opt: plan(func(p *receipts.Plan) { p.Categories.Prohibited = []string{} }), claim: receipts.ClaimPlanMatch, detail: "lacks credential"},
		{name: "allowed and prohibited", opt: plan(func(p *receipts.Plan) { p.Categories.Prohibited = append(p.Categories.Prohibited, "host") }), claim: receipts.ClaimPlanMatch, detail: "both allowed and prohibited"},
		{name: "reversible, unknown retention", opt: cutOptions{Mode: receipts.ModeReversible, Plan: func(p *receipts.Plan) { p.Retention = "forever" }}, claim: receipts.ClaimPlanMatch, detail: "retention"},
		{name: "no finding record", parts: []testPart{{"query", "q", "ask triage.explain owner.team=\"a\"\n"}}, claim: receipts.ClaimPlanMatch, detail: "LOST_UTILITY"},
		{name: "token-shaped value", parts: []testPart{{"block", "k", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.team=\"a\" owner.team=\"redacted:team:2\"\n"}},
			claim: receipts.ClaimCoverage, detail: "AMBIGUOUS_SPAN", more: true},
		{name: "negative weight", source: func(b []byte) []byte { return bytes.Replace(b, []byte(`"weight":2`), []byte(`"weight":-2`), 1) }, claim: receipts.ClaimCoverage, detail: "MALFORMED_RECORD"},
		{name: "no parts", parts: []testPart{}, claim: receipts.ClaimCoverage, detail: "no parts", more: true},
		{name: "too many parts", parts: many, claim: receipts.ClaimCoverage, detail: "LIMIT_EXCEEDED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := tc.parts
			if parts == nil {
				parts = sampleParts
			}
			req := makeCut(t, parts, tc.opt)
			if tc.source != nil {
				req.Source = tc.source(req.Source)
			}
			v := Verify(req)
			if !slices.Contains(v.Failed(), tc.claim) {
				t.Fatalf("%s holds; failed %v", tc.claim, v.Failed())
			}
			for _, c := range v.Claims {
				if c.Name == tc.claim && !strings.Contains(c.Detail, tc.detail) {
					t.Fatalf("%s: %q, want %q in it", c.Name, c.Detail, tc.detail)
				}
			}
			if tc.source == nil && !tc.more && len(v.Failed()) != 1 {
				t.Fatalf("failed %v, want only %s", v.Failed(), tc.claim)
			}
		})
	}
}

// TestVerifyPlanNotItsFields: a plan document with a member its fields leave
// out ("station":"", "max_parents" written twice is refused by the decoder)
// names that, not only the receipts' plan digest it no longer matches.
func TestVerifyPlanNotItsFields(t *testing.T) {
	req := makeCut(t, sampleParts, cutOptions{})
	for _, member := range []string{`"station":""`, `"remote_deadline_s":0`, `"lease":null`} {
		r := req
		r.Plan = bytes.Replace(req.Plan, []byte(`{`), []byte(`{`+member+`,`), 1)
		v := Verify(r)
		ok := false
		for _, c := range v.Claims {
			ok = ok || c.Name == receipts.ClaimPlanMatch && !c.OK && strings.Contains(c.Detail, "its fields leave out")
		}
		if !ok && member != `"lease":null` {
			t.Errorf("%s: plan-match %v", member, v.Claims)
		}
	}
}

// TestVerifyReversibleTokens: in a reversible cut made consistently around
// its tokens (every digest and receipt bound to them), each inconsistency
// of the tokens themselves fails token-consistency.
func TestVerifyReversibleTokens(t *testing.T) {
	parts := []testPart{{"block", "k", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417" +
		" owner.team=\"a\" owner.team=\"b\" owner.team=\"a\"\n"}}
	const other = "pcv:abcdefghij:team:zzzzzzzzzzzzzzzzzzzz"
	for _, tc := range []struct {
		name   string
		token  func(occ int, tok string) string
		detail string
		want   []string
	}{
		{"one value, two tokens", func(occ int, tok string) string {
			if occ == 2 {
				return other
			}
			return tok
		}, "equal team values have different tokens", []string{receipts.ClaimTokenConsistent}},
		{"two values, one token", func(occ int, tok string) string {
			if occ == 1 {
				return strings.Replace(tok, "qqqqqqqqqqqqqqqqqqqc", "qqqqqqqqqqqqqqqqqqqb", 1)
			}
			return tok
		}, "one team token stands for different values", []string{receipts.ClaimTokenConsistent}},
		{"another namespace", func(occ int, tok string) string {
			if occ == 1 {
				return strings.Replace(tok, "abcdefghij", "zzzzzzzzzz", 1)
			}
			return tok
		}, "namespace differs", []string{receipts.ClaimTokenConsistent}},
		{"another category", func(occ int, tok string) string {
			if occ == 1 {
				return strings.Replace(tok, ":team:", ":host:", 1)
			}
			return tok
		}, "category differs from its slot", []string{receipts.ClaimNoResidual, receipts.ClaimOwnersReplaced, receipts.ClaimTokenConsistent}}, // "a" inside a host token
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Verify(makeCut(t, parts, cutOptions{Mode: receipts.ModeReversible, Token: tc.token}))
			got := failedClaims(v)
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("failed claims (-want +got):\n%s\n%+v", diff, v.Claims)
			}
			for _, c := range v.Claims {
				if c.Name == receipts.ClaimTokenConsistent && !strings.Contains(c.Detail, tc.detail) {
					t.Fatalf("token-consistency: %q, want %q", c.Detail, tc.detail)
				}
			}
		})
	}
}

// TestVerifyExpiryBoundary: a plan is good until the instant before its
// expires_at; at that instant it has expired.
func TestVerifyExpiryBoundary(t *testing.T) {
	req := makeCut(t, sampleParts, cutOptions{})
	exp := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC) // makeCut's expires_at
	for _, tc := range []struct {
		now  time.Time
		want []string
	}{
		{exp.Add(-time.Nanosecond), []string{}},
		{exp, []string{receipts.ClaimPlanMatch}},
	} {
		req.Now = tc.now
		if diff := cmp.Diff(tc.want, failedClaims(Verify(req))); diff != "" {
			t.Errorf("at %v (-want +got):\n%s", tc.now, diff)
		}
	}
}

// TestParseReversible: the reversible token shape, exactly: pcv:, a
// namespace of 10 and a MAC of 20 base32 characters, a known category, and
// the separators in their places.
func TestParseReversible(t *testing.T) {
	const good = "pcv:abcdefghij:team:abcdefghijklmnopqrst"
	if ns, cat, ok := parseReversible([]byte(good)); !ok || string(ns) != "abcdefghij" || categories[cat] != "team" {
		t.Fatalf("%s: %q %d %v", good, ns, cat, ok)
	}
	for _, bad := range []string{
		"pcv:abcdefghijXteam:abcdefghijklmnopqrst",  // no ':' after the namespace
		"pcv:abcdefghij:teamXabcdefghijklmnopqrst",  // no ':' before the MAC
		"pcv:abcdefghi:team:abcdefghijklmnopqrst",   // namespace too short
		"pcv:abcdefghij:team:abcdefghijklmnopqrs",   // MAC too short
		"pcv:abcdefghij:teams:abcdefghijklmnopqrst", // unknown category
		"pcv:abcdefghij:team:abcdefghijklmnopqrs1",  // 1 is not base32
		"pcv:ABCDEFGHIJ:team:abcdefghijklmnopqrst",  // upper case
		"pcx:abcdefghij:team:abcdefghijklmnopqrst",
		"pcv::team:abcdefghijklmnopqrst",
	} {
		if _, _, ok := parseReversible([]byte(bad)); ok {
			t.Errorf("%s parsed", bad)
		}
	}
}
