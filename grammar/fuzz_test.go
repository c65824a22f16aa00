package grammar

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParse: the parser never panics; accepted text is tiled exactly by its
// spans, and rendering the spans (literals from the grammar, items from the
// vocabulary, owner values decoded and re-escaped) gives the text back.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("ask triage.rank-by-severity owner.team=\"a\\\"b\\\\\" owner.file=\"x y\"\n"))
	f.Add([]byte("finding GO-2022-0969 golang.org/x/text@v0.3.7 fixed fixed=v0.3.8 https://pkg.go.dev/vuln/GO-2023-2102\n"))
	for _, c := range refusalCases {
		if len(c.text) < 4096 {
			f.Add([]byte(c.text))
		}
	}
	v := testVocab(f)
	p := NewParser(v, Options{Limits: Limits{MaxRecord: 4096, MaxOwners: 8}})
	f.Fuzz(func(t *testing.T, text []byte) {
		var spans []Span
		st, refs := p.Parse(text, func(s Span) { spans = append(spans, s) })
		for _, r := range refs {
			if r.Offset < 0 || r.Offset+r.Length > len(text) || r.Line < 1 || r.Column < 1 {
				t.Fatalf("refusal out of range: %+v (len %d)", r, len(text))
			}
		}
		if len(refs) > 0 {
			return
		}
		checkTiling(t, text, spans)
		if got := Render(v, text, spans); !bytes.Equal(got, text) {
			t.Fatalf("render mismatch:\n got %q\nwant %q", got, text)
		}
		owners := 0
		for _, n := range st.Owners {
			owners += n
		}
		n := 0
		for _, s := range spans {
			if s.Kind == SpanOwner {
				n++
			}
		}
		if n != owners {
			t.Fatalf("%d owner spans, stats say %d", n, owners)
		}
	})
}

// mirror is the projection as encoding/json reads it.
type mirror struct {
	Schema  string `json:"schema"`
	Profile string `json:"profile"`
	Parts   []struct {
		Kind    string   `json:"kind"`
		Key     string   `json:"key"`
		Text    string   `json:"text"`
		Label   *Label   `json:"label"`
		Lineage []string `json:"lineage"`
	} `json:"parts"`
}

// FuzzProjection: the strict loader never accepts a document that
// encoding/json would read differently (duplicates, case-variant keys, U+FFFD
// substitution, trailing data).
func FuzzProjection(f *testing.F) {
	f.Add([]byte(goodProjection))
	f.Add([]byte(`{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[{"kind":"block","key":"k","text":"ask x\n","lineage":["l"]}]}`))
	f.Add([]byte(`{"schema":"Projection@1","schema":"Projection@1","profile":"closed-diagnostic@1","parts":[]}`))
	f.Add([]byte(`{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[{"kind":"block","Kind":"tool","key":"\ud800","text":"\u00e9\n","lineage":["l"]}]}`))
	f.Add([]byte("{\"schema\":\"Projection@1\",\"profile\":\"closed-diagnostic@1\",\"parts\":[{\"kind\":\"block\",\"key\":\"\xff\",\"text\":\"\",\"lineage\":[]}]} "))
	f.Fuzz(func(t *testing.T, data []byte) {
		d, refs := LoadProjection(data, LoadOptions{MaxBytes: 1 << 20})
		if refs != nil {
			return
		}
		var m mirror
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("strict accepted, encoding/json refused: %v", err)
		}
		if dec.More() {
			t.Fatal("strict accepted trailing data")
		}
		got := mirror{Schema: d.Schema, Profile: d.Profile}
		got.Parts = make([]struct {
			Kind    string   `json:"kind"`
			Key     string   `json:"key"`
			Text    string   `json:"text"`
			Label   *Label   `json:"label"`
			Lineage []string `json:"lineage"`
		}, len(d.Parts))
		for i, p := range d.Parts {
			got.Parts[i].Kind, got.Parts[i].Key, got.Parts[i].Text = p.Kind, p.Key, string(p.Text)
			got.Parts[i].Label, got.Parts[i].Lineage = p.Label, p.Lineage
		}
		if diff := cmp.Diff(m, got); diff != "" {
			t.Fatalf("readers disagree (-encoding/json +strict):\n%s", diff)
		}
	})
}
