package grammar

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/receipts"
)

const goodProjection = `{
  "schema": "Projection@1",
  "profile": "closed-diagnostic@1",
  "parts": [
    {
      "kind": "block",
      "key": "scan/findings",
      "text": "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module=\"` + canary + `\"\n",
      "label": {"class": "private", "weight": 3, "categories": ["owner.module"],
                "subjects": ["ns/payments"], "parents": ["sha256:aa"], "handling": []},
      "lineage": ["sha256:aa"]
    },
    {"kind": "query", "key": "q", "text": "ask triage.rank-by-severity\n",
     "label": {"class": "internal", "weight": 1, "categories": [], "subjects": [],
               "parents": ["sha256:bb"], "handling": []},
     "lineage": ["sha256:bb"]}
  ]
}`

func TestLoadProjectionAccepts(t *testing.T) {
	d, refs := LoadProjection([]byte(goodProjection), LoadOptions{})
	if len(refs) != 0 {
		t.Fatalf("refused: %v", refs)
	}
	res := Check(d, NewParser(testVocab(t), Options{}), 0, nil)
	if !res.OK() {
		t.Fatalf("check refused: %v", res.Refusals)
	}
	want := Label{Class: "private", Weight: 3, Categories: []string{"owner.module"},
		Subjects: []string{"ns/payments"}, Parents: []string{"sha256:aa", "sha256:bb"}, Handling: []string{}}
	if diff := cmp.Diff(want, res.Label); diff != "" {
		t.Errorf("join (-want +got):\n%s", diff)
	}
	if res.Stats.Records != 2 || res.Stats.Owners[CategoryModule] != 1 {
		t.Errorf("stats = %+v", res.Stats)
	}
}

// TestProjectionDigestIgnoresFormatting: reordered keys and reformatted JSON
// give the identical canonical form, so identical digests.
func TestProjectionDigestIgnoresFormatting(t *testing.T) {
	a, refs := LoadProjection([]byte(goodProjection), LoadOptions{})
	if refs != nil {
		t.Fatal(refs)
	}
	// Decode generically, re-encode compactly with keys in another order.
	var m map[string]any
	if err := json.Unmarshal([]byte(goodProjection), &m); err != nil {
		t.Fatal(err)
	}
	reordered := `{"parts":` + mustJSON(t, m["parts"]) + `,   "profile":"closed-diagnostic@1",` + "\n\t" + `"schema":"Projection@1"}`
	b, refs := LoadProjection([]byte(reordered), LoadOptions{})
	if refs != nil {
		t.Fatal(refs)
	}
	ca, cb := mustCanon(t, a), mustCanon(t, b)
	if !bytes.Equal(ca, cb) {
		t.Fatalf("canonical forms differ")
	}
	if receipts.SHA256(ca) != receipts.SHA256(cb) {
		t.Fatal("digests differ")
	}
	// A change of one byte of text changes it.
	c, _ := LoadProjection([]byte(strings.Replace(goodProjection, "v0.15.0", "v0.17.0", 1)), LoadOptions{})
	if bytes.Equal(ca, mustCanon(t, c)) {
		t.Fatal("different text, same canonical form")
	}
}

func mustCanon(t *testing.T, d *Document) []byte {
	t.Helper()
	c, err := d.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestUnicodeEscapesDecodeToItems: JSON \u escapes that decode to vocabulary
// items are the items (the grammar sees decoded text).
func TestUnicodeEscapesDecodeToItems(t *testing.T) {
	doc := strings.Replace(goodProjection, `"text": "finding GO-2023-2102 golang.org`, `"text": "\u0066inding GO\u002d2023-2102 golang\u002eorg`, 1)
	if doc == goodProjection {
		t.Fatal("replacement did not apply")
	}
	d, refs := LoadProjection([]byte(doc), LoadOptions{})
	if refs != nil {
		t.Fatal(refs)
	}
	if res := Check(d, NewParser(testVocab(t), Options{}), 0, nil); !res.OK() {
		t.Fatalf("refused: %v", res.Refusals)
	}
}

func TestLoadProjectionRefuses(t *testing.T) {
	part := func(fields string) string {
		return `{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[{` + fields + `}]}`
	}
	const lbl = `"label":{"class":"private","weight":1,"categories":[],"subjects":[],"parents":["p"],"handling":[]}`
	const ok = `"kind":"block","key":"k","text":"ask triage.rank-by-severity\n",` + lbl + `,"lineage":["l"]`
	tests := []struct {
		name string
		doc  string
		want receipts.Refusal
	}{
		// The kind is not one of the list: the refusal does not repeat it.
		{"unknown part kind", part(strings.Replace(ok, `"block"`, `"`+canary+`"`, 1)), receipts.Refusal{Code: receipts.MalformedRecord, Part: 0}},
		{"control bytes as kind", part(strings.Replace(ok, `"block"`, `"\u001b[31m\n"`, 1)), receipts.Refusal{Code: receipts.MalformedRecord, Part: 0}},
		{"unknown field", part(ok + `,"note":"` + canary + `"`), receipts.Refusal{Code: receipts.MalformedRecord, Part: -1, Line: 1, Column: 247, Length: 6}},
		{"case-variant field", part(ok + `,"Text":"` + canary + `"`), receipts.Refusal{Code: receipts.MalformedRecord, Part: -1, Line: 1, Column: 247, Length: 6}},
		{"duplicate key", part(ok + `,"text":"ask triage.suggest-upgrade owner.team=\"` + canary + `\"\n"`), receipts.Refusal{Code: receipts.MalformedRecord, Part: -1, Line: 1, Column: 247, Length: 6}},
		{"raw invalid UTF-8", part(strings.Replace(ok, `"k"`, "\"\xff"+canary+"\"", 1)), receipts.Refusal{Code: receipts.InvalidUTF8, Part: -1, Line: 1, Column: 90, Length: 1}},
		{"lone surrogate", part(strings.Replace(ok, `"k"`, `"\ud800`+canary+`"`, 1)), receipts.Refusal{Code: receipts.InvalidUTF8, Part: -1, Line: 1, Column: 90, Length: 6}},
		{"trailing data", part(ok) + `{}`, receipts.Refusal{Code: receipts.MalformedRecord, Part: -1, Line: 1, Column: 249, Length: 1}},
		{"wrong schema", strings.Replace(part(ok), "Projection@1", "Projection@2", 1), receipts.Refusal{Code: receipts.MalformedRecord, Part: -1, Line: 1, Column: 11, Length: 14}},
		{"bad label class", part(strings.Replace(ok, `"private"`, `"secret"`, 1)), receipts.Refusal{Code: receipts.MalformedRecord, Part: 0, Kind: "block"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, refs := LoadProjection([]byte(tt.doc), LoadOptions{})
			if len(refs) != 1 {
				t.Fatalf("got %v, want one refusal", refs)
			}
			got := refs[0]
			got.Offset = 0
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			assertNoCanary(t, got.Error())
		})
	}
	// Not an object: one reason, not one per missing member.
	for _, doc := range []string{`null`, `[]`, `"x"`, `{}`} {
		if _, refs := LoadProjection([]byte(doc), LoadOptions{}); len(refs) != 1 || refs[0].Code != receipts.MalformedRecord {
			t.Errorf("%s: %v", doc, refs)
		}
	}
	if _, refs := LoadProjection([]byte(part(ok)), LoadOptions{MaxBytes: 10}); len(refs) != 1 || refs[0].Code != receipts.LimitExceeded {
		t.Errorf("size limit: %v", refs)
	}
}

func TestCheckLineage(t *testing.T) {
	l := func(parents ...string) *Label { return &Label{Class: "private", Parents: parents} }
	tests := []struct {
		name  string
		parts []Part
		max   int
		want  []receipts.Refusal
	}{
		{"ok", []Part{{Kind: "block", Label: l("a"), Lineage: []string{"x"}}}, 0, nil},
		{"empty lineage", []Part{{Kind: "block", Label: l("a"), Lineage: []string{}}}, 0, []receipts.Refusal{{Code: receipts.UnknownLineage, Part: 0, Kind: "block"}}},
		{"absent lineage", []Part{{Kind: "block", Label: l("a")}, {Kind: "query", Label: l(), Lineage: []string{"y"}}}, 0, []receipts.Refusal{{Code: receipts.UnknownLineage, Part: 0, Kind: "block"}}},
		{"unknown entry", []Part{{Kind: "tool", Label: l("a"), Lineage: []string{"x", "unknown"}}}, 0, []receipts.Refusal{{Code: receipts.UnknownLineage, Part: 0, Kind: "tool"}}},
		{"missing label", []Part{{Kind: "history", Lineage: []string{"x"}}}, 0, []receipts.Refusal{{Code: receipts.UnknownLineage, Part: 0, Kind: "history"}}},
		{"excess ancestry", []Part{{Kind: "block", Label: l("a", "b"), Lineage: []string{"x"}}, {Kind: "block", Label: l("b", "c"), Lineage: []string{"x"}}}, 2, []receipts.Refusal{{Code: receipts.ExcessAncestry, Part: 1, Kind: "block"}}},
		{"at the limit", []Part{{Kind: "block", Label: l("a", "b"), Lineage: []string{"x"}}, {Kind: "block", Label: l("b", "a"), Lineage: []string{"x"}}}, 2, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, CheckLineage(tt.parts, tt.max)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	// The default is 64 distinct parents.
	var ps []string
	for i := 0; i < 65; i++ {
		ps = append(ps, strings.Repeat("p", i+1))
	}
	got := CheckLineage([]Part{{Kind: "block", Label: l(ps...), Lineage: []string{"x"}}}, 0)
	if len(got) != 1 || got[0].Code != receipts.ExcessAncestry {
		t.Errorf("65 parents: %v", got)
	}
}

// TestLoadProjectionBuffer: with LoadOptions.Buffer a large projection's
// texts are kept in the buffer it supplies, and the document is the same.
func TestLoadProjectionBuffer(t *testing.T) {
	// The first record as written in goodProjection, repeated.
	rec := `finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module=\"` + canary + `\"\n`
	big := strings.Replace(goodProjection, rec, strings.Repeat(rec, 1000), 1)
	if len(big) < 100<<10 {
		t.Fatalf("projection of %d bytes is too small for the test", len(big))
	}
	var buf []byte
	d, refs := LoadProjection([]byte(big), LoadOptions{Buffer: func(n int) []byte { buf = make([]byte, n); return buf }})
	if refs != nil {
		t.Fatal(refs)
	}
	want, _ := LoadProjection([]byte(big), LoadOptions{})
	text := d.Parts[0].Text
	if !bytes.Equal(text, want.Parts[0].Text) || len(text) < 64<<10 || buf == nil {
		t.Fatalf("text of %d bytes differs from the heap load", len(text))
	}
	// The text is in buf: writing buf rewrites it.
	for i := range buf {
		buf[i] = 'X'
	}
	if strings.Trim(string(text), "X") != "" {
		t.Fatal("the part's text is not in the buffer Buffer supplied")
	}
}
