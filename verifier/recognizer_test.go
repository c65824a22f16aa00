package verifier

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/receipts"
)

func testVocabulary(t testing.TB) *vocabulary {
	t.Helper()
	v, err := parseVocabulary([]byte(testVocab))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// firstRefusal is what the tests compare: the first refusal of a text,
// positioned by line, column (bytes, 1-based) and length.
type firstRefusal struct {
	Code              receipts.Code
	Line, Col, Length int
}

// recognize runs the recognizer over a whole text and returns the first
// refusal, or nil, and the spans of the accepted records.
func recognize(r *recognizer, text []byte) (*firstRefusal, []span) {
	var all []span
	var spans []span
	for pos, line := 0, 1; pos < len(text); line++ {
		start := pos
		var ref *refusal
		spans, pos, ref = r.record(text, pos, spans[:0])
		if ref != nil {
			return &firstRefusal{ref.code, line, ref.off - start + 1, ref.length}, all
		}
		all = append(all, spans...)
	}
	return nil, all
}

const dep = "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417"

func TestRecognizerRefusals(t *testing.T) {
	tests := []struct {
		name string
		text string
		want *firstRefusal
	}{
		{"finding", dep + "\n", nil},
		{"finding with fixed and owners", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module=\"a\" owner.team=\"x \\\"y\\\" \\\\ z\"\n", nil},
		{"ask", "ask triage.explain\nask triage.explain owner.host=\"h-1\"\n", nil},
		{"empty text", "", nil},
		{"prose", "hello world\n", &firstRefusal{receipts.UncoveredText, 1, 1, 11}},
		{"blank line", dep + "\n\n", &firstRefusal{receipts.UncoveredText, 2, 1, 1}},
		{"tab separator", "finding\tGO-2023-2102\n", &firstRefusal{receipts.UncoveredText, 1, 1, 20}},
		{"double space", "finding  GO-2023-2102\n", &firstRefusal{receipts.UncoveredText, 1, 9, 1}},
		{"trailing space", dep + " \n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 2, 1}},
		{"CR before LF", dep + "\r\n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 1, 1}},
		{"text after the record", dep + " trailing\n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 2, 8}},
		{"no final LF", dep, &firstRefusal{receipts.MalformedRecord, 1, 1, len(dep)}},
		{"dependency without @", "finding GO-2023-2102 golang.org/x/net affected\n", &firstRefusal{receipts.MalformedRecord, 1, 22, 16}},
		{"missing field", "finding GO-2023-2102 golang.org/x/net@v0.15.0\n", &firstRefusal{receipts.MalformedRecord, 1, 46, 1}},
		{"keyword alone", "ask\n", &firstRefusal{receipts.MalformedRecord, 1, 1, 3}},
		{"unknown diagnostic", "finding GO-1 golang.org/x/net@v0.15.0 affected x\n", &firstRefusal{receipts.UnknownDiagnostic, 1, 9, 4}},
		{"unknown module", "finding GO-2023-2102 example.com/m@v0.15.0 affected x\n", &firstRefusal{receipts.UnknownModule, 1, 22, 13}},
		{"version of another module", "finding GO-2023-2102 golang.org/x/net@v0.14.0 affected x\n", &firstRefusal{receipts.UnknownVersion, 1, 39, 7}},
		{"unknown fixed version", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v9 x\n", &firstRefusal{receipts.UnknownVersion, 1, 62, 2}},
		{"unknown status", "finding GO-2023-2102 golang.org/x/net@v0.15.0 maybe x\n", &firstRefusal{receipts.UnknownStatus, 1, 47, 5}},
		{"unknown citation", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://x\n", &firstRefusal{receipts.UnknownCitation, 1, 56, 9}},
		{"unknown question", "ask why\n", &firstRefusal{receipts.UnknownQuestion, 1, 5, 3}},
		{"invalid UTF-8 item", "ask \xff\n", &firstRefusal{receipts.InvalidUTF8, 1, 5, 1}},
		{"unknown category", dep + " owner.secret=\"a\"\n", &firstRefusal{receipts.UnknownCategory, 1, len(dep) + 8, 6}},
		{"owner without =", dep + " owner.module\n", &firstRefusal{receipts.MalformedRecord, 1, len(dep) + 2, 12}},
		{"owner without quote", dep + " owner.module=a\n", &firstRefusal{receipts.MalformedRecord, 1, len(dep) + 15, 1}},
		{"unterminated value", dep + " owner.module=\"abc\n", &firstRefusal{receipts.MalformedRecord, 1, len(dep) + 15, 4}},
		{"bad escape", dep + " owner.module=\"a\\n\"\n", &firstRefusal{receipts.MalformedRecord, 1, len(dep) + 17, 2}},
		{"control in value", dep + " owner.module=\"a\tb\"\n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 17, 1}},
		{"bidi control in value", dep + " owner.module=\"a\u202eb\"\n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 17, 3}},
		{"Arabic letter mark in value", dep + " owner.module=\"a\u061cb\"\n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 17, 2}},
		{"Mongolian vowel separator in value", dep + " owner.module=\"a\u180eb\"\n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 17, 3}},
		{"zero width in value", dep + " owner.module=\"a\u200bb\"\n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 17, 3}},
		{"noncharacter in value", dep + " owner.module=\"a\ufdd0\"\n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 17, 3}},
		{"C1 control in value", dep + " owner.module=\"a\u0085\"\n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 17, 2}},
		{"invalid UTF-8 in value", dep + " owner.module=\"a\xc3\"\n", &firstRefusal{receipts.InvalidUTF8, 1, len(dep) + 17, 1}},
		{"empty value", dep + " owner.module=\"\"\n", &firstRefusal{receipts.AmbiguousSpan, 1, len(dep) + 15, 2}},
		{"padded value", dep + " owner.module=\" a\"\n", &firstRefusal{receipts.AmbiguousSpan, 1, len(dep) + 16, 2}},
		{"non-breaking space pad", dep + " owner.module=\"a\u00a0\"\n", &firstRefusal{receipts.AmbiguousSpan, 1, len(dep) + 16, 3}},
		{"not NFC", dep + " owner.module=\"e\u0301\"\n", &firstRefusal{receipts.AmbiguousSpan, 1, len(dep) + 16, 3}},
		{"value equals vocabulary item", dep + " owner.module=\"golang.org/x/net\"\n", &firstRefusal{receipts.AmbiguousSpan, 1, len(dep) + 16, 16}},
		{"value after owner", dep + " owner.module=\"a\"x\n", &firstRefusal{receipts.UncoveredText, 1, len(dep) + 18, 1}},
		{"second line refused", dep + "\nask nope\n", &firstRefusal{receipts.UnknownQuestion, 2, 5, 4}},
	}
	r := newRecognizer(testVocabulary(t), false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := recognize(r, []byte(tt.text))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRecognizerLimits(t *testing.T) {
	r := newRecognizer(testVocabulary(t), false)
	var owners strings.Builder
	owners.WriteString("ask triage.explain")
	for i := range MaxOwnersPerRecord + 1 {
		owners.WriteString(" owner.team=\"t" + itoa(i) + "\"")
	}
	owners.WriteString("\n")
	got, _ := recognize(r, []byte(owners.String()))
	if got == nil || got.Code != receipts.LimitExceeded {
		t.Errorf("65 owners: %+v", got)
	}
	long := "ask triage.explain owner.team=\"" + strings.Repeat("x", MaxRecordBytes) + "\"\n"
	got, _ = recognize(r, []byte(long))
	if diff := cmp.Diff(&firstRefusal{receipts.LimitExceeded, 1, 1, MaxRecordBytes + 1}, got); diff != "" {
		t.Errorf("long record:\n%s", diff)
	}
	exact := "ask triage.explain owner.team=\"" + strings.Repeat("x", MaxRecordBytes-len("ask triage.explain owner.team=\"\"")) + "\"\n"
	if got, _ := recognize(r, []byte(exact)); got != nil {
		t.Errorf("a record of exactly %d bytes: %+v", MaxRecordBytes, got)
	}
}

func TestRecognizerSpans(t *testing.T) {
	text := []byte("finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.team=\"a b\"\n")
	r := newRecognizer(testVocabulary(t), false)
	ref, spans := recognize(r, text)
	if ref != nil {
		t.Fatal(ref)
	}
	type piece struct {
		Kind spanKind
		Text string
	}
	var got []piece
	for _, s := range spans {
		got = append(got, piece{s.kind, string(text[s.start:s.end])})
	}
	want := []piece{
		{spanKeyword, "finding"}, {spanSep, " "}, {spanDiagnostic, "GO-2023-2102"}, {spanSep, " "},
		{spanModule, "golang.org/x/net"}, {spanAt, "@"}, {spanVersion, "v0.15.0"}, {spanSep, " "},
		{spanStatus, "affected"}, {spanSep, " "}, {spanFixed, "fixed="}, {spanFixedVersion, "v0.17.0"}, {spanSep, " "},
		{spanCitation, "https://go.dev/issue/63417"}, {spanSep, " "}, {spanOwnerKey, "owner.team"}, {spanEq, "="},
		{spanQuote, "\""}, {spanValue, "a b"}, {spanQuote, "\""}, {spanSep, "\n"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spans (-want +got):\n%s", diff)
	}
}

// TestTokenShapes pins the token grammar.
func TestTokenShapes(t *testing.T) {
	tests := []struct {
		tok string
		cat int
		ok  bool
	}{
		{"redacted:module:1", 0, true},
		{"redacted:host:120", 6, true},
		{"redacted:module:0", 0, false},
		{"redacted:module:01", 0, false},
		{"redacted:module:", 0, false},
		{"redacted:modules:1", 0, false},
		{"redacted:module:1x", 0, false},
		{"pcv:abcdefgh23:team:abcdefghijklmnopqrst", 4, true},
		{"pcv:abcdefgh2:team:abcdefghijklmnopqrst", 4, false},
		{"pcv:abcdefgh23:team:abcdefghijklmnopqrs1", 4, false},
		{"pcv:ABCDEFGH23:team:abcdefghijklmnopqrst", 4, false},
		{"pcv:abcdefgh23:tea:abcdefghijklmnopqrst", 4, false},
		{"pcv:abcdefgh23::abcdefghijklmnopqrst", 4, false},
	}
	for _, tt := range tests {
		if got := tokenOfCategory([]byte(tt.tok), tt.cat); got != tt.ok {
			t.Errorf("tokenOfCategory(%q, %d) = %v", tt.tok, tt.cat, got)
		}
	}
	if got := string(appendIrreversible(nil, 5, 1234)); got != "redacted:person:1234" {
		t.Errorf("appendIrreversible = %q", got)
	}
}

// TestMatcherAgainstNaive compares the Aho–Corasick matcher with a naive
// search on random texts over a small alphabet.
func TestMatcherAgainstNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab c"[rng.IntN(4)]
		}
		return b
	}
	for iter := range 300 {
		var pats [][]byte
		seen := map[string]bool{}
		for range 1 + rng.IntN(8) {
			p := word(1 + rng.IntN(5))
			if !seen[string(p)] {
				seen[string(p)] = true
				pats = append(pats, p)
			}
		}
		text := word(rng.IntN(60))
		type m struct{ S, E int }
		var want []m
		for e := 1; e <= len(text); e++ {
			for s := 0; s < e; s++ {
				if seen[string(text[s:e])] {
					want = append(want, m{s, e})
				}
			}
		}
		mt := newMatcher(pats)
		for _, dense := range []bool{true, false} {
			if !dense {
				mt.delta = nil // the fail-link walk used for large automata
			}
			var got []m
			mt.scan(text, 0, len(text), func(s, e int) bool {
				got = append(got, m{s, e})
				return true
			})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("iteration %d dense=%v: patterns %q text %q (-want +got):\n%s", iter, dense, pats, text, diff)
			}
		}
	}
}

// TestRecognizerEmptyTokenSlot: in an export (token mode) an empty owner
// slot is refused as in a source — no token is empty — at its quotes. Found
// by FuzzRecognizer (testdata/fuzz/FuzzRecognizer/edba1f5879652951): the
// recognizer used to accept it with an empty span.
func TestRecognizerEmptyTokenSlot(t *testing.T) {
	rec := "ask triage.explain owner.host=\"\"\n"
	for _, tokens := range []bool{false, true} {
		got, _ := recognize(newRecognizer(testVocabulary(t), tokens), []byte(rec))
		if diff := cmp.Diff(&firstRefusal{receipts.AmbiguousSpan, 1, len(rec) - 2, 2}, got); diff != "" {
			t.Errorf("tokens=%v (-want +got):\n%s", tokens, diff)
		}
	}
}
