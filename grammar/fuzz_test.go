package grammar

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
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

// quotedPiece returns an 8-byte piece of in that msg quotes, or "". msg is
// cut at digits, white space and the punctuation of positions and paths
// (line and column numbers, "[3]", "x: y"), and a piece inside one of the
// fixed texts msg is made of (its framing, schema names, the fixed reasons)
// is not a quote: the fuzzer finds those texts by comparison tracing.
func quotedPiece(msg string, in []byte, fixed ...string) string {
	const n = 8
	seg := func(r rune) bool { return r >= '0' && r <= '9' || strings.ContainsRune(" \t\n:[]*().,", r) }
	for _, s := range strings.FieldsFunc(msg, seg) {
		for i := 0; i+n <= len(s); i++ {
			w := s[i : i+n]
			if !bytes.Contains(in, []byte(w)) || slices.ContainsFunc(fixed, func(f string) bool { return strings.Contains(f, w) }) {
				continue
			}
			return w
		}
	}
	return ""
}

// vocabFixed are the texts a vocabulary refusal is made of, besides the
// fixed reasons: its framing and the names of the schema.
var vocabFixed = []string{"grammar", "vocabulary", "receipts", "json", "offset", VocabularySchema, "schema", "revision", "diagnostics", "modules", "statuses",
	"citations", "questions", "diagnostic", "module", "version", "status", "citation", "question"}

// vocabReasons are the reasons of a VocabularyError that wraps no error.
var vocabReasons = []string{"schema is not " + VocabularySchema, "empty", "longer than 4096 bytes", "invalid UTF-8",
	"contains a separator, quote, backslash, control, invisible or white-space character", "not NFC",
	`contains "@"`, `begins with "fixed="`}

// FuzzLoadVocabulary: LoadVocabulary never panics and is deterministic. A
// refusal is a *VocabularyError (wrapping a *canon.SyntaxError for a
// document that is not strict JSON, else with one of the fixed reasons)
// that quotes no piece of the document.
// An accepted vocabulary's digest is S(canonical form), unchanged when the
// document is canonicalized or re-indented; every listed item is found in
// its class and by Contains, a string next to an item is found only if it
// is itself listed, each class holds exactly its distinct items, and every
// item passes the item rules (non-empty, at most 4 KiB, NFC, no separator).
func FuzzLoadVocabulary(f *testing.F) {
	data, err := os.ReadFile("testdata/vocab.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	doc := func(diag, mod, ver, cite string) []byte {
		return []byte(`{"schema":"Vocabulary@1","revision":"r","diagnostics":["` + diag + `"],"modules":{"` + mod +
			`":["` + ver + `"]},"statuses":["affected"],"citations":["` + cite + `"],"questions":["q"]}`)
	}
	f.Add(doc("GO-1", "m.example/a", "v1.0.0", "https://x.example/1"))
	f.Add(doc(canary, "m.example/"+canary, "v1.0.0-"+canary, "https://x.example/"+canary))
	f.Add(doc("GO "+canary, "m.example/a", "v1.0.0", "https://x.example/1"))
	f.Add(doc("GO-1", "m@"+canary, "v1.0.0", "https://x.example/1"))
	f.Add(doc("GO-1", "m.example/a", "v1@"+canary, "https://x.example/1"))
	f.Add(doc("GO-1", "m.example/a", "v1.0.0", "fixed="+canary))
	f.Add(doc("Jose\u0301"+canary, "m.example/a", "v1.0.0", "https://x.example/1"))
	f.Add(doc(`GO\"`+canary, "m.example/a", "v1.0.0", "https://x.example/1"))
	f.Add(doc("GO\\u200b"+canary, "m.example/a", "v1.0.0", "https://x.example/1"))
	f.Add(doc(strings.Repeat("x", 4097), "m.example/a", "v1.0.0", "https://x.example/1"))
	f.Add(doc("GO-1", "m.example/a", "v1.0.0", "GO-1")) // the same item in two classes
	f.Add([]byte(`{"schema":"Vocabulary@1","revision":"r","diagnostics":["a","a"],"modules":{"m":[]},"statuses":[],"citations":null,"questions":[]}`))
	f.Add([]byte(`{"schema":"Vocabulary@1","revision":"` + canary + `","diagnostics":[],"modules":{},"statuses":[],"citations":[],"questions":[],"` + canary + `":1}`))
	f.Add([]byte(`{"schema":"Vocabulary@1","schema":"Vocabulary@1"}`))
	f.Add([]byte(`{"schema":"` + canary + `"}`))
	f.Add([]byte(`{"schema":"Vocabulary@1","diagnostics":["\ud800` + canary + `"]}`))
	f.Add([]byte("{\"schema\":\"Vocabulary@1\",\"diagnostics\":[\"\xff" + canary + "\"]}"))
	f.Add([]byte(`[` + canary + `]`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := LoadVocabulary(data)
		v2, err2 := LoadVocabulary(data)
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() ||
			err == nil && (v.Digest() != v2.Digest() || v.Revision() != v2.Revision()) {
			t.Fatalf("two loads differ: %v / %v", err, err2)
		}
		if err != nil {
			var ve *VocabularyError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T is not a *VocabularyError: %v", err, err)
			}
			var se *canon.SyntaxError
			if ve.Err != nil && !errors.As(ve.Err, &se) {
				t.Fatalf("wrapped error %T is not a *canon.SyntaxError", ve.Err)
			}
			if ve.Err == nil && !slices.Contains(vocabReasons, strings.TrimPrefix(ve.Reason, "version ")) {
				t.Fatalf("reason %q is not one of the fixed reasons", ve.Reason)
			}
			msg := err.Error()
			assertNoCanary(t, msg)
			fixed := append(vocabFixed, ve.Reason)
			if se != nil {
				fixed = append(fixed, se.Reason) // receipts' closed set
			}
			if p := quotedPiece(msg, data, fixed...); p != "" {
				t.Fatalf("error quotes the document (%q): %s", p, msg)
			}
			return
		}

		canonical, err := canon.Canonicalize(data)
		if err != nil {
			t.Fatalf("accepted a document Canonicalize refuses: %v", err)
		}
		if v.Digest() != receipts.SHA256(canonical) {
			t.Fatalf("digest %s is not S(canonical form)", v.Digest())
		}
		var indented bytes.Buffer
		if err := json.Indent(&indented, canonical, "", "\t"); err != nil {
			t.Fatalf("canonical form does not indent: %v", err)
		}
		for _, re := range [][]byte{canonical, indented.Bytes()} {
			rv, err := LoadVocabulary(re)
			if err != nil {
				t.Fatalf("reformatted document refused: %v", err)
			}
			if rv.Digest() != v.Digest() || rv.Revision() != v.Revision() {
				t.Fatalf("reformatting changed the vocabulary: %s %q, was %s %q", rv.Digest(), rv.Revision(), v.Digest(), v.Revision())
			}
		}

		var d vocabDoc
		if err := canon.Unmarshal(data, &d, canon.Options{MaxBytes: MaxVocabularyBytes}); err != nil {
			t.Fatalf("accepted a document Unmarshal refuses: %v", err)
		}
		if d.Revision != v.Revision() {
			t.Fatalf("revision %q, document says %q", v.Revision(), d.Revision)
		}
		listed := map[string]bool{}
		distinct := func(items []string) int {
			m := map[string]bool{}
			for _, it := range items {
				m[it] = true
				listed[it] = true
				if r := checkItem(it); r != "" {
					t.Fatalf("accepted an item that is %s", r)
				}
				if !v.Contains([]byte(it)) {
					t.Fatalf("listed item %q not found by Contains", it)
				}
			}
			return len(m)
		}
		has := []struct {
			name  string
			items []string
			has   func(string) bool
		}{
			{"diagnostics", d.Diagnostics, v.HasDiagnostic},
			{"statuses", d.Statuses, v.HasStatus},
			{"citations", d.Citations, v.HasCitation},
			{"questions", d.Questions, v.HasQuestion},
		}
		size := v.Size()
		for _, c := range has {
			if n := distinct(c.items); size[c.name] != n {
				t.Fatalf("%s: size %d, %d distinct items", c.name, size[c.name], n)
			}
			for _, it := range c.items {
				if !c.has(it) {
					t.Fatalf("%s: listed item %q not found", c.name, it)
				}
			}
		}
		mods := make([]string, 0, len(d.Modules))
		deps := 0
		for m, vers := range d.Modules {
			mods = append(mods, m)
			if !v.HasModule(m) {
				t.Fatalf("listed module %q not found", m)
			}
			deps += distinct(vers)
			for _, ver := range vers {
				if !v.HasVersion(m, ver) {
					t.Fatalf("listed version %q of %q not found", ver, m)
				}
			}
		}
		if n := distinct(mods); size["modules"] != n || size["versions"] != deps {
			t.Fatalf("modules/versions: size %d/%d, %d/%d distinct items", size["modules"], size["versions"], n, deps)
		}
		for it := range listed {
			for _, p := range []string{it[:len(it)-1], it + "-", "x" + it} {
				if v.Contains([]byte(p)) != listed[p] {
					t.Fatalf("Contains(%q) = %v, listed %v", p, v.Contains([]byte(p)), listed[p])
				}
			}
		}
	})
}
