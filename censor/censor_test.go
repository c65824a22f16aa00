package censor

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

const canary = "CANARY-5d1e-ledger"

var now = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func testKey(t testing.TB, b byte) *receipts.EvidenceKey {
	t.Helper()
	k, err := receipts.NewEvidenceKey(bytes.Repeat([]byte{b}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func exampleInputs(t testing.TB) (*grammar.Document, *grammar.Vocabulary) {
	t.Helper()
	vd, err := os.ReadFile("../examples/vocabulary.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := grammar.LoadVocabulary(vd)
	if err != nil {
		t.Fatal(err)
	}
	pd, err := os.ReadFile("../examples/projection.json")
	if err != nil {
		t.Fatal(err)
	}
	d, refs := grammar.LoadProjection(pd, grammar.LoadOptions{})
	if refs != nil {
		t.Fatal(refs)
	}
	return d, v
}

func plan(t testing.TB, d *grammar.Document, v *grammar.Vocabulary, k *receipts.EvidenceKey) *receipts.Plan {
	t.Helper()
	p, err := NewPlan(d, v, k, PlanOptions{Consumer: receipts.Consumer{Kind: "model", ID: "triage-bot"},
		Purpose: "dependency-triage", Target: "https://model.example/v1/answer", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// reversiblePlan is a reversible plan for the example, with its deadlines,
// station, retention and output schema digest.
func reversiblePlan(t testing.TB, d *grammar.Document, v *grammar.Vocabulary, k *receipts.EvidenceKey) *receipts.Plan {
	t.Helper()
	p, err := NewPlan(d, v, k, PlanOptions{Consumer: receipts.Consumer{Kind: "model", ID: "m"}, Purpose: "p",
		Target: "https://m.example/", Now: now, Mode: receipts.ModeReversible, OutputSchemaDigest: schemaDigest})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func cut(t testing.TB, d *grammar.Document, v *grammar.Vocabulary, k *receipts.EvidenceKey) *Output {
	t.Helper()
	out, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: plan(t, d, v, k), Key: k})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCutExample(t *testing.T) {
	d, v := exampleInputs(t)
	k := testKey(t, 1)
	out := cut(t, d, v, k)

	canonical, err := canon.Canonicalize(out.Export)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(canonical, out.Export) {
		t.Fatalf("export is not canonical:\n%s\n%s", out.Export, canonical)
	}
	if out.ExportDigest != receipts.SHA256(out.Export) {
		t.Fatal("export digest")
	}
	var exp struct {
		Profile string `json:"profile"`
		Parts   []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"parts"`
	}
	if err := canon.Unmarshal(out.Export, &exp, canon.Options{}); err != nil {
		t.Fatal(err)
	}
	want := `ask triage.explain-reachability owner.function="redacted:function:1"` + "\n"
	if exp.Profile != "closed-diagnostic@1" || len(exp.Parts) != 3 || exp.Parts[1].Kind != "history" || exp.Parts[1].Text != want {
		t.Fatalf("export %+v", exp)
	}
	first := strings.SplitN(exp.Parts[0].Text, "\n", 2)[0]
	wantFirst := `finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner.module="redacted:module:1" owner.package="redacted:package:1" owner.function="redacted:function:1" owner.file="redacted:file:1" owner.team="redacted:team:1"`
	if first != wantFirst {
		t.Fatalf("first record\n got %s\nwant %s", first, wantFirst)
	}
	// The same module value later gets the same token; the next distinct one the next number.
	if !strings.Contains(exp.Parts[0].Text, `https://go.dev/cl/442235 owner.module="redacted:module:1"`) ||
		!strings.Contains(exp.Parts[0].Text, `owner.module="redacted:module:2"`) {
		t.Fatalf("token numbering:\n%s", exp.Parts[0].Text)
	}
	for _, p := range d.Parts {
		for _, line := range strings.Split(string(p.Text), "\n") {
			for _, f := range strings.Split(line, `"`)[1:] {
				if strings.HasPrefix(f, " owner.") || f == "" {
					continue
				}
				if bytes.Contains(out.Export, []byte(`"`+f+`\"`)) || bytes.Contains(out.Export, []byte(f)) && len(f) > 12 {
					t.Errorf("owner value %q survived into the export", f)
				}
			}
		}
	}
	// Keys, labels and lineage never reach the export.
	for _, local := range []string{"scan/govulncheck", "ns/payments", "no-training", "sha256:4f1c", "lineage", "label"} {
		if bytes.Contains(out.Export, []byte(local)) {
			t.Errorf("export holds local metadata %q", local)
		}
	}
	if len(out.Receipts) != 2 || !out.Receipts[1].Terminal || out.Receipts[1].ExportDigest != out.ExportDigest {
		t.Fatalf("receipts %+v", out.Receipts)
	}
	d0, _ := out.Receipts[0].Digest()
	if diff := cmp.Diff([]string{d0}, out.Receipts[1].Parents); diff != "" {
		t.Fatal(diff)
	}
	wantOps := []receipts.Operation{{Op: "replace-owner", Category: "module", Count: 4}, {Op: "replace-owner", Category: "package", Count: 2}, {Op: "replace-owner", Category: "function", Count: 2},
		{Op: "replace-owner", Category: "file", Count: 1}, {Op: "replace-owner", Category: "team", Count: 2}, {Op: "replace-owner", Category: "person", Count: 1}, {Op: "replace-owner", Category: "host", Count: 1}}
	if diff := cmp.Diff(wantOps, out.Receipts[0].Operations); diff != "" {
		t.Fatalf("operations (-want +got):\n%s", diff)
	}
}

// TestDeterminism: same inputs twice give byte-identical export, receipts and
// digests; reordered and reformatted JSON gives the same digests.
func TestDeterminism(t *testing.T) {
	d, v := exampleInputs(t)
	k := testKey(t, 1)
	a, b := cut(t, d, v, k), cut(t, d, v, k)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Fatalf("two runs differ:\n%s", diff)
	}
	// Reformat the projection: compact, keys in another order.
	raw, _ := os.ReadFile("../examples/projection.json")
	var tree any
	if err := canon.Unmarshal(raw, &tree, canon.Options{}); err != nil {
		t.Fatal(err)
	}
	compact, err := canon.Marshal(tree) // canonical: keys sorted, no white space
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(compact, raw) {
		t.Fatal("reformatting changed nothing")
	}
	d2, refs := grammar.LoadProjection(compact, grammar.LoadOptions{})
	if refs != nil {
		t.Fatal(refs)
	}
	c := cut(t, d2, v, k)
	if diff := cmp.Diff(a, c); diff != "" {
		t.Fatalf("reformatted projection gives a different cut:\n%s", diff)
	}
}

// TestKeyedDigests: every digest of source-derived material changes with the
// evidence key; the export digest does not.
func TestKeyedDigests(t *testing.T) {
	d, v := exampleInputs(t)
	a, b := cut(t, d, v, testKey(t, 1)), cut(t, d, v, testKey(t, 2))
	for name, pair := range map[string][2]string{
		"source":    {a.SourceDigest, b.SourceDigest},
		"manifest":  {a.ManifestDigest, b.ManifestDigest},
		"label":     {a.LabelDigest, b.LabelDigest},
		"candidate": {a.CandidateDigest, b.CandidateDigest},
	} {
		if pair[0] == pair[1] || !strings.HasPrefix(pair[0], receipts.PrefixHMAC) {
			t.Errorf("%s digest is not keyed: %s / %s", name, pair[0], pair[1])
		}
	}
	if a.ExportDigest != b.ExportDigest || !bytes.Equal(a.Export, b.Export) {
		t.Error("export depends on the evidence key")
	}
}

func TestPlanMismatch(t *testing.T) {
	d, v := exampleInputs(t)
	k := testKey(t, 1)
	tests := []struct {
		field  string
		mutate func(p *receipts.Plan)
		code   receipts.Code
	}{
		{"manifest_digest", func(p *receipts.Plan) { p.ManifestDigest = "hmac-sha256:00" }, receipts.PlanMismatch},
		{"restricted_ref", func(p *receipts.Plan) { p.RestrictedRef = "hmac-sha256:" + strings.Repeat("0", 64) }, receipts.PlanMismatch},
		{"vocabulary_digest", func(p *receipts.Plan) { p.VocabularyDigest = "sha256:00" }, receipts.PlanMismatch},
		{"mode", func(p *receipts.Plan) { p.Mode = receipts.ModeReversible }, receipts.PlanMismatch},
		{"target", func(p *receipts.Plan) { p.Target = "ftp://model.example/" }, receipts.PlanMismatch},
		{"consumer", func(p *receipts.Plan) { p.Consumer.ID = "" }, receipts.PlanMismatch},
		{"purpose", func(p *receipts.Plan) { p.Purpose = "" }, receipts.PlanMismatch},
		{"max_uses", func(p *receipts.Plan) { p.MaxUses = 0 }, receipts.PlanMismatch},
		{"invariants", func(p *receipts.Plan) { p.Invariants = p.Invariants[1:] }, receipts.PlanMismatch},
		{"categories", func(p *receipts.Plan) { p.Categories.Allowed = append(p.Categories.Allowed, "credential") }, receipts.PlanMismatch},
		{"categories", func(p *receipts.Plan) { p.Categories.Prohibited = []string{} }, receipts.PlanMismatch},
		{"policy_revision", func(p *receipts.Plan) { p.PolicyRevision = "other/9" }, receipts.PlanMismatch},
		{"threat_model", func(p *receipts.Plan) { p.ThreatModel = "" }, receipts.PlanMismatch},
		{"target", func(p *receipts.Plan) { p.Target = "https://u@model.example/" }, receipts.PlanMismatch},
		{"target", func(p *receipts.Plan) { p.Target = "https://model.example/#x" }, receipts.PlanMismatch},
		{"categories", func(p *receipts.Plan) {
			p.Categories.Prohibited = append(p.Categories.Prohibited, p.Categories.Allowed[0])
		}, receipts.PlanMismatch},
		{"max_parents", func(p *receipts.Plan) { p.MaxParents = 0 }, receipts.PlanMismatch},
		{"expires_at", func(p *receipts.Plan) { p.ExpiresAt = "tomorrow" }, receipts.PlanMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			p := plan(t, d, v, k)
			tt.mutate(p)
			_, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: p, Key: k})
			var re *RefusedError
			if !errors.As(err, &re) || re.Refusals[0].Code != tt.code || re.Field != tt.field {
				t.Fatalf("err = %v, want %s on %s", err, tt.code, tt.field)
			}
			if re.Refusals[0].Part != -1 || re.Refusals[0].Kind != "plan" {
				t.Fatalf("position %+v", re.Refusals[0])
			}
		})
	}
}

// schemaDigest stands for a reversible plan's output schema digest.
var schemaDigest = receipts.SHA256([]byte(`{"type":"object"}`))

// TestReversiblePlanMismatch: a reversible plan must bind its deadlines,
// station, output schema and a known retention profile, or the cut is
// refused before any token is asked for.
func TestReversiblePlanMismatch(t *testing.T) {
	d, v := exampleInputs(t)
	k := testKey(t, 1)
	good := reversiblePlan(t, d, v, k)
	if _, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: good, Key: k, Tokens: fakeSource{}}); err != nil {
		t.Fatalf("the reversible plan itself: %v", err)
	}
	tests := []struct {
		name, field string
		mutate      func(p *receipts.Plan)
	}{
		{"no output schema", "output_schema_digest", func(p *receipts.Plan) { p.OutputSchemaDigest = "" }},
		{"keyed schema digest", "output_schema_digest", func(p *receipts.Plan) {
			p.OutputSchemaDigest = receipts.PrefixHMAC + strings.Repeat("0", 64)
		}},
		{"short schema digest", "output_schema_digest", func(p *receipts.Plan) { p.OutputSchemaDigest = "sha256:00" }},
		{"upper-case schema digest", "output_schema_digest", func(p *receipts.Plan) {
			p.OutputSchemaDigest = strings.ToUpper(schemaDigest)
		}},
		{"unknown retention", "retention", func(p *receipts.Plan) { p.Retention = "keep-forever" }},
		{"no retention named", "retention", func(p *receipts.Plan) { p.Retention = "" }},
		{"no station", "reversible", func(p *receipts.Plan) { p.Station = "" }},
		{"no return window", "reversible", func(p *receipts.Plan) { p.ReturnWindowS = 0 }},
		{"no remote deadline", "reversible", func(p *receipts.Plan) { p.RemoteDeadlineS = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := *good
			tt.mutate(&p)
			_, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: &p, Key: k, Tokens: fakeSource{}})
			var re *RefusedError
			if !errors.As(err, &re) || re.Refusals[0].Code != receipts.PlanMismatch || re.Field != tt.field {
				t.Fatalf("err = %v, want PLAN_MISMATCH on %s", err, tt.field)
			}
			if re.Refusals[0].Part != -1 || re.Refusals[0].Kind != "plan" {
				t.Fatalf("position %+v", re.Refusals[0])
			}
		})
	}
	// Every retention profile is accepted.
	for _, r := range []string{receipts.RetentionNone, receipts.RetentionSession, receipts.RetentionShort} {
		p := *good
		p.Retention = r
		if _, err := CheckPlan(&p, v, receipts.ModeReversible); err != nil {
			t.Errorf("retention %s: %v", r, err)
		}
	}
}

func TestProhibitedByPlan(t *testing.T) {
	d, v := exampleInputs(t)
	k := testKey(t, 1)
	p, err := NewPlan(d, v, k, PlanOptions{Consumer: receipts.Consumer{Kind: "model", ID: "m"}, Purpose: "p",
		Target: "https://m.example/", Now: now, Allowed: []grammar.Category{grammar.CategoryModule}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: p, Key: k})
	var re *RefusedError
	if !errors.As(err, &re) || re.Refusals[0].Code != receipts.ProhibitedCategory {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "PROHIBITED_CATEGORY") || strings.Contains(err.Error(), "payments") {
		t.Fatalf("error text %q", err)
	}
}

func TestLostUtility(t *testing.T) {
	_, v := exampleInputs(t)
	doc := `{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[{"kind":"query","key":"q","text":"ask triage.rank-by-severity owner.team=\"` + canary + `\"\n","label":{"class":"private","weight":1,"categories":[],"subjects":[],"parents":["p"],"handling":[]},"lineage":["l"]}]}`
	d, refs := grammar.LoadProjection([]byte(doc), grammar.LoadOptions{})
	if refs != nil {
		t.Fatal(refs)
	}
	k := testKey(t, 1)
	_, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: plan(t, d, v, k), Key: k})
	var re *RefusedError
	if !errors.As(err, &re) || strings.Contains(err.Error(), canary) {
		t.Fatalf("err = %v", err)
	}
	want := &RefusedError{Refusals: []receipts.Refusal{{Code: receipts.LostUtility, Part: -1, Kind: "plan"}}, Field: "invariants"}
	if diff := cmp.Diff(want, re); diff != "" {
		t.Errorf("refusal (-want +got):\n%s", diff)
	}
	if got, want := err.Error(), "censor: refused: plan invariants: LOST_UTILITY"; got != want {
		t.Errorf("error text %q, want %q", got, want)
	}
}

func TestGrammarRefusalRefusesWholeCut(t *testing.T) {
	_, v := exampleInputs(t)
	doc := `{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[{"kind":"block","key":"b","text":"finding GO-2022-1059 golang.org/x/text@v0.3.7 affected https://go.dev/issue/56152 owner.module=\"` + canary + `\"\nsee ` + canary + `\n","label":{"class":"private","weight":1,"categories":[],"subjects":[],"parents":["p"],"handling":[]},"lineage":["l"]}]}`
	d, refs := grammar.LoadProjection([]byte(doc), grammar.LoadOptions{})
	if refs != nil {
		t.Fatal(refs)
	}
	k := testKey(t, 1)
	out, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: plan(t, d, v, k), Key: k})
	var re *RefusedError
	if out != nil || !errors.As(err, &re) || re.Refusals[0].Code != receipts.UncoveredText || re.Refusals[0].Line != 2 {
		t.Fatalf("out %v err %v", out, err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Fatal("error echoes input")
	}
}

type fakeSource struct{ tokens map[string]string }

func (fakeSource) Mode() string { return receipts.ModeReversible }
func (f fakeSource) Issue(_ context.Context, _ string, pairs []Pair) ([]string, error) {
	out := make([]string, len(pairs))
	for i, p := range pairs {
		out[i] = f.tokens[p.Category.String()+"/"+string(p.Value)]
		if out[i] == "" {
			out[i] = "pcv:aaaaaaaaaa:" + p.Category.String() + ":bbbbbbbbbbbbbbbbbbb" + string(rune('a'+i%26))
		}
	}
	return out, nil
}

func TestTokenSource(t *testing.T) {
	d, v := exampleInputs(t)
	k := testKey(t, 1)
	p := reversiblePlan(t, d, v, k)
	out, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: p, Key: k, Tokens: fakeSource{}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Export, []byte(`owner.person=\"pcv:aaaaaaaaaa:person:`)) || bytes.Contains(out.Export, []byte("redacted:")) {
		t.Fatalf("export %s", out.Export)
	}
	bad := fakeSource{tokens: map[string]string{"person/Dana Okafor": `pcv:x"y`}}
	if _, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: p, Key: k, Tokens: bad}); err == nil {
		t.Fatal("an unsafe token was accepted")
	}
	// An irreversible plan with a reversible source is a mode mismatch.
	if _, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: plan(t, d, v, k), Key: k, Tokens: fakeSource{}}); err == nil {
		t.Fatal("mode mismatch accepted")
	}
}

func TestEscaping(t *testing.T) {
	for _, s := range []string{"plain", "a\"b\\c\nd\te\x01\x1f", "é ü 決済", "\u2028<>&"} {
		got := appendString(nil, []byte(s))
		want, err := canon.Canonicalize(got)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, canonical %s", s, got, want)
		}
	}
}

// TestCutBuffer: with Input.Buffer the export is written into the buffer it
// returns, by both export paths, and is the export written on the heap.
func TestCutBuffer(t *testing.T) {
	d, v := exampleInputs(t)
	k := testKey(t, 1)
	heap := cut(t, d, v, k)
	rp := reversiblePlan(t, d, v, k)
	for _, tc := range []struct {
		name string
		plan *receipts.Plan
		src  TokenSource
		want []byte
	}{
		{"one pass", plan(t, d, v, k), nil, heap.Export},
		{"template", rp, fakeSource{}, nil},
	} {
		var given []byte
		buffer := func(n int) []byte {
			if given != nil {
				t.Fatalf("%s: Buffer called twice", tc.name)
			}
			given = make([]byte, n)
			return given
		}
		out, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: tc.plan, Key: k, Tokens: tc.src, Buffer: buffer})
		if err != nil {
			t.Fatal(err)
		}
		if given == nil || &out.Export[0] != &given[0] {
			t.Fatalf("%s: the export is not in the buffer Buffer returned", tc.name)
		}
		want := tc.want
		if want == nil {
			o, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: tc.plan, Key: k, Tokens: tc.src})
			if err != nil {
				t.Fatal(err)
			}
			want = o.Export
		}
		if !bytes.Equal(out.Export, want) {
			t.Fatalf("%s: export in the buffer differs from the heap one", tc.name)
		}
	}
}

// TestEscapedValueReadsInExport: an owner value written with escapes that,
// decoded, reads in the export (in a candidate text, or across the export's
// JSON) is refused as AMBIGUOUS_SPAN at its first span, before anything is
// returned; the verifier's no-residual claim would fail that cut. An escaped
// value that does not read there is cut as any other.
func TestEscapedValueReadsInExport(t *testing.T) {
	_, v := exampleInputs(t)
	const pre = `ask triage.rank-by-severity owner.team=\"a\" owner.team=\"`
	for _, tc := range []struct {
		name, text string
		col, n     int // the refused span; 0 when accepted
	}{
		// decoded: 1" owner.team="redacted:team:2
		{"reads in a text", pre + `1\\\" owner.team=\\\"redacted:team:2\"\n`, 56, 32},
		// decoded: "}],"profile":"
		{"reads across the JSON", `ask triage.rank-by-severity owner.team=\"\\\"}],\\\"profile\\\":\\\"\"\n`, 41, 19},
		// decoded: one quote, which every token has around it
		{"a lone quote", pre + `\\\"\"\n`, 56, 2},
		{"reads nowhere", pre + `Zoë \\\"zo\\\" Quill\"\n`, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const finding = `finding GO-2022-1059 golang.org/x/text@v0.3.7 affected https://go.dev/issue/56152\n`
			doc := `{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[{"kind":"query","key":"q","text":"` + finding + tc.text +
				`","label":{"class":"private","weight":1,"categories":[],"subjects":[],"parents":["p"],"handling":[]},"lineage":["l"]}]}`
			d, refs := grammar.LoadProjection([]byte(doc), grammar.LoadOptions{})
			if refs != nil {
				t.Fatal(refs)
			}
			k := testKey(t, 1)
			out, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: plan(t, d, v, k), Key: k})
			if tc.n == 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var re *RefusedError
			if out != nil || !errors.As(err, &re) || len(re.Refusals) != 1 {
				t.Fatalf("out %v, err %v", out != nil, err)
			}
			want := receipts.Refusal{Code: receipts.AmbiguousSpan, Part: 0, Kind: "query", Line: 2, Column: tc.col, Length: tc.n,
				Offset: len(finding) - 1 + tc.col - 1}
			if re.Refusals[0] != want {
				t.Fatalf("refusal %+v, want %+v", re.Refusals[0], want)
			}
			if strings.Contains(err.Error(), "redacted:team") || strings.Contains(err.Error(), "kind") {
				t.Fatal("error echoes input")
			}
		})
	}
}

// TestCheckExpiry: a plan is good until the instant before its expires_at;
// at that instant, and after, it is PLAN_MISMATCH on expires_at.
func TestCheckExpiry(t *testing.T) {
	exp := time.Date(2030, 1, 2, 0, 0, 0, 0, time.UTC)
	p := &receipts.Plan{ExpiresAt: exp.Format(time.RFC3339)}
	if err := CheckExpiry(p, exp.Add(-time.Nanosecond)); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	for _, now := range []time.Time{exp, exp.Add(time.Second)} {
		var re *RefusedError
		if err := CheckExpiry(p, now); !errors.As(err, &re) || re.Field != "expires_at" || re.Refusals[0].Code != receipts.PlanMismatch {
			t.Fatalf("at %v: %v", now, err)
		}
	}
}

// keepingSource is a token source that keeps the pairs it was given.
type keepingSource struct{ pairs *[]Pair }

func (keepingSource) Mode() string { return receipts.ModeIrreversible }
func (k keepingSource) Issue(ctx context.Context, d string, pairs []Pair) ([]string, error) {
	*k.pairs = pairs
	return Irreversible{}.Issue(ctx, d, pairs)
}

// TestValuesCleared: the decoded owner values handed to the token source
// are cleared once the cut has used them, whether it succeeds or is refused
// after the tokens were issued; and equal values (also written differently
// only by escapes) are one pair.
func TestValuesCleared(t *testing.T) {
	_, v := exampleInputs(t)
	for name, text := range map[string]string{
		"cut":     `ask triage.rank-by-severity owner.team=\"` + canary + `\" owner.person=\"a \\\"b\\\"\" owner.team=\"` + canary + `\"\n`,
		"refused": `ask triage.rank-by-severity owner.team=\"` + canary + `\" owner.team=\"\\\"\"\n`,
	} {
		t.Run(name, func(t *testing.T) {
			const finding = `finding GO-2022-1059 golang.org/x/text@v0.3.7 affected https://go.dev/issue/56152\n`
			doc := `{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[{"kind":"query","key":"q","text":"` + finding + text +
				`","label":{"class":"private","weight":1,"categories":[],"subjects":[],"parents":["p"],"handling":[]},"lineage":["l"]}]}`
			d, refs := grammar.LoadProjection([]byte(doc), grammar.LoadOptions{})
			if refs != nil {
				t.Fatal(refs)
			}
			k := testKey(t, 1)
			var got []Pair
			_, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: plan(t, d, v, k), Key: k, Tokens: keepingSource{&got}})
			if (err != nil) != (name == "refused") {
				t.Fatalf("err = %v", err)
			}
			if len(got) != 2 {
				t.Fatalf("%d pairs, want 2", len(got))
			}
			for i, p := range got {
				if len(p.Value) == 0 || bytes.Count(p.Value, []byte{0}) != len(p.Value) {
					t.Errorf("pair %d not cleared: %q", i, p.Value)
				}
			}
		})
	}
}
