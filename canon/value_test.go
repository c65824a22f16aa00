package canon

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// refusal is the observable part of a *SyntaxError.
type refusal struct {
	Class        Class
	Offset       int
	Line, Column int
	Length       int
	Reason       string
}

func asRefusal(t *testing.T, err error) refusal {
	t.Helper()
	var se *SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *SyntaxError", err, err)
	}
	return refusal{se.Class, se.Offset, se.Line, se.Column, se.Length, se.Reason}
}

func TestParseRefusals(t *testing.T) {
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	deepObj := strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65)
	tests := []struct {
		name string
		in   string
		opt  Options
		want refusal
	}{
		{"empty", ``, Options{}, refusal{MalformedRecord, 0, 1, 1, 0, "unexpected end of input"}},
		{"only space", "   ", Options{}, refusal{MalformedRecord, 3, 1, 4, 0, "unexpected end of input"}},
		{"duplicate key", `{"a":1,"a":2}`, Options{}, refusal{MalformedRecord, 7, 1, 8, 3, "duplicate key"}},
		{"duplicate key after unescaping", `{"a":1,"\u0061":2}`, Options{}, refusal{MalformedRecord, 7, 1, 8, 8, "duplicate key"}},
		{"duplicate key escaped first", `{"\u00e9":1,"é":2}`, Options{}, refusal{MalformedRecord, 12, 1, 13, 4, "duplicate key"}},
		{"duplicate nested key", `{"a":{"b":1,"b":1}}`, Options{}, refusal{MalformedRecord, 12, 1, 13, 3, "duplicate key"}},
		{"trailing value", `{"a":1}x`, Options{}, refusal{MalformedRecord, 7, 1, 8, 1, "trailing data"}},
		{"second document", `{"a":1} {}`, Options{}, refusal{MalformedRecord, 8, 1, 9, 1, "trailing data"}},
		{"extra bracket", `[1]]`, Options{}, refusal{MalformedRecord, 3, 1, 4, 1, "trailing data"}},
		{"byte order mark", "\xEF\xBB\xBF{}", Options{}, refusal{MalformedRecord, 0, 1, 1, 3, "byte order mark"}},
		{"invalid UTF-8 in string", "\"\xff\"", Options{}, refusal{InvalidUTF8, 1, 1, 2, 1, "invalid UTF-8"}},
		{"invalid UTF-8 after ASCII run", "\"abcdefghijklmnop\xffq\"", Options{}, refusal{InvalidUTF8, 17, 1, 18, 1, "invalid UTF-8"}},
		{"invalid UTF-8 in key", "{\"\xff\":1}", Options{}, refusal{InvalidUTF8, 2, 1, 3, 1, "invalid UTF-8"}},
		{"invalid UTF-8 trailing", "[1]\xff", Options{}, refusal{InvalidUTF8, 3, 1, 4, 1, "invalid UTF-8"}},
		{"invalid UTF-8 as value", "\xff", Options{}, refusal{InvalidUTF8, 0, 1, 1, 1, "invalid UTF-8"}},
		{"invalid UTF-8 between tokens", "[1,\xfe]", Options{}, refusal{InvalidUTF8, 3, 1, 4, 1, "invalid UTF-8"}},
		{"invalid UTF-8 after backslash", "\"\\\xff\"", Options{}, refusal{InvalidUTF8, 2, 1, 3, 1, "invalid UTF-8"}},
		{"overlong encoding", "\"\xc0\xaf\"", Options{}, refusal{InvalidUTF8, 1, 1, 2, 1, "invalid UTF-8"}},
		{"raw surrogate", "\"\xed\xa0\x80\"", Options{}, refusal{InvalidUTF8, 1, 1, 2, 1, "invalid UTF-8"}},
		{"truncated sequence", "\"\xe2\x82\"", Options{}, refusal{InvalidUTF8, 1, 1, 2, 1, "invalid UTF-8"}},
		{"beyond U+10FFFF", "\"\xf4\x90\x80\x80\"", Options{}, refusal{InvalidUTF8, 1, 1, 2, 1, "invalid UTF-8"}},
		{"valid non-ASCII between tokens", "[1,\xc2\xa01]", Options{}, refusal{MalformedRecord, 3, 1, 4, 2, "expected value"}},
		{"non-ASCII where key expected", "{\"a\":1,\xc3\xa9}", Options{}, refusal{MalformedRecord, 7, 1, 8, 2, "expected object key"}},
		{"lone high surrogate", `"\ud800"`, Options{}, refusal{InvalidUTF8, 1, 1, 2, 6, "lone surrogate escape"}},
		{"lone low surrogate", `"\udc00"`, Options{}, refusal{InvalidUTF8, 1, 1, 2, 6, "lone surrogate escape"}},
		{"high then letter", `"\ud800\u0041"`, Options{}, refusal{InvalidUTF8, 1, 1, 2, 6, "lone surrogate escape"}},
		{"low then high", `"\udc00\ud800"`, Options{}, refusal{InvalidUTF8, 1, 1, 2, 6, "lone surrogate escape"}},
		{"high then high", `"\ud800\ud800"`, Options{}, refusal{InvalidUTF8, 1, 1, 2, 6, "lone surrogate escape"}},
		{"high then bad escape", `"\ud800\u00zz"`, Options{}, refusal{InvalidUTF8, 1, 1, 2, 6, "lone surrogate escape"}},
		{"high at end of string", `"x\uDBFF"`, Options{}, refusal{InvalidUTF8, 2, 1, 3, 6, "lone surrogate escape"}},
		{"lone surrogate in key", `{"\udfff":1}`, Options{}, refusal{InvalidUTF8, 2, 1, 3, 6, "lone surrogate escape"}},
		{"raw control", "\"a\x01b\"", Options{}, refusal{MalformedRecord, 2, 1, 3, 1, "control character in string"}},
		{"raw NUL", "\"a\x00b\"", Options{}, refusal{MalformedRecord, 2, 1, 3, 1, "control character in string"}},
		{"raw tab", "\"a\tb\"", Options{}, refusal{MalformedRecord, 2, 1, 3, 1, "control character in string"}},
		{"raw newline", "\"a\nb\"", Options{}, refusal{MalformedRecord, 2, 1, 3, 1, "control character in string"}},
		{"raw control in key", "{\"a\x1f\":1}", Options{}, refusal{MalformedRecord, 3, 1, 4, 1, "control character in string"}},
		{"unterminated string", `"abc`, Options{}, refusal{MalformedRecord, 0, 1, 1, 4, "unterminated string"}},
		{"unterminated after escape", `["ab\"`, Options{}, refusal{MalformedRecord, 1, 1, 2, 5, "unterminated string"}},
		{"unknown escape", `"\x"`, Options{}, refusal{MalformedRecord, 1, 1, 2, 2, "invalid escape"}},
		{"single-quote escape", `"\'"`, Options{}, refusal{MalformedRecord, 1, 1, 2, 2, "invalid escape"}},
		{"short unicode escape", `"\u12"`, Options{}, refusal{MalformedRecord, 1, 1, 2, 5, "invalid escape"}},
		{"bad hex digit", `"\u12G4"`, Options{}, refusal{MalformedRecord, 1, 1, 2, 6, "invalid escape"}},
		{"backslash at end", `"\`, Options{}, refusal{MalformedRecord, 1, 1, 2, 1, "invalid escape"}},
		{"trailing comma in array", `[1,]`, Options{}, refusal{MalformedRecord, 3, 1, 4, 1, "expected value"}},
		{"trailing comma in object", `{"a":1,}`, Options{}, refusal{MalformedRecord, 7, 1, 8, 1, "expected object key"}},
		{"unquoted key", `{a:1}`, Options{}, refusal{MalformedRecord, 1, 1, 2, 1, "expected object key"}},
		{"missing colon", `{"a" 1}`, Options{}, refusal{MalformedRecord, 5, 1, 6, 1, "expected ':' after object key"}},
		{"missing comma in object", `{"a":1 "b":2}`, Options{}, refusal{MalformedRecord, 7, 1, 8, 1, "expected ',' or '}' after object member"}},
		{"missing comma in array", `[1 2]`, Options{}, refusal{MalformedRecord, 3, 1, 4, 1, "expected ',' or ']' after array element"}},
		{"unclosed array", `[`, Options{}, refusal{MalformedRecord, 1, 1, 2, 0, "unexpected end of input"}},
		{"unclosed object", `{"a":1`, Options{}, refusal{MalformedRecord, 6, 1, 7, 0, "unexpected end of input"}},
		{"missing value", `{"a":}`, Options{}, refusal{MalformedRecord, 5, 1, 6, 1, "expected value"}},
		{"truncated literal", `tru`, Options{}, refusal{MalformedRecord, 0, 1, 1, 1, "invalid literal"}},
		{"misspelled null", `[nul]`, Options{}, refusal{MalformedRecord, 1, 1, 2, 1, "invalid literal"}},
		{"capitalised literal", `True`, Options{}, refusal{MalformedRecord, 0, 1, 1, 1, "expected value"}},
		{"literal with suffix", `truex`, Options{}, refusal{MalformedRecord, 4, 1, 5, 1, "trailing data"}},
		{"NaN", `NaN`, Options{}, refusal{MalformedRecord, 0, 1, 1, 1, "expected value"}},
		{"Infinity", `[-Infinity]`, Options{}, refusal{MalformedRecord, 1, 1, 2, 2, "invalid number"}},
		{"leading zero", `01`, Options{}, refusal{MalformedRecord, 0, 1, 1, 2, "invalid number"}},
		{"negative leading zero", `-012`, Options{}, refusal{MalformedRecord, 0, 1, 1, 3, "invalid number"}},
		{"lone minus", `-`, Options{}, refusal{MalformedRecord, 0, 1, 1, 1, "invalid number"}},
		{"plus sign", `+1`, Options{}, refusal{MalformedRecord, 0, 1, 1, 1, "expected value"}},
		{"leading dot", `.5`, Options{}, refusal{MalformedRecord, 0, 1, 1, 1, "expected value"}},
		{"trailing dot", `1.`, Options{}, refusal{MalformedRecord, 0, 1, 1, 2, "invalid number"}},
		{"dot then exponent", `[1.e5]`, Options{}, refusal{MalformedRecord, 1, 1, 2, 3, "invalid number"}},
		{"empty exponent", `1e`, Options{}, refusal{MalformedRecord, 0, 1, 1, 2, "invalid number"}},
		{"signed empty exponent", `1e+`, Options{}, refusal{MalformedRecord, 0, 1, 1, 3, "invalid number"}},
		{"double sign exponent", `1e+-1`, Options{}, refusal{MalformedRecord, 0, 1, 1, 4, "invalid number"}},
		{"hex number", `0x10`, Options{}, refusal{MalformedRecord, 1, 1, 2, 1, "trailing data"}},
		{"two dots", `1.2.3`, Options{}, refusal{MalformedRecord, 0, 1, 1, 4, "invalid number"}},
		{"too deep arrays", deep, Options{}, refusal{LimitExceeded, 64, 1, 65, 1, "nesting too deep"}},
		{"too deep objects", deepObj, Options{}, refusal{LimitExceeded, 320, 1, 321, 1, "nesting too deep"}},
		{"custom depth", `[[[1]]]`, Options{MaxDepth: 2}, refusal{LimitExceeded, 2, 1, 3, 1, "nesting too deep"}},
		{"too large", `[1,2]`, Options{MaxBytes: 4}, refusal{LimitExceeded, 4, 1, 5, 1, "document too large"}},
		{"position on third line", "{\n  \"a\": 1,\n  \"a\": 2\n}", Options{}, refusal{MalformedRecord, 14, 3, 3, 3, "duplicate key"}},
		{"CRLF lines", "[1,\r\n x]", Options{}, refusal{MalformedRecord, 6, 2, 2, 1, "expected value"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse([]byte(tt.in), tt.opt)
			if err == nil {
				t.Fatalf("Parse accepted %q: %v", tt.in, v)
			}
			if diff := cmp.Diff(tt.want, asRefusal(t, err)); diff != "" {
				t.Errorf("refusal mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDuplicateInLargeObject(t *testing.T) {
	// Objects past dupScan members switch to a set; both paths must refuse.
	for _, n := range []int{3, dupScan - 1, dupScan, dupScan + 1, 40} {
		var b strings.Builder
		b.WriteString("{")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"k` + strings.Repeat("x", i) + `":0`)
		}
		ok := b.String() + "}"
		if _, err := Parse([]byte(ok), Options{}); err != nil {
			t.Fatalf("n=%d: distinct keys refused: %v", n, err)
		}
		for _, dupOf := range []int{0, n / 2, n - 1} {
			doc := b.String() + `,"k` + strings.Repeat("x", dupOf) + `":1}`
			_, err := Parse([]byte(doc), Options{})
			if got := asRefusal(t, err); got.Reason != "duplicate key" || got.Offset != len(b.String())+1 {
				t.Errorf("n=%d dup of %d: got %+v", n, dupOf, got)
			}
		}
	}
}

func TestParseAccepts(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want any // decoder.toAny form
	}{
		{"null", `null`, nil},
		{"true", `true`, true},
		{"false", ` false `, false},
		{"empty string", `""`, ""},
		{"empty array", `[]`, []any{}},
		{"empty object", "{ \t\r\n}", map[string]any{}},
		{"surrogate pair", `"\ud83d\ude00"`, "\U0001F600"},
		{"upper-case surrogate pair", `"\uD83D\uDE00"`, "\U0001F600"},
		{"max scalar by pair", `"\udbff\udfff"`, "\U0010FFFF"},
		{"simple escapes", `"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{"NUL escape", `"\u0000"`, "\x00"},
		{"BMP escapes", `"\u00e9\u20AC\uFFFD"`, "é€\uFFFD"},
		{"noncharacter escape", `"\uffff\ufdd0"`, "\uffff\ufdd0"},
		{"literal replacement character", "\"\xef\xbf\xbd\"", "\uFFFD"},
		{"literal noncharacters", "\"\xef\xbf\xbf\xef\xb7\x90\U0010FFFF\"", "\uffff\ufdd0\U0010FFFF"},
		{"DEL", "\"\x7f\"", "\x7f"},
		{"line separator", "\"\u2028\u2029\"", "\u2028\u2029"},
		{"mixed run", `"abcdefgh\u00e9ijklmnopq€rstuvwx\n"`, "abcdefghéijklmnopq€rstuvwx\n"},
		{"numbers", `[0,-0,1.5,1e5,1E+5,1e-5,-0.0e-0,123456789012345678901234567890,1e400]`,
			[]any{json.Number("0"), json.Number("-0"), json.Number("1.5"), json.Number("1e5"), json.Number("1E+5"),
				json.Number("1e-5"), json.Number("-0.0e-0"), json.Number("123456789012345678901234567890"), json.Number("1e400")}},
		{"white space everywhere", " \t\r\n[ 1 , { \"a\" : [ ] } ]\n ", []any{json.Number("1"), map[string]any{"a": []any{}}}},
		{"keys differing in case", `{"a":1,"A":2}`, map[string]any{"a": json.Number("1"), "A": json.Number("2")}},
		{"keys differing in normalization", `{"é":1,"e\u0301":2}`, map[string]any{"é": json.Number("1"), "e\u0301": json.Number("2")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse([]byte(tt.in), Options{})
			if err != nil {
				t.Fatalf("Parse refused: %v", err)
			}
			var d decoder
			if diff := cmp.Diff(tt.want, d.toAny(v)); diff != "" {
				t.Errorf("tree mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseDepthLimit(t *testing.T) {
	for _, depth := range []int{1, 63, 64} {
		doc := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		if _, err := Parse([]byte(doc), Options{}); err != nil {
			t.Errorf("depth %d refused: %v", depth, err)
		}
	}
	doc := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	if _, err := Parse([]byte(doc), Options{MaxDepth: 200}); err != nil {
		t.Errorf("depth 200 with MaxDepth 200 refused: %v", err)
	}
	doc = strings.Repeat("[", hardMaxDepth+1) + strings.Repeat("]", hardMaxDepth+1)
	_, err := Parse([]byte(doc), Options{MaxDepth: 1 << 30})
	if got := asRefusal(t, err); got.Class != LimitExceeded || got.Offset != hardMaxDepth {
		t.Errorf("MaxDepth above the hard cap: got %+v", got)
	}
}

func TestParseSizeLimit(t *testing.T) {
	doc := []byte(`["abc"]`)
	if _, err := Parse(doc, Options{MaxBytes: int64(len(doc))}); err != nil {
		t.Errorf("document of exactly MaxBytes refused: %v", err)
	}
	_, err := Parse(doc, Options{MaxBytes: int64(len(doc) - 1)})
	if diff := cmp.Diff(refusal{LimitExceeded, 6, 1, 7, 1, "document too large"}, asRefusal(t, err)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseOffsets(t *testing.T) {
	doc := []byte(`{"k" : [1, "x\n", {"y":null}], "z":-2.5e1 }`)
	v, err := Parse(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var walk func(v *Value)
	walk = func(v *Value) {
		got = append(got, string(doc[v.Off:v.End]))
		for i := range v.Elems {
			walk(&v.Elems[i])
		}
		for i := range v.Members {
			m := &v.Members[i]
			got = append(got, "key@"+string(doc[m.KeyOff:m.KeyOff+len(m.Key)+2]))
			walk(&m.Value)
		}
	}
	walk(v)
	want := []string{
		`{"k" : [1, "x\n", {"y":null}], "z":-2.5e1 }`,
		`key@"k"`, `[1, "x\n", {"y":null}]`, `1`, `"x\n"`, `{"y":null}`, `key@"y"`, `null`,
		`key@"z"`, `-2.5e1`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("offsets (-want +got):\n%s", diff)
	}
}

func TestParseSharesNoMemory(t *testing.T) {
	doc := []byte(`{"short":"abc","long":"` + strings.Repeat("y", 2*arenaChunk) + `","n":12}`)
	v, err := Parse(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := v.Canonical()
	for i := range doc {
		doc[i] = 'Z'
	}
	after, _ := v.Canonical()
	if !bytes.Equal(before, after) {
		t.Errorf("tree changed when the input was overwritten")
	}
}

func TestParseStringsDoNotOverlap(t *testing.T) {
	// Small strings share arena chunks; each must be capped so that an
	// append by a caller cannot overwrite the next one.
	v, err := Parse([]byte(`["ab","cd","e\u0066"]`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range v.Elems {
		s := v.Elems[i].Str
		if len(s) != cap(s) {
			t.Errorf("element %d: len %d cap %d", i, len(s), cap(s))
		}
		_ = append(s, "XXXX"...)
	}
	var d decoder
	if diff := cmp.Diff([]any{"ab", "cd", "ef"}, d.toAny(v)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	tests := []struct {
		err  SyntaxError
		want string
	}{
		{SyntaxError{Class: MalformedRecord, Offset: 20, Line: 3, Column: 5, Length: 3, Reason: "duplicate key"},
			"canon: json: duplicate key at line 3 col 5"},
		{SyntaxError{Class: MalformedRecord, Offset: 20, Reason: "unknown field", Path: "parts[3].label"},
			"canon: json: unknown field at offset 20 in parts[3].label"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestParseErrorsAreContentFree(t *testing.T) {
	const canary = "CANARYowner"
	docs := []string{
		`{"` + canary + `":1,"` + canary + `":2}`,
		`{"a":"` + canary + "\x01" + `"}`,
		`{"a":"` + canary + `"} ` + canary,
		`["` + canary + `\ud800"]`,
		`{"` + canary + `" 1}`,
		`"` + canary,
		"[\"" + canary + "\xff\"]",
		`[` + canary + `]`,
	}
	for _, doc := range docs {
		_, err := Parse([]byte(doc), Options{})
		if err == nil {
			t.Fatalf("accepted %q", doc)
		}
		if strings.Contains(err.Error(), canary) || strings.Contains(err.Error(), "CANARY") {
			t.Errorf("error for %q leaks input: %v", doc, err)
		}
	}
}

// naiveScan is the byte-at-a-time definition scanPlain must match.
func naiveScan(data []byte, i int) (int, bool) {
	high := false
	for ; i < len(data); i++ {
		c := data[i]
		if c == '"' || c == '\\' || c < 0x20 {
			break
		}
		if c >= 0x80 {
			high = true
		}
	}
	return i, high
}

func TestScanPlainExhaustive(t *testing.T) {
	// Every byte value at every position of a 2-word window, after
	// every possible prefix byte: covers the borrow cases of the
	// word-at-a-time test.
	buf := make([]byte, 18)
	for pos := range buf {
		for b := range 256 {
			for _, before := range []byte{'a', 0x00, 0x1f, 0x20, 0x21, 0x22, 0x5c, 0x7f, 0x80, 0xff} {
				for i := range buf {
					buf[i] = 'a'
				}
				if pos > 0 {
					buf[pos-1] = before
				}
				buf[pos] = byte(b)
				for start := range 3 {
					gk, gh := scanPlain(buf, start)
					wk, wh := naiveScan(buf, start)
					if gk != wk || gh != wh {
						t.Fatalf("buf %x start %d: scanPlain = (%d,%v), want (%d,%v)", buf, start, gk, gh, wk, wh)
					}
				}
			}
		}
	}
}

func TestScanPlainRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte{'a', 'z', ' ', '"', '\\', 0x00, 0x01, 0x1f, 0x20, 0x21, 0x5b, 0x5d, 0x7f, 0x80, 0xa2, 0xdc, 0xc3, 0xff}
	for range 20000 {
		n := r.IntN(40)
		buf := make([]byte, n)
		for i := range buf {
			if r.IntN(4) == 0 {
				buf[i] = alphabet[r.IntN(len(alphabet))]
			} else {
				buf[i] = byte('a' + r.IntN(26))
			}
		}
		start := 0
		if n > 0 {
			start = r.IntN(n)
		}
		gk, gh := scanPlain(buf, start)
		wk, wh := naiveScan(buf, start)
		if gk != wk || gh != wh {
			t.Fatalf("buf %x start %d: scanPlain = (%d,%v), want (%d,%v)", buf, start, gk, gh, wk, wh)
		}
	}
}

func TestKindString(t *testing.T) {
	got := []string{Null.String(), Bool.String(), Number.String(), String.String(), Array.String(), Object.String(), Kind(9).String()}
	want := []string{"null", "bool", "number", "string", "array", "object", "Kind(9)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestParseManyStrings(t *testing.T) {
	// Strings of every size cross the first chunk and the switch to the
	// document-sized buffer; each must decode exactly and stay capped.
	r := rand.New(rand.NewPCG(9, 10))
	pieces := []string{"a", "bc", `\n`, `\"`, `\u00e9`, "é", `\ud83d\ude00`, "😀", `\\`, `\/`, "xyzxyzxyzxyz"}
	var b strings.Builder
	b.WriteString("[")
	for i := range 3000 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`"`)
		n := r.IntN(40)
		if i%500 == 7 {
			n = 4000
		}
		for range n {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		b.WriteString(`"`)
	}
	b.WriteString("]")
	doc := []byte(b.String())
	v, err := Parse(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	if err := json.Unmarshal(doc, &want); err != nil {
		t.Fatal(err)
	}
	if len(v.Elems) != len(want) {
		t.Fatalf("%d elements, want %d", len(v.Elems), len(want))
	}
	for i := range v.Elems {
		s := v.Elems[i].Str
		if string(s) != want[i] || len(s) != cap(s) {
			t.Fatalf("element %d: %q (cap %d), want %q", i, s, cap(s), want[i])
		}
	}
}

func TestParseStringMemory(t *testing.T) {
	// A document that is one big string costs one copy of it: no pre-scan
	// buffer, no second copy when the string ends near the end of input.
	line := strings.Repeat("x", 140) + `\"q\"` + `\n`
	big := strings.Repeat(line, (4<<20)/len(line))
	for _, s := range []string{`{"text":"` + big + `"}`, `"` + big + `"`, `["` + big + `\n"]`} {
		doc := []byte(s)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		v, err := Parse(doc, Options{})
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(len(doc))+uint64(len(doc))/8+64<<10; got > limit {
			t.Errorf("Parse of %d bytes allocated %d bytes, limit %d", len(doc), got, limit)
		}
		runtime.KeepAlive(v)
	}
}

func TestParseStringExactFit(t *testing.T) {
	// A string that exactly fills the first chunk and ends with an escape
	// must not trigger a second buffer: the reserve for an escape is
	// bounded by what the rest of the document can still decode to.
	doc := []byte(`"` + strings.Repeat("a", arenaChunk-1) + `\n"`)
	allocs := testing.AllocsPerRun(20, func() {
		v, err := Parse(doc, Options{})
		if err != nil || len(v.Str) != arenaChunk || v.Str[arenaChunk-1] != '\n' {
			t.Fatalf("Parse: %v", err)
		}
	})
	if allocs > 2 { // the root Value and one string chunk
		t.Errorf("Parse allocated %v times, want 2", allocs)
	}
}

func TestParseStringEveryByte(t *testing.T) {
	// Every byte value at every offset across three words of a string,
	// with the string starting at every alignment: the word-at-a-time copy
	// must keep exactly the bytes before the first special byte and
	// refuse at its exact offset.
	for align := range 8 {
		for pos := range 24 {
			for b := range 256 {
				if b == '"' || b == '\\' {
					continue
				}
				body := []byte(strings.Repeat("a", 24))
				body[pos] = byte(b)
				doc := append(append([]byte(strings.Repeat(" ", align)+`"`), body...), '"')
				v, err := Parse(doc, Options{})
				off := align + 1 + pos
				switch {
				case b < 0x20:
					if r := asRefusal(t, err); r.Class != MalformedRecord || r.Offset != off || r.Reason != "control character in string" {
						t.Fatalf("byte %#x at %d: %+v", b, pos, r)
					}
				case b >= 0x80:
					if r := asRefusal(t, err); r.Class != InvalidUTF8 || r.Offset != off {
						t.Fatalf("byte %#x at %d: %+v", b, pos, r)
					}
				default:
					if err != nil || !bytes.Equal(v.Str, body) {
						t.Fatalf("byte %#x at %d: %q, %v", b, pos, v.Str, err)
					}
				}
			}
		}
	}
}

func TestParseArenaAfterFullChunk(t *testing.T) {
	// The first string fills the first chunk exactly; every later string,
	// small or large, must then share one document-sized buffer.
	doc := []byte(`["` + strings.Repeat("a", arenaChunk) + `","b","` + strings.Repeat("c", 3*arenaChunk) + `","d"]`)
	v, err := Parse(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := func(s []byte) uintptr { return reflect.ValueOf(&s[0]).Pointer() }
	b, c, d := v.Elems[1].Str, v.Elems[2].Str, v.Elems[3].Str
	if addr(c) != addr(b)+1 || addr(d) != addr(c)+uintptr(len(c)) {
		t.Errorf("later strings are not in one buffer")
	}
}
