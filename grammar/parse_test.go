package grammar

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/receipts"
)

// canary is planted in every owner value of the refusal tests; no error text
// may ever contain any part of it.
const canary = "CANARY-7f3a-ledger"

func testVocab(t testing.TB) *Vocabulary {
	t.Helper()
	data, err := os.ReadFile("testdata/vocab.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := LoadVocabulary(data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

const good = "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module=\"" + canary + "\"\n"

func TestParseAccepts(t *testing.T) {
	v := testVocab(t)
	p := NewParser(v, Options{})
	long := strings.Repeat("x", 8<<10)
	tests := []struct {
		name   string
		text   string
		owners map[string]int
		public int
	}{
		{"finding with fixed and owner", good, map[string]int{"module": 1}, 6},
		{"finding without fixed", "finding CVE-2023-44487 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417\n", map[string]int{}, 5},
		{"ask", "ask triage.rank-by-severity owner.team=\"payments\"\n", map[string]int{"team": 1}, 1},
		{"escapes", "ask triage.rank-by-severity owner.file=\"a\\\"b\\\\c.go\"\n", map[string]int{"file": 1}, 1},
		{"8 KiB value", "ask triage.rank-by-severity owner.function=\"" + long + "\"\n", map[string]int{"function": 1}, 1},
		{"spaces brackets commas", "ask triage.rank-by-severity owner.person=\"Ana María (ops), [lead]\"\n", map[string]int{"person": 1}, 1},
		{"non-Latin scripts", "ask triage.rank-by-severity owner.team=\"決済チーム Платежи دفع\"\n", map[string]int{"team": 1}, 1},
		{"many owners", "finding GO-2022-0969 golang.org/x/text@v0.3.7 not_affected https://pkg.go.dev/vuln/GO-2023-2102 owner.module=\"m\" owner.package=\"m/p\" owner.function=\"(*T).F\" owner.host=\"db1.corp\"\n", map[string]int{"module": 1, "package": 1, "function": 1, "host": 1}, 5},
		{"same value two categories", "ask triage.rank-by-severity owner.module=\"corp/x\" owner.package=\"corp/x\"\n", map[string]int{"module": 1, "package": 1}, 1},
		{"empty text", "", map[string]int{}, 0},
		{"two records", good + "ask triage.suggest-upgrade\n", map[string]int{"module": 1}, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spans []Span
			st, refs := p.Parse([]byte(tt.text), func(s Span) { spans = append(spans, s) })
			if len(refs) != 0 {
				t.Fatalf("refused: %v", refs)
			}
			if diff := cmp.Diff(tt.owners, st.OwnerSpans()); diff != "" {
				t.Errorf("owners (-want +got):\n%s", diff)
			}
			if st.PublicItems != tt.public {
				t.Errorf("public items = %d, want %d", st.PublicItems, tt.public)
			}
			checkTiling(t, []byte(tt.text), spans)
			if got := Render(v, []byte(tt.text), spans); !bytes.Equal(got, []byte(tt.text)) {
				t.Errorf("render mismatch:\n got %q\nwant %q", got, tt.text)
			}
		})
	}
}

// checkTiling asserts that spans cover text exactly, in order, without gaps or
// overlaps.
func checkTiling(t testing.TB, text []byte, spans []Span) {
	t.Helper()
	off := 0
	for i, s := range spans {
		if s.Off != off || s.Len < 0 {
			t.Fatalf("span %d at %d len %d, want offset %d", i, s.Off, s.Len, off)
		}
		if s.Len == 0 && s.Kind != SpanOwner {
			t.Fatalf("span %d is empty", i)
		}
		off += s.Len
	}
	if off != len(text) {
		t.Fatalf("spans cover %d of %d bytes", off, len(text))
	}
}

type refusalCase struct {
	name string
	text string
	want receipts.Refusal // Code, Line, Column, Length
}

// refusalCases holds at least one case per code the parser produces, and every
// refused shape the grammar issue lists.
var refusalCases = []refusalCase{
	// UNCOVERED_TEXT
	{"prose line", "The payments team owns " + canary + ".\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 1, Length: 42}},
	{"blank line", good + "\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 2, Column: 1, Length: 1}},
	{"CRLF", strings.TrimSuffix(good, "\n") + "\r\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: len(good), Length: 1}},
	{"tab separator", "ask\ttriage.rank-by-severity owner.team=\"" + canary + "\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 1, Length: 59}},
	{"tab inside a field", "finding GO-2023-2102\tgolang.org/x/net@v0.15.0 affected https://go.dev/issue/63417\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 21, Length: 1}},
	{"double space", "finding GO-2023-2102  golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 22, Length: 1}},
	{"double space before owner", "ask triage.rank-by-severity  owner.team=\"" + canary + "\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 29, Length: 1}},
	{"trailing space", "ask triage.rank-by-severity owner.team=\"" + canary + "\" \n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 60, Length: 1}},
	{"trailing space after citation", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 \n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 82, Length: 1}},
	{"prose after citation", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 see " + canary + "\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 83, Length: 22}},
	{"text after closing quote", "ask triage.rank-by-severity owner.team=\"" + canary + "\"x\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 60, Length: 1}},
	{"zero-width in value", "ask triage.rank-by-severity owner.team=\"pay\u200bments\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 44, Length: 3}},
	{"bidi in value", "ask triage.rank-by-severity owner.team=\"pay\u202ements\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 44, Length: 3}},
	{"control in value", "ask triage.rank-by-severity owner.team=\"pay\x01ments\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 44, Length: 1}},
	{"C1 control in value", "ask triage.rank-by-severity owner.team=\"pay\u0085ments\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 44, Length: 2}},
	{"noncharacter in value", "ask triage.rank-by-severity owner.team=\"pay\ufdd0ments\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 44, Length: 3}},
	{"BOM in value", "ask triage.rank-by-severity owner.team=\"\ufeffpayments\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 41, Length: 3}},
	{"U+180E in value", "ask triage.rank-by-severity owner.team=\"pay\u180ements\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 44, Length: 3}},
	{"U+180E ending a value", "ask triage.rank-by-severity owner.team=\"payments\u180e\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 49, Length: 3}},
	{"last noncharacter of U+FDD0-U+FDEF in value", "ask triage.rank-by-severity owner.team=\"pay\ufdefments\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 44, Length: 3}},
	{"U+FFFE in value", "ask triage.rank-by-severity owner.team=\"pay\ufffements\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 44, Length: 3}},
	{"U+FFFF in value", "ask triage.rank-by-severity owner.team=\"pay\uffffments\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 44, Length: 3}},
	{"U+1FFFE starting a value", "ask triage.rank-by-severity owner.team=\"\U0001fffepayments\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 41, Length: 4}},
	{"U+1FFFF in value", "ask triage.rank-by-severity owner.team=\"pay\U0001ffffments\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 44, Length: 4}},
	{"U+10FFFF in a second value", "ask triage.rank-by-severity owner.file=\"a.go\" owner.team=\"pay\U0010ffffments\"\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 62, Length: 4}},
	{"U+180E in prose", "pay\u180ements\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 1, Length: 11}},
	{"noncharacter in prose", "pay\U0010ffffments \ufffe\n", receipts.Refusal{Code: receipts.UncoveredText, Line: 1, Column: 1, Length: 16}},
	// MALFORMED_RECORD
	{"missing final LF", strings.TrimSuffix(good, "\n"), receipts.Refusal{Code: receipts.MalformedRecord, Line: 1, Column: len(good) - 1, Length: 1}},
	{"finding without fields", "finding\n", receipts.Refusal{Code: receipts.MalformedRecord, Line: 1, Column: 1, Length: 7}},
	{"ask without fields", "ask\n", receipts.Refusal{Code: receipts.MalformedRecord, Line: 1, Column: 1, Length: 3}},
	{"owner without =", "ask triage.rank-by-severity owner.team \"a\"\n", receipts.Refusal{Code: receipts.MalformedRecord, Line: 1, Column: 29, Length: 10}},
	{"unterminated value", "ask triage.rank-by-severity owner.team=\"" + canary + "\n", receipts.Refusal{Code: receipts.MalformedRecord, Line: 1, Column: 40, Length: 19}},
	{"bad escape", "ask triage.rank-by-severity owner.team=\"" + canary + "\\n\"\n", receipts.Refusal{Code: receipts.MalformedRecord, Line: 1, Column: 59, Length: 2}},
	{"dependency without @", "finding GO-2023-2102 golang.org/x/net affected https://go.dev/issue/63417\n", receipts.Refusal{Code: receipts.MalformedRecord, Line: 1, Column: 22, Length: 16}},
	{"missing citation", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected\n", receipts.Refusal{Code: receipts.MalformedRecord, Line: 1, Column: 47, Length: 8}},
	{"owner without =", "ask triage.rank-by-severity owner.team\n", receipts.Refusal{Code: receipts.MalformedRecord, Line: 1, Column: 29, Length: 10}},
	{"owner without quote", "ask triage.rank-by-severity owner.team=" + canary + "\n", receipts.Refusal{Code: receipts.MalformedRecord, Line: 1, Column: 40, Length: 1}},
	// UNKNOWN_*
	{"unknown diagnostic", "finding GO-2099-0001 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417\n", receipts.Refusal{Code: receipts.UnknownDiagnostic, Line: 1, Column: 9, Length: 12}},
	{"unknown module", "finding GO-2023-2102 git.corp.example/" + canary + "@v0.15.0 affected https://go.dev/issue/63417\n", receipts.Refusal{Code: receipts.UnknownModule, Line: 1, Column: 22, Length: 35}},
	{"homoglyph module", "finding GO-2023-2102 golang.org/x/n\u0435t@v0.15.0 affected https://go.dev/issue/63417\n", receipts.Refusal{Code: receipts.UnknownModule, Line: 1, Column: 22, Length: 17}},
	{"unknown version", "finding GO-2023-2102 golang.org/x/net@v9.9.9 affected https://go.dev/issue/63417\n", receipts.Refusal{Code: receipts.UnknownVersion, Line: 1, Column: 39, Length: 6}},
	{"version of another module", "finding GO-2023-2102 golang.org/x/net@v0.3.7 affected https://go.dev/issue/63417\n", receipts.Refusal{Code: receipts.UnknownVersion, Line: 1, Column: 39, Length: 6}},
	{"unknown fixed version", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.3.7 https://go.dev/issue/63417\n", receipts.Refusal{Code: receipts.UnknownVersion, Line: 1, Column: 62, Length: 6}},
	{"unknown status", "finding GO-2023-2102 golang.org/x/net@v0.15.0 exploitable https://go.dev/issue/63417\n", receipts.Refusal{Code: receipts.UnknownStatus, Line: 1, Column: 47, Length: 11}},
	{"unknown citation", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://wiki.corp/" + canary + "\n", receipts.Refusal{Code: receipts.UnknownCitation, Line: 1, Column: 56, Length: 36}},
	{"unknown question", "ask triage.leak-everything\n", receipts.Refusal{Code: receipts.UnknownQuestion, Line: 1, Column: 5, Length: 22}},
	{"unknown category", "ask triage.rank-by-severity owner.email=\"" + canary + "\"\n", receipts.Refusal{Code: receipts.UnknownCategory, Line: 1, Column: 35, Length: 5}},
	{"case-variant category", "ask triage.rank-by-severity owner.Team=\"" + canary + "\"\n", receipts.Refusal{Code: receipts.UnknownCategory, Line: 1, Column: 35, Length: 4}},
	{"long unknown category", "ask triage.rank-by-severity owner.organisational-unit=\"" + canary + "\"\n", receipts.Refusal{Code: receipts.UnknownCategory, Line: 1, Column: 35, Length: 19}},
	{"credential is prohibited", "ask triage.rank-by-severity owner.credential=\"" + canary + "\"\n", receipts.Refusal{Code: receipts.ProhibitedCategory, Line: 1, Column: 35, Length: 10}},
	// AMBIGUOUS_SPAN
	{"empty value", "ask triage.rank-by-severity owner.team=\"\"\n", receipts.Refusal{Code: receipts.AmbiguousSpan, Line: 1, Column: 40, Length: 2}},
	{"padded value", "ask triage.rank-by-severity owner.team=\" " + canary + "\"\n", receipts.Refusal{Code: receipts.AmbiguousSpan, Line: 1, Column: 41, Length: 19}},
	{"trailing padded value", "ask triage.rank-by-severity owner.team=\"" + canary + " \"\n", receipts.Refusal{Code: receipts.AmbiguousSpan, Line: 1, Column: 41, Length: 19}},
	{"no-break space padding", "ask triage.rank-by-severity owner.team=\"\u00a0" + canary + "\"\n", receipts.Refusal{Code: receipts.AmbiguousSpan, Line: 1, Column: 41, Length: 20}},
	{"NFD value", "ask triage.rank-by-severity owner.person=\"Jose\u0301\"\n", receipts.Refusal{Code: receipts.AmbiguousSpan, Line: 1, Column: 43, Length: 6}},
	{"value equals vocabulary item", "ask triage.rank-by-severity owner.module=\"golang.org/x/net\"\n", receipts.Refusal{Code: receipts.AmbiguousSpan, Line: 1, Column: 43, Length: 16}},
	{"irreversible token as value", "ask triage.rank-by-severity owner.team=\"redacted:team:2\"\n", receipts.Refusal{Code: receipts.AmbiguousSpan, Line: 1, Column: 41, Length: 15}},
	{"reversible token prefix as value", "ask triage.rank-by-severity owner.team=\"pcv:abcdefghij\"\n", receipts.Refusal{Code: receipts.AmbiguousSpan, Line: 1, Column: 41, Length: 14}},
	{"value equals a version", "ask triage.rank-by-severity owner.file=\"v0.15.0\"\n", receipts.Refusal{Code: receipts.AmbiguousSpan, Line: 1, Column: 41, Length: 7}},
	// INVALID_UTF8
	{"invalid UTF-8 in value", "ask triage.rank-by-severity owner.team=\"pay\xffments\"\n", receipts.Refusal{Code: receipts.InvalidUTF8, Line: 1, Column: 44, Length: 1}},
	{"invalid UTF-8 in prose", "pay\xc3ments\n", receipts.Refusal{Code: receipts.InvalidUTF8, Line: 1, Column: 4, Length: 1}},
	{"invalid UTF-8 in item", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/\xed\xa0\x80\n", receipts.Refusal{Code: receipts.InvalidUTF8, Line: 1, Column: 71, Length: 1}},
	// LIMIT_EXCEEDED
	{"record too long", "ask triage.rank-by-severity owner.team=\"" + strings.Repeat("a", DefaultMaxRecord) + "\"\n", receipts.Refusal{Code: receipts.LimitExceeded, Line: 1, Column: 1, Length: DefaultMaxRecord + 42}},
	// A record of DefaultMaxRecord+1 bytes, its LF not counted (docs/FORMATS.md#grammar: a
	// record is what comes before its LF); TestRecordLimitBoundary has the
	// longest accepted one.
	{"record one byte too long", "ask triage.rank-by-severity owner.team=\"" + strings.Repeat("a", DefaultMaxRecord+1-41) + "\"\n", receipts.Refusal{Code: receipts.LimitExceeded, Line: 1, Column: 1, Length: DefaultMaxRecord + 2}},
	{"too many owners", "ask triage.rank-by-severity" + strings.Repeat(" owner.team=\"t\"", DefaultMaxOwners+1) + "\n", receipts.Refusal{Code: receipts.LimitExceeded, Line: 1, Column: 28 + 15*DefaultMaxOwners + 1, Length: 14}},
}

// TestRecordLimitBoundary: a record of exactly DefaultMaxRecord bytes before
// its LF is accepted, in every mode of the parser and as a part's last record
// without an LF too (refused then only for the missing LF), as the verifier's
// recognizer accepts it.
func TestRecordLimitBoundary(t *testing.T) {
	p := NewParser(testVocab(t), Options{})
	rec := "ask triage.rank-by-severity owner.team=\"" + strings.Repeat("a", DefaultMaxRecord-41) + "\""
	if len(rec) != DefaultMaxRecord {
		t.Fatalf("record of %d bytes", len(rec))
	}
	for _, text := range []string{rec + "\n", strings.Repeat(rec+"\n", 3)} {
		if _, refs := p.Parse([]byte(text), nil); len(refs) != 0 {
			t.Fatalf("%d bytes: %v", len(text), refs)
		}
		if _, _, refs := p.Owners([]byte(text)); len(refs) != 0 {
			t.Fatalf("owners, %d bytes: %v", len(text), refs)
		}
	}
	_, refs := p.Parse([]byte(rec), nil)
	if len(refs) != 1 || refs[0].Code != receipts.MalformedRecord {
		t.Fatalf("without LF: %v", refs)
	}
}

func TestParseRefuses(t *testing.T) {
	p := NewParser(testVocab(t), Options{})
	for _, tt := range refusalCases {
		t.Run(tt.name, func(t *testing.T) {
			_, refs := p.Parse([]byte(tt.text), nil)
			if len(refs) != 1 {
				t.Fatalf("got %d refusals %v, want 1", len(refs), refs)
			}
			got := refs[0]
			got.Offset = 0
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			assertNoCanary(t, got.Error())
		})
	}
}

func TestParseLimits(t *testing.T) {
	p := NewParser(testVocab(t), Options{Limits: Limits{MaxText: 16, MaxRefusals: 2}})
	_, refs := p.Parse([]byte(good), nil)
	if len(refs) != 1 || refs[0].Code != receipts.LimitExceeded || refs[0].Length != len(good) {
		t.Fatalf("text over MaxText: %v", refs)
	}
	p = NewParser(testVocab(t), Options{Limits: Limits{MaxRefusals: 2}})
	_, refs = p.Parse([]byte("a\nb\nc\n"), nil)
	if len(refs) != 2 || refs[1].Line != 2 {
		t.Fatalf("MaxRefusals: %v", refs)
	}
}

func TestParsePlanCategories(t *testing.T) {
	allowed := CategorySet(0).With(CategoryModule).With(CategoryCredential)
	p := NewParser(testVocab(t), Options{Allowed: allowed})
	if _, refs := p.Parse([]byte(good), nil); len(refs) != 0 {
		t.Fatalf("module allowed: %v", refs)
	}
	for _, text := range []string{
		"ask triage.rank-by-severity owner.team=\"" + canary + "\"\n",
		"ask triage.rank-by-severity owner.credential=\"" + canary + "\"\n",
	} {
		_, refs := p.Parse([]byte(text), nil)
		if len(refs) != 1 || refs[0].Code != receipts.ProhibitedCategory || refs[0].Column != 35 {
			t.Errorf("%q: %v, want PROHIBITED_CATEGORY at col 35", text, refs)
		}
	}
}

func TestParseMultiLinePositions(t *testing.T) {
	p := NewParser(testVocab(t), Options{})
	text := good + "ask triage.suggest-upgrade\n" + "finding GO-2023-2102 golang.org/x/net@v0.16.0 affected https://go.dev/issue/63417\n"
	_, refs := p.Parse([]byte(text), nil)
	want := []receipts.Refusal{{Code: receipts.UnknownVersion, Line: 3, Column: 39, Length: 7, Offset: len(good) + 27 + 38}}
	if diff := cmp.Diff(want, refs); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	if got := text[refs[0].Offset : refs[0].Offset+refs[0].Length]; got != "v0.16.0" {
		t.Fatalf("offset points at %q", got)
	}
}

// assertNoCanary fails if s holds any 6-byte piece of the canary.
func assertNoCanary(t testing.TB, s string) {
	t.Helper()
	for i := 0; i+6 <= len(canary); i++ {
		if strings.Contains(s, canary[i:i+6]) {
			t.Fatalf("output holds canary piece %q: %q", canary[i:i+6], s)
		}
	}
}

// TestRefusalWhere: positions as the human output prints them; a part whose
// kind is not one of Kinds is named by its index only, and a refusal of no
// part without a line names what it concerns.
func TestRefusalWhere(t *testing.T) {
	for _, tt := range []struct {
		r    receipts.Refusal
		want string
	}{
		{receipts.Refusal{Part: 1, Kind: "block", Line: 3, Column: 15, Length: 8}, "part 1 (block) line 3 col 15 len 8"},
		{receipts.Refusal{Part: 2, Kind: "query"}, "part 2 (query)"},
		{receipts.Refusal{Part: 2}, "part 2"},
		{receipts.Refusal{Part: 0, Line: 1, Column: 2, Length: 3}, "part 0 line 1 col 2 len 3"},
		{receipts.Refusal{Part: -1, Line: 1, Column: 12, Length: 5}, "document line 1 col 12 len 5"},
		{receipts.Refusal{Part: -1, Kind: "plan"}, "plan"},
		{receipts.Refusal{Part: -1}, "document line 0 col 0 len 0"},
	} {
		if got := tt.r.Where(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.r, got, tt.want)
		}
	}
}

// TestCandidateHoldsTokens: a cut's candidate holds tokens in its owner
// quotes and is closed-diagnostic@1 text (docs/FORMATS.md#tokens): parsed as a candidate,
// token-shaped values are accepted; parsed as a projection, refused.
func TestCandidateHoldsTokens(t *testing.T) {
	text := []byte("ask triage.rank-by-severity owner.team=\"redacted:team:2\" owner.person=\"pcv:abcdefghij:person:abcdefghijklmnopqrst\"\n")
	for _, candidate := range []bool{true, false} {
		p := NewParser(testVocab(t), Options{Candidate: candidate})
		for name, refs := range map[string][]receipts.Refusal{
			"Parse":  second(p.Parse(text, nil)),
			"Owners": third(p.Owners(text)),
		} {
			if candidate != (len(refs) == 0) {
				t.Errorf("candidate %v, %s: %v", candidate, name, refs)
			}
		}
	}
}

func second[A, B any](_ A, b B) B        { return b }
func third[A, B, C any](_ A, _ B, c C) C { return c }
