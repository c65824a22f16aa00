package canon

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// readTxtar reads the sections of a txtar archive ("-- name --" lines). It
// is a few lines here because the txtar package needs a module this
// repository does not require.
func readTxtar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	var name string
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		s := strings.TrimSuffix(string(line), "\n")
		if strings.HasPrefix(s, "-- ") && strings.HasSuffix(s, " --") && len(s) > 6 {
			name = s[3 : len(s)-3]
			files[name] = []byte{}
			continue
		}
		if name != "" {
			files[name] = append(files[name], line...)
		}
	}
	return files
}

func TestCanonicalVectors(t *testing.T) {
	paths, err := filepath.Glob("testdata/canonical/*.txtar")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no vectors: %v", err)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f := readTxtar(t, path)
			in, want := f["input.json"], bytes.TrimSuffix(f["canonical.json"], []byte("\n"))
			if in == nil || want == nil {
				t.Fatal("vector lacks input.json or canonical.json")
			}
			got, err := Canonicalize(in)
			if err != nil {
				t.Fatalf("Canonicalize: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Canonicalize:\n got %s\nwant %s", got, want)
			}
			again, err := Canonicalize(got)
			if err != nil || !bytes.Equal(again, got) {
				t.Errorf("not idempotent: %s, %v", again, err)
			}
		})
	}
}

func TestRFC8785Numbers(t *testing.T) {
	f, err := os.Open("testdata/rfc8785/numbers.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		hexBits, want, ok := strings.Cut(line, ",")
		if !ok {
			t.Fatalf("bad vector line %q", line)
		}
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		n++
		v := math.Float64frombits(bits)
		got, err := Marshal(v)
		if want == "" {
			var ee *EncodeError
			if !errors.As(err, &ee) {
				t.Errorf("%s: Marshal(%v) = %s, %v; want an EncodeError", hexBits, v, got, err)
			}
			continue
		}
		if err != nil || string(got) != want {
			t.Errorf("%s: Marshal = %s, %v; want %s", hexBits, got, err, want)
		}
		// The same double reached through a JSON literal.
		lit := strconv.FormatFloat(v, 'g', -1, 64)
		if got, err := Canonicalize([]byte(lit)); err != nil || string(got) != want {
			t.Errorf("%s: Canonicalize(%s) = %s, %v; want %s", hexBits, lit, got, err, want)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 26 {
		t.Fatalf("read %d vectors, want the 26 of RFC 8785 Appendix B", n)
	}
}

func TestCanonicalNumberLiterals(t *testing.T) {
	tests := []struct{ in, want string }{
		{"0", "0"}, {"-0", "0"}, {"-0.0", "0"}, {"0e10", "0"}, {"-0E-5", "0"},
		{"1", "1"}, {"1.0", "1"}, {"1e0", "1"}, {"10e-1", "1"}, {"0.1e1", "1"},
		{"1e2", "100"}, {"1E+2", "100"}, {"-1.5e3", "-1500"},
		{"123456789012345", "123456789012345"},
		{"-123456789012345", "-123456789012345"},
		{"1234567890123456", "1234567890123456"},
		{"9007199254740993", "9007199254740992"},
		{"123456789012345678", "123456789012345680"},
		{"100000000000000000000", "100000000000000000000"},
		{"1e21", "1e+21"}, {"-1e21", "-1e+21"}, {"1.5e300", "1.5e+300"},
		{"0.000001", "0.000001"}, {"1e-6", "0.000001"}, {"1e-7", "1e-7"}, {"1.25e-7", "1.25e-7"},
		{"0.1", "0.1"}, {"0.30000000000000004", "0.30000000000000004"},
		{"5e-324", "5e-324"}, {"2e-324", "0"}, {"1e-400", "0"},
		{"1.7976931348623157e308", "1.7976931348623157e+308"},
		{"1.7976931348623158e308", "1.7976931348623157e+308"},
		{"333333333.33333329", "333333333.3333333"},
	}
	for _, tt := range tests {
		got, err := Canonicalize([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonicalize(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, in := range []string{"1e400", "-1e400", "1.8e308", "[1,2e999]"} {
		_, err := Canonicalize([]byte(in))
		r := asRefusal(t, err)
		if r.Class != MalformedRecord || r.Reason != "number out of range" || r.Line != 1 {
			t.Errorf("Canonicalize(%s): got %+v", in, r)
		}
	}
}

func TestESFormatProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := string(appendES(nil, f))
		back, err := strconv.ParseFloat(s, 64)
		if err != nil || back != f {
			t.Fatalf("appendES(%b) = %s does not round-trip (%v)", f, s, err)
		}
		// Same digits as the shortest representation.
		short := strconv.FormatFloat(math.Abs(f), 'e', -1, 64)
		mant := strings.Replace(short[:strings.IndexByte(short, 'e')], ".", "", 1)
		digits := strings.TrimLeft(strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, strings.SplitN(s, "e", 2)[0]), "0")
		digits = strings.TrimRight(digits, "0")
		if mant = strings.TrimRight(mant, "0"); digits != mant {
			t.Fatalf("appendES(%b) = %s: digits %s, shortest %s", f, s, digits, mant)
		}
		a := math.Abs(f)
		if plain := !strings.Contains(s, "e"); plain != (a >= 1e-6 && a < 1e21) && f != 0 {
			t.Fatalf("appendES(%b) = %s: exponent form chosen wrongly", f, s)
		}
	}
}

// utf16Reference orders by UTF-16 code units the slow, obvious way.
func utf16Reference(a, b []byte) int {
	return slices.Compare(utf16.Encode([]rune(string(a))), utf16.Encode([]rune(string(b))))
}

func TestCompareUTF16(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "a", -1}, {"a", "", 1}, {"a", "b", -1}, {"ab", "a", 1},
		{"\U0001F600", "\uFF61", -1}, // surrogates sort before U+E000..U+FFFF
		{"\uE000", "\U00010000", 1},
		{"\uD7FF", "\U00010000", -1},
		{"x\U0001F600", "x\U0001F601", -1},
		{"\U0001F600", "\U0001F600", 0},
		{"\u00e9", "e\u0301", 1},
		{"\r", "1", -1},
	}
	for _, tt := range tests {
		if got := compareUTF16([]byte(tt.a), []byte(tt.b)); got != tt.want {
			t.Errorf("compareUTF16(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
	runes := []rune{'a', 'b', 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xe000, 0xfb33, 0xff61, 0xffff, 0x10000, 0x1f600, 0x10ffff}
	r := rand.New(rand.NewPCG(5, 6))
	gen := func() []byte {
		var s []rune
		for range r.IntN(4) {
			s = append(s, runes[r.IntN(len(runes))])
		}
		return []byte(string(s))
	}
	for range 100000 {
		a, b := gen(), gen()
		if got, want := compareUTF16(a, b), utf16Reference(a, b); got != want {
			t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
}

func TestCanonicalRefusesBadTrees(t *testing.T) {
	cyclic := make([]Value, 1)
	cyclic[0] = Value{Kind: Array, Elems: cyclic}
	tests := []struct {
		name string
		tree Value
		want refusal
	}{
		{"invalid UTF-8 string", Value{Kind: String, Str: []byte("a\xff"), Off: 4, End: 8},
			refusal{InvalidUTF8, 4, 0, 0, 4, "invalid UTF-8"}},
		{"invalid UTF-8 key", Value{Kind: Object, Members: []Member{{Key: []byte("\xc0"), KeyOff: 1}}},
			refusal{InvalidUTF8, 1, 0, 0, 3, "invalid UTF-8"}},
		{"bad literal", Value{Kind: Number, Num: "01", Off: 2, End: 4},
			refusal{MalformedRecord, 2, 0, 0, 2, "invalid number"}},
		{"empty literal", Value{Kind: Number},
			refusal{MalformedRecord, 0, 0, 0, 1, "invalid number"}},
		{"not finite", Value{Kind: Number, Num: "1e999", Off: 3, End: 8},
			refusal{MalformedRecord, 3, 0, 0, 5, "number out of range"}},
		{"duplicate keys", Value{Kind: Object, Members: []Member{
			{Key: []byte("b"), KeyOff: 1}, {Key: []byte("a"), KeyOff: 9}, {Key: []byte("b"), KeyOff: 17}}},
			refusal{MalformedRecord, 17, 0, 0, 3, "duplicate key"}},
		{"unknown kind", Value{Kind: 42, Off: 5, End: 6},
			refusal{MalformedRecord, 5, 0, 0, 1, "unknown value kind"}},
		{"cycle", cyclic[0], refusal{LimitExceeded, 0, 0, 0, 1, "nesting too deep"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dst := []byte("prefix")
			out, err := tt.tree.AppendCanonical(dst)
			if err == nil {
				t.Fatalf("accepted: %q", out)
			}
			if string(out) != "prefix" {
				t.Errorf("dst changed to %q", out)
			}
			if diff := cmp.Diff(tt.want, asRefusal(t, err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestCanonicalOfParsedTree(t *testing.T) {
	doc := []byte(`{"z":[1.50,"\u0041"],"a":{"y":true,"x":null}}`)
	v, err := Parse(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := v.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"x":null,"y":true},"z":[1.5,"A"]}`; string(got) != want {
		t.Errorf("Canonical = %s, want %s", got, want)
	}
	// The tree itself keeps document order.
	if string(v.Members[0].Key) != "z" || v.Members[0].Value.Elems[0].Num != "1.50" {
		t.Errorf("Canonical reordered or rewrote the tree")
	}
}

// ---------------------------------------------------------------------------
// Marshal

type textLevel int

func (l textLevel) MarshalText() ([]byte, error) {
	if l < 0 {
		return nil, errors.New("bad level CANARY")
	}
	return []byte("level-" + strconv.Itoa(int(l))), nil
}

func (l *textLevel) UnmarshalText(b []byte) error {
	n, err := strconv.Atoi(strings.TrimPrefix(string(b), "level-"))
	if err != nil || !strings.HasPrefix(string(b), "level-") {
		return errors.New("bad level " + string(b))
	}
	*l = textLevel(n)
	return nil
}

type jsonPoint struct{ X, Y int }

func (p jsonPoint) MarshalJSON() ([]byte, error) {
	return []byte(`{ "y" : ` + strconv.Itoa(p.Y) + `, "x":` + strconv.Itoa(p.X) + `.0 }`), nil
}

type badMarshaler struct{ out string }

func (b badMarshaler) MarshalJSON() ([]byte, error) { return []byte(b.out), nil }

type Inner struct {
	Shared string `json:"shared"`
	Deep   int    `json:"deep"`
}

type marshalDoc struct {
	Inner
	Name  string    `json:"name"`
	Empty string    `json:"empty,omitempty"`
	Zero  time.Time `json:"zero,omitzero"`
	When  time.Time `json:"when"`
	Skip  string    `json:"-"`
	//lint:ignore SA5008 the tag names the field "-", as encoding/json reads it
	Dash     string `json:"-,"`
	Untagged bool
	Shared   string            `json:"shared"` // dominates Inner.Shared
	Bytes    []byte            `json:"bytes"`
	Nums     []float64         `json:"nums"`
	Ints     []int64           `json:"ints"`
	Map      map[string]int    `json:"map"`
	NilMap   map[string]int    `json:"nil_map"`
	Ptr      *int              `json:"ptr"`
	Any      any               `json:"any"`
	Raw      json.RawMessage   `json:"raw"`
	Number   json.Number       `json:"number"`
	Level    textLevel         `json:"level"`
	Point    jsonPoint         `json:"point"`
	Tree     *Value            `json:"tree"`
	F32      float32           `json:"f32"`
	Strs     map[string]string `json:"strs,omitempty"`
	private  string
}

func TestMarshal(t *testing.T) {
	tree, err := Parse([]byte(`{"b":1,"a":[true]}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d := marshalDoc{
		Inner:    Inner{Shared: "hidden", Deep: 7},
		Name:     "n<&>\u2028",
		When:     time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Skip:     "x",
		Dash:     "dash",
		Untagged: true,
		Shared:   "outer",
		Bytes:    []byte("text\n"),
		Nums:     []float64{0.1, 1e21, negZero, 1e-7},
		Ints:     []int64{MaxSafeInteger, -MaxSafeInteger},
		Map:      map[string]int{"\uff61": 1, "\U0001F600": 2, "a": 3},
		Any:      map[string]any{"k": []any{json.Number("1.0"), nil, "s"}},
		Raw:      json.RawMessage(`{ "b" : 1e2, "a" : "\u0041" }`),
		Number:   "2.50",
		Level:    3,
		Point:    jsonPoint{1, 2},
		Tree:     tree,
		F32:      0.1,
		private:  "p",
	}
	got, err := Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"-":"dash","Untagged":true,"any":{"k":[1,null,"s"]},"bytes":"text\n","deep":7,"f32":0.1,` +
		`"ints":[9007199254740991,-9007199254740991],"level":"level-3","map":{"a":3,"😀":2,"｡":1},` +
		`"name":"n<&>` + "\u2028" + `","nil_map":null,"number":2.5,"nums":[0.1,1e+21,0,1e-7],` +
		`"point":{"x":1,"y":2},"ptr":null,"raw":{"a":"A","b":100},"shared":"outer","tree":{"a":[true],"b":1},` +
		`"when":"2025-01-02T03:04:05Z"}`
	if string(got) != want {
		t.Errorf("Marshal:\n got %s\nwant %s", got, want)
	}
}

func TestMarshalAgreesWithEncodingJSON(t *testing.T) {
	type sub struct {
		A string  `json:"a"`
		B []int   `json:"b,omitempty"`
		C *string `json:"c"`
	}
	type doc struct {
		S   string             `json:"s"`
		I   int                `json:"i"`
		U   uint16             `json:"u"`
		F   float64            `json:"f"`
		G   float32            `json:"g"`
		B   bool               `json:"b"`
		L   []string           `json:"l"`
		M   map[string]float64 `json:"m"`
		P   *sub               `json:"p"`
		Sub sub
		A   any `json:"a,omitempty"`
	}
	r := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"a", "é", "\u2028", "<", "&", "\"", "\\", "\n", "\x01", "\U0001F600", "\uff61", "/", "\x7f"}
	str := func() string {
		var b strings.Builder
		for range r.IntN(5) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		return b.String()
	}
	num := func() float64 {
		switch r.IntN(4) {
		case 0:
			return float64(r.IntN(2000) - 1000)
		case 1:
			return r.NormFloat64() * math.Pow(10, float64(r.IntN(60)-30))
		case 2:
			return math.Float64frombits(r.Uint64()&^(0x7ff<<52) | uint64(r.IntN(2046))<<52)
		}
		return 0
	}
	for range 3000 {
		v := doc{S: str(), I: r.IntN(1<<40) - 1<<39, U: uint16(r.Uint32()), F: num(), G: float32(num()), B: r.IntN(2) == 0}
		for range r.IntN(3) {
			v.L = append(v.L, str())
		}
		if r.IntN(2) == 0 {
			v.M = map[string]float64{}
			for range r.IntN(4) {
				v.M[str()] = num()
			}
		}
		if r.IntN(2) == 0 {
			c := str()
			v.P = &sub{A: str(), B: []int{r.IntN(10)}, C: &c}
		}
		v.Sub.A = str()
		if r.IntN(2) == 0 {
			v.A = map[string]any{str(): []any{str(), num(), true, nil}}
		}
		if math.IsInf(float64(v.G), 0) {
			v.G = 0
		}
		ours, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%+v): %v", v, err)
		}
		std, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := Canonicalize(std)
		if err != nil {
			t.Fatalf("Canonicalize(%s): %v", std, err)
		}
		if !bytes.Equal(ours, theirs) {
			t.Fatalf("Marshal disagrees with Canonicalize(json.Marshal):\n ours %s\n std  %s", ours, theirs)
		}
	}
}

func TestMarshalRefusals(t *testing.T) {
	deep := any(1)
	for range DefaultMaxDepth + 1 {
		deep = []any{deep}
	}
	okDeep := any(1)
	for range DefaultMaxDepth {
		okDeep = []any{okDeep}
	}
	if _, err := Marshal(okDeep); err != nil {
		t.Errorf("nesting of exactly DefaultMaxDepth refused: %v", err)
	}
	type withKey struct {
		Key refusingMarshaler `json:"key"`
	}
	type inner struct {
		Name string `json:"name"`
	}
	type outer struct {
		Parts []inner `json:"parts"`
	}
	tests := []struct {
		name string
		v    any
		want EncodeError
	}{
		{"invalid UTF-8 string", "CANARY\xff", EncodeError{InvalidUTF8, "", "invalid UTF-8"}},
		{"invalid UTF-8 bytes", []byte("CANARY\xfe"), EncodeError{InvalidUTF8, "", "invalid UTF-8"}},
		{"invalid UTF-8 map key", map[string]int{"CANARY\xff": 1}, EncodeError{InvalidUTF8, "[*]", "invalid UTF-8"}},
		{"invalid UTF-8 in nested field", outer{Parts: []inner{{"ok"}, {"CANARY\xc0"}}}, EncodeError{InvalidUTF8, "parts[1].name", "invalid UTF-8"}},
		{"NaN", math.NaN(), EncodeError{MalformedRecord, "", "number out of range"}},
		{"Inf in slice", []float64{1, math.Inf(-1)}, EncodeError{MalformedRecord, "[1]", "number out of range"}},
		{"float32 Inf", float32(math.Inf(1)), EncodeError{MalformedRecord, "", "number out of range"}},
		{"int above 2^53", int64(MaxSafeInteger + 1), EncodeError{MalformedRecord, "", "integer out of range"}},
		{"int below -2^53", int64(-MaxSafeInteger - 1), EncodeError{MalformedRecord, "", "integer out of range"}},
		{"uint64 max", uint64(math.MaxUint64), EncodeError{MalformedRecord, "", "integer out of range"}},
		{"too deep", deep, EncodeError{LimitExceeded, "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]", "nesting too deep"}},
		{"invalid json.Number", json.Number("1.0.0"), EncodeError{MalformedRecord, "", "invalid json.Number"}},
		{"json.Number overflow", json.Number("1e999"), EncodeError{MalformedRecord, "", "number out of range"}},
		{"invalid RawMessage", json.RawMessage(`{"a":1,"a":2}`), EncodeError{MalformedRecord, "", "invalid json.RawMessage"}},
		{"RawMessage with lone surrogate", json.RawMessage(`"\ud800"`), EncodeError{InvalidUTF8, "", "invalid json.RawMessage"}},
		{"bad MarshalJSON output", badMarshaler{`{"a":1} x`}, EncodeError{MalformedRecord, "", "invalid MarshalJSON output"}},
		{"MarshalJSON output not finite", badMarshaler{`1e999`}, EncodeError{MalformedRecord, "", "invalid MarshalJSON output"}},
		{"MarshalText error", textLevel(-1), EncodeError{MalformedRecord, "", "MarshalText failed"}},
		{"secret that refuses encoding", withKey{}, EncodeError{MalformedRecord, "key", "MarshalJSON failed"}},
		{"secret pointer", &refusingMarshaler{}, EncodeError{MalformedRecord, "", "MarshalJSON failed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Marshal(tt.v)
			var ee *EncodeError
			if !errors.As(err, &ee) {
				t.Fatalf("Marshal = %q, %v; want an *EncodeError", out, err)
			}
			if diff := cmp.Diff(tt.want, *ee); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if strings.Contains(err.Error(), "CANARY") || strings.Contains(err.Error(), "kkkk") {
				t.Errorf("error leaks the value: %v", err)
			}
		})
	}
}

func TestMarshalUnsupportedTypes(t *testing.T) {
	type withChan struct {
		C chan int `json:"c"`
	}
	type withStringOpt struct {
		N int `json:"n,string"`
	}
	for _, v := range []any{make(chan int), withChan{}, [2]int{}, map[int]string{}, complex(1, 2), func() {}, withStringOpt{}} {
		if _, err := Marshal(v); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("Marshal(%T) error = %v, want ErrUnsupportedType", v, err)
		}
	}
	// Through an interface the type is only known when met.
	if _, err := Marshal(map[string]any{"c": make(chan int)}); !errors.Is(err, ErrUnsupportedType) {
		t.Errorf("chan inside any: error = %v, want ErrUnsupportedType", err)
	}
}

func TestMarshalTopLevel(t *testing.T) {
	tests := []struct {
		v    any
		want string
	}{
		{nil, "null"},
		{(*int)(nil), "null"},
		{"", `""`},
		{[]int{}, "[]"},
		{[]int(nil), "null"},
		{map[string]any{}, "{}"},
		{json.RawMessage(nil), "null"},
		{json.Number(""), "0"},
		{(*jsonPoint)(nil), "null"},
		{&jsonPoint{3, 4}, `{"x":3,"y":4}`},
		{Value{}, "null"},
		{true, "true"},
		{uint8(255), "255"},
		{negZero, "0"},
	}
	for _, tt := range tests {
		got, err := Marshal(tt.v)
		if err != nil || string(got) != tt.want {
			t.Errorf("Marshal(%#v) = %s, %v; want %s", tt.v, got, err, tt.want)
		}
	}
}

func TestMarshalUnmarshalRoundTrip(t *testing.T) {
	type part struct {
		Kind  string            `json:"kind"`
		Text  []byte            `json:"text"`
		Label map[string]string `json:"label,omitempty"`
		N     *int              `json:"n,omitempty"`
	}
	type doc struct {
		Schema string          `json:"schema"`
		Parts  []part          `json:"parts"`
		Raw    json.RawMessage `json:"raw"`
		Level  textLevel       `json:"level"`
	}
	n := 5
	in := doc{
		Schema: "Projection@1",
		Parts: []part{
			{Kind: "block", Text: []byte("finding x owner.team=\"pay\u00e9\"\n"), Label: map[string]string{"class": "private"}, N: &n},
			{Kind: "query", Text: []byte{}},
		},
		Raw:   json.RawMessage(`{"a":[1,2]}`),
		Level: 2,
	}
	b, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out doc
	if err := Unmarshal(b, &out, Options{}); err != nil {
		t.Fatalf("Unmarshal(%s): %v", b, err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("round trip (-in +out):\n%s", diff)
	}
	again, err := Marshal(out)
	if err != nil || !bytes.Equal(again, b) {
		t.Errorf("second Marshal differs: %s vs %s (%v)", again, b, err)
	}
}

// plainValue maps a tree to Go values in which numbers are doubles and
// objects are maps: equality of plainValue is equality of JSON values.
func plainValue(v *Value) any {
	switch v.Kind {
	case Bool:
		return v.Bool
	case Number:
		f, _ := strconv.ParseFloat(v.Num, 64)
		return f
	case String:
		return string(v.Str)
	case Array:
		s := make([]any, len(v.Elems))
		for i := range v.Elems {
			s[i] = plainValue(&v.Elems[i])
		}
		return s
	case Object:
		m := make(map[string]any, len(v.Members))
		for i := range v.Members {
			m[string(v.Members[i].Key)] = plainValue(&v.Members[i].Value)
		}
		return m
	}
	return nil
}

func FuzzCanonical(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Canonicalize(data)
		if err != nil {
			return
		}
		if !utf8.Valid(c) {
			t.Fatalf("canonical form is not UTF-8: %q", c)
		}
		c2, err := Canonicalize(c)
		if err != nil {
			t.Fatalf("canonical form refused: %q: %v", c, err)
		}
		if !bytes.Equal(c, c2) {
			t.Fatalf("not idempotent:\n%q\n%q", c, c2)
		}
		v1, err := Parse(data, Options{})
		if err != nil {
			t.Fatal(err)
		}
		v2, err := Parse(c, Options{})
		if err != nil {
			t.Fatal(err)
		}
		p1, p2 := plainValue(v1), plainValue(v2)
		if !reflect.DeepEqual(p1, p2) { // cmp.Diff is exponential on deep nesting; only explain failures
			t.Fatalf("canonical form changed the value (-in +canonical):\n%s", cmp.Diff(p1, p2))
		}
		// encoding/json reads the canonical form as the same value too.
		var std any
		if err := json.Unmarshal(c, &std); err != nil {
			t.Fatalf("encoding/json refuses canonical form %q: %v", c, err)
		}
		if !reflect.DeepEqual(p2, std) {
			t.Fatalf("encoding/json reads the canonical form differently:\n%s", cmp.Diff(p2, std))
		}
	})
}

// negZero is IEEE negative zero. The literal -0.0 is a constant expression
// and equals +0 in Go, so it cannot stand for it.
var negZero = math.Copysign(0, -1)

// refusingMarshaler refuses to be encoded, as the secret types of the
// project do (receipts.EvidenceKey, receipts.Plaintext).
type refusingMarshaler struct{}

func (refusingMarshaler) MarshalJSON() ([]byte, error) { return nil, errors.New("not serializable") }

func TestDocExampleDigest(t *testing.T) {
	// The worked example of the package documentation, end to end; the
	// digest was computed independently (Python hashlib) from the vector.
	f := readTxtar(t, "testdata/canonical/doc-example.txtar")
	c, err := Canonicalize(f["input.json"])
	if err != nil {
		t.Fatal(err)
	}
	const want = "sha256:567338d5aca5fe54c109265927dca0960de4df2025155d6e2928a0351b009575"
	if got := fmt.Sprintf("sha256:%x", sha256.Sum256(c)); got != want {
		t.Errorf("digest of the doc example = %s, want %s", got, want)
	}
}
