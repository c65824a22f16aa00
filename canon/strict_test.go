package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

type label struct {
	Class      string   `json:"class"`
	Weight     int      `json:"weight"`
	Categories []string `json:"categories"`
}

type part struct {
	Kind    string   `json:"kind"`
	Key     string   `json:"key"`
	Text    []byte   `json:"text"`
	Label   *label   `json:"label,omitempty"`
	Lineage []string `json:"lineage"`
}

type projection struct {
	Schema  string `json:"schema"`
	Profile string `json:"profile"`
	Parts   []part `json:"parts"`
}

func TestUnmarshalProjection(t *testing.T) {
	doc := `{
  "schema": "Projection@1",
  "profile": "closed-diagnostic@1",
  "parts": [
    {"kind": "block", "key": "scan/findings",
     "text": "finding GO-2023-2102 owner.module=\"git.corp.example/payments/ledger\"\n",
     "label": {"class": "private", "weight": 3, "categories": ["owner.module"]},
     "lineage": ["sha256:00"]},
    {"kind": "query", "key": "q", "text": "ask triage\n", "label": null, "lineage": []}
  ]
}`
	var got projection
	if err := Unmarshal([]byte(doc), &got, Options{}); err != nil {
		t.Fatal(err)
	}
	want := projection{
		Schema: "Projection@1", Profile: "closed-diagnostic@1",
		Parts: []part{
			{Kind: "block", Key: "scan/findings",
				Text:    []byte("finding GO-2023-2102 owner.module=\"git.corp.example/payments/ledger\"\n"),
				Label:   &label{Class: "private", Weight: 3, Categories: []string{"owner.module"}},
				Lineage: []string{"sha256:00"}},
			{Kind: "query", Key: "q", Text: []byte("ask triage\n"), Lineage: []string{}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestUnmarshalRefusals(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want refusal
		path string
	}{
		{"unknown field", `{"schema":"x","Schema":"y"}`, refusal{MalformedRecord, 14, 1, 15, 8, "unknown field"}, ""},
		{"case variant of a field", `{"SCHEMA":"x"}`, refusal{MalformedRecord, 1, 1, 2, 8, "unknown field"}, ""},
		{"unknown nested field", "{\"parts\":[{},\n {\"kind\":\"a\",\"labels\":{}}]}", refusal{MalformedRecord, 27, 2, 14, 8, "unknown field"}, "parts[1]"},
		{"escaped unknown key length", `{"\u0073chema2":1}`, refusal{MalformedRecord, 1, 1, 2, 14, "unknown field"}, ""},
		{"string for array", `{"parts":"x"}`, refusal{MalformedRecord, 9, 1, 10, 3, "expected array"}, "parts"},
		{"number for string", `{"schema":12}`, refusal{MalformedRecord, 10, 1, 11, 2, "expected string"}, "schema"},
		{"array for bytes", `{"parts":[{"text":[1,2]}]}`, refusal{MalformedRecord, 18, 1, 19, 5, "expected string"}, "parts[0].text"},
		{"string for int", `{"parts":[{"label":{"weight":"3"}}]}`, refusal{MalformedRecord, 29, 1, 30, 3, "expected number"}, "parts[0].label.weight"},
		{"fraction for int", `{"parts":[{"label":{"weight":3.0}}]}`, refusal{MalformedRecord, 29, 1, 30, 3, "expected integer"}, "parts[0].label.weight"},
		{"exponent for int", `{"parts":[{"label":{"weight":3e0}}]}`, refusal{MalformedRecord, 29, 1, 30, 3, "expected integer"}, "parts[0].label.weight"},
		{"int beyond 2^53", `{"parts":[{"label":{"weight":9007199254740992}}]}`, refusal{MalformedRecord, 29, 1, 30, 16, "integer out of range"}, "parts[0].label.weight"},
		{"object for struct pointer", `{"parts":[{"label":[]}]}`, refusal{MalformedRecord, 19, 1, 20, 2, "expected object"}, "parts[0].label"},
		{"bool for string slice element", `{"parts":[{"lineage":["a",true]}]}`, refusal{MalformedRecord, 26, 1, 27, 4, "expected string"}, "parts[0].lineage[1]"},
		{"top-level array", `[]`, refusal{MalformedRecord, 0, 1, 1, 2, "expected object"}, ""},
		{"syntax first", `{"nope":1,}`, refusal{MalformedRecord, 10, 1, 11, 1, "expected object key"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p projection
			err := Unmarshal([]byte(tt.in), &p, Options{})
			if diff := cmp.Diff(tt.want, asRefusal(t, err)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			var se *SyntaxError
			errors.As(err, &se)
			if se.Path != tt.path {
				t.Errorf("Path = %q, want %q", se.Path, tt.path)
			}
		})
	}
}

func TestUnmarshalIntegers(t *testing.T) {
	type ints struct {
		I   int     `json:"i"`
		I8  int8    `json:"i8"`
		I64 int64   `json:"i64"`
		U8  uint8   `json:"u8"`
		U   uint    `json:"u"`
		U64 uint64  `json:"u64"`
		F   float64 `json:"f"`
		F32 float32 `json:"f32"`
	}
	accepts := []struct {
		in   string
		want ints
	}{
		{`{"i":-0,"i8":-128,"i64":9007199254740991,"u8":255,"u":0,"u64":9007199254740991}`,
			ints{I: 0, I8: -128, I64: MaxSafeInteger, U8: 255, U64: MaxSafeInteger}},
		{`{"i64":-9007199254740991}`, ints{I64: -MaxSafeInteger}},
		{`{"f":1e-400,"f32":3.4e38}`, ints{F: 0, F32: 3.4e38}},
		{`{"f":-1.5E+2}`, ints{F: -150}},
		{`{"i":null,"f":null}`, ints{}},
	}
	for _, tt := range accepts {
		var got ints
		if err := Unmarshal([]byte(tt.in), &got, Options{}); err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.in, diff)
		}
	}
	refuses := []struct{ in, reason string }{
		{`{"i8":128}`, "integer out of range"},
		{`{"i8":-129}`, "integer out of range"},
		{`{"u8":256}`, "integer out of range"},
		{`{"u":-1}`, "integer out of range"},
		{`{"u":-0}`, "integer out of range"},
		{`{"i64":9007199254740992}`, "integer out of range"},
		{`{"i64":-9007199254740992}`, "integer out of range"},
		{`{"u64":18446744073709551615}`, "integer out of range"},
		{`{"i":99999999999999999999999}`, "integer out of range"},
		{`{"i":1.5}`, "expected integer"},
		{`{"i":1E3}`, "expected integer"},
		{`{"i":true}`, "expected number"},
		{`{"f":1e400}`, "number out of range"},
		{`{"f32":3.5e38}`, "number out of range"},
		{`{"f":"1"}`, "expected number"},
	}
	for _, tt := range refuses {
		var got ints
		err := Unmarshal([]byte(tt.in), &got, Options{})
		if r := asRefusal(t, err); r.Reason != tt.reason || r.Class != MalformedRecord {
			t.Errorf("%s: got %+v, want reason %q", tt.in, r, tt.reason)
		}
	}
}

type embeddedBase struct {
	ID     string `json:"id"`
	Shadow string `json:"shadow"`
}

type EmbeddedPtr struct {
	Extra string `json:"extra"`
}

type withEmbedded struct {
	embeddedBase
	*EmbeddedPtr
	Shadow string `json:"shadow"`
	Plain  int
	Skip   string `json:"-"`
	//lint:ignore SA5008 the tag names the field "-", as encoding/json reads it
	Dash string `json:"-,"`
	//lint:ignore U1000 an unexported field, which decoding must leave alone
	hidden string
}

func TestUnmarshalTargets(t *testing.T) {
	type all struct {
		S       string            `json:"s"`
		B       []byte            `json:"b"`
		Bool    bool              `json:"bool"`
		Num     json.Number       `json:"num"`
		Raw     json.RawMessage   `json:"raw"`
		RawNull json.RawMessage   `json:"raw_null"`
		Val     Value             `json:"val"`
		ValPtr  *Value            `json:"val_ptr"`
		Any     any               `json:"any"`
		Map     map[string]int    `json:"map"`
		Ptr     **string          `json:"ptr"`
		Level   textLevel         `json:"level"`
		LevelP  *textLevel        `json:"level_p"`
		When    time.Time         `json:"when"`
		Nested  map[string][]bool `json:"nested"`
		Emb     withEmbedded      `json:"emb"`
	}
	doc := `{"s":"a\u00e9","b":"bXk=\n","bool":true,"num":-1.50e3,"raw":{ "z":1.0, "a":[ "x" ] },"raw_null":null,` +
		`"val":{"k":[1,"two"]},"val_ptr":"p","any":{"o":[1.5,"s",true,null,{}]},"map":{"x":1,"y":-2},` +
		`"ptr":"deep","level":"level-7","level_p":"level-8","when":"2025-01-02T03:04:05.5Z",` +
		`"nested":{"k":[true,false]},"emb":{"id":"i","shadow":"outer","Plain":4,"extra":"e","-":"dash"}}`
	var got all
	if err := Unmarshal([]byte(doc), &got, Options{}); err != nil {
		t.Fatal(err)
	}
	if got.S != "aé" || string(got.B) != "bXk=\n" || !got.Bool || got.Num != "-1.50e3" {
		t.Errorf("scalars: %+v", got)
	}
	if string(got.Raw) != `{"a":["x"],"z":1}` || string(got.RawNull) != "null" {
		t.Errorf("raw = %s, raw_null = %s", got.Raw, got.RawNull)
	}
	if c, _ := got.Val.Canonical(); string(c) != `{"k":[1,"two"]}` || got.Val.Off != len(`{"s":"a\u00e9","b":"bXk=\n","bool":true,"num":-1.50e3,"raw":{ "z":1.0, "a":[ "x" ] },"raw_null":null,"val":`) {
		t.Errorf("val = %s at %d", c, got.Val.Off)
	}
	if got.ValPtr == nil || string(got.ValPtr.Str) != "p" {
		t.Errorf("val_ptr = %+v", got.ValPtr)
	}
	wantAny := map[string]any{"o": []any{json.Number("1.5"), "s", true, nil, map[string]any{}}}
	if diff := cmp.Diff(wantAny, got.Any); diff != "" {
		t.Errorf("any (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"x": 1, "y": -2}, got.Map); diff != "" {
		t.Errorf("map (-want +got):\n%s", diff)
	}
	if got.Ptr == nil || *got.Ptr == nil || **got.Ptr != "deep" {
		t.Errorf("ptr = %v", got.Ptr)
	}
	if got.Level != 7 || got.LevelP == nil || *got.LevelP != 8 {
		t.Errorf("levels = %v, %v", got.Level, got.LevelP)
	}
	if !got.When.Equal(time.Date(2025, 1, 2, 3, 4, 5, 5e8, time.UTC)) {
		t.Errorf("when = %v", got.When)
	}
	if diff := cmp.Diff(map[string][]bool{"k": {true, false}}, got.Nested); diff != "" {
		t.Errorf("nested (-want +got):\n%s", diff)
	}
	wantEmb := withEmbedded{embeddedBase: embeddedBase{ID: "i"}, EmbeddedPtr: &EmbeddedPtr{Extra: "e"}, Shadow: "outer", Plain: 4, Dash: "dash"}
	if diff := cmp.Diff(wantEmb, got.Emb, cmp.AllowUnexported(withEmbedded{}, embeddedBase{})); diff != "" {
		t.Errorf("embedded (-want +got):\n%s", diff)
	}
	// The skipped and unexported fields are unknown members.
	for _, doc := range []string{`{"Skip":"x"}`, `{"hidden":"x"}`, `{"embeddedBase":{}}`, `{"EmbeddedPtr":{}}`} {
		var w withEmbedded
		if r := asRefusal(t, Unmarshal([]byte(doc), &w, Options{})); r.Reason != "unknown field" {
			t.Errorf("%s: got %+v", doc, r)
		}
	}
}

func TestUnmarshalNull(t *testing.T) {
	type nulls struct {
		S   string          `json:"s"`
		I   int             `json:"i"`
		B   bool            `json:"b"`
		St  label           `json:"st"`
		P   *label          `json:"p"`
		Sl  []string        `json:"sl"`
		By  []byte          `json:"by"`
		M   map[string]int  `json:"m"`
		A   any             `json:"a"`
		N   json.Number     `json:"n"`
		R   json.RawMessage `json:"r"`
		Lv  textLevel       `json:"lv"`
		Tm  time.Time       `json:"tm"`
		Val Value           `json:"val"`
	}
	start := nulls{S: "s", I: 1, B: true, St: label{Class: "c"}, P: &label{}, Sl: []string{"x"}, By: []byte("b"),
		M: map[string]int{"k": 1}, A: "a", N: "1", R: json.RawMessage("1"), Lv: 3, Tm: time.Unix(5, 0).UTC()}
	got := start
	doc := `{"s":null,"i":null,"b":null,"st":null,"p":null,"sl":null,"by":null,"m":null,"a":null,"n":null,"r":null,"lv":null,"tm":null,"val":null}`
	if err := Unmarshal([]byte(doc), &got, Options{}); err != nil {
		t.Fatal(err)
	}
	want := start
	want.P, want.Sl, want.By, want.M, want.A, want.R = nil, nil, nil, nil, nil, json.RawMessage("null")
	want.Val = Value{Kind: Null, Off: len(doc) - 5, End: len(doc) - 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

type failingUnmarshaler struct{}

func (*failingUnmarshaler) UnmarshalJSON(b []byte) error {
	return errors.New("cannot use " + string(b))
}

type recordingUnmarshaler struct{ got string }

func (r *recordingUnmarshaler) UnmarshalJSON(b []byte) error {
	r.got = string(b)
	return nil
}

func TestUnmarshalCustomDecoders(t *testing.T) {
	type doc struct {
		Rec  recordingUnmarshaler `json:"rec"`
		Fail *failingUnmarshaler  `json:"fail"`
		Lv   textLevel            `json:"lv"`
	}
	var d doc
	if err := Unmarshal([]byte(`{"rec": { "b" : [1.50, "\u0041"] }}`), &d, Options{}); err != nil {
		t.Fatal(err)
	}
	if d.Rec.got != `{ "b" : [1.50, "\u0041"] }` {
		t.Errorf("UnmarshalJSON got %q, want the exact document text", d.Rec.got)
	}
	// From a tree, the text is rebuilt compactly, literals kept.
	tree, err := Parse([]byte(`{"rec": { "b" : [1.50, "\u0041"] }}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	d = doc{}
	if err := tree.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Rec.got != `{"b":[1.50,"A"]}` {
		t.Errorf("UnmarshalJSON from tree got %q", d.Rec.got)
	}
	const canary = "CANARYsecret"
	for _, in := range []string{`{"fail":"` + canary + `"}`, `{"lv":"` + canary + `"}`} {
		err := Unmarshal([]byte(in), &d, Options{})
		r := asRefusal(t, err)
		if r.Reason != "invalid value" || r.Class != MalformedRecord {
			t.Errorf("%s: got %+v", in, r)
		}
		if strings.Contains(err.Error(), canary) {
			t.Errorf("error leaks the value: %v", err)
		}
	}
	if r := asRefusal(t, Unmarshal([]byte(`{"lv":7}`), &d, Options{})); r.Reason != "expected string" {
		t.Errorf("number into TextUnmarshaler: got %+v", r)
	}
}

func TestUnmarshalBadTargets(t *testing.T) {
	var s string
	for _, v := range []any{nil, s, (*string)(nil), projection{}} {
		if err := Unmarshal([]byte(`"x"`), v, Options{}); !errors.Is(err, ErrInvalidTarget) {
			t.Errorf("Unmarshal into %T: %v, want ErrInvalidTarget", v, err)
		}
	}
	type withChan struct {
		C chan int `json:"c"`
	}
	type withArray struct {
		A [4]byte `json:"a"`
	}
	type withIntKeys struct {
		M map[int]string `json:"m"`
	}
	type withStringOpt struct {
		N int `json:"n,string"`
	}
	type withIface struct {
		E error `json:"e"`
	}
	// Refused whatever the document holds: the schema is wrong, not the input.
	for _, v := range []any{&withChan{}, &withArray{}, &withIntKeys{}, &withStringOpt{}, &withIface{}} {
		if err := Unmarshal([]byte(`{}`), v, Options{}); !errors.Is(err, ErrUnsupportedType) {
			t.Errorf("Unmarshal into %T: %v, want ErrUnsupportedType", v, err)
		}
	}
}

func TestValueDecode(t *testing.T) {
	doc := []byte(`{"schema":"s","parts":[{"kind":"k","text":"t","lineage":["l"]}]}`)
	tree, err := Parse(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var p projection
	if err := tree.Decode(&p); err != nil {
		t.Fatal(err)
	}
	// The result shares no memory with the tree.
	p.Parts[0].Text[0] = 'X'
	if string(tree.Members[1].Value.Elems[0].Members[1].Value.Str) != "t" {
		t.Errorf("Decode aliased the tree")
	}
	var v Value
	if err := tree.Decode(&v); err != nil {
		t.Fatal(err)
	}
	v.Members[0].Key[0] = 'X'
	if string(tree.Members[0].Key) != "schema" {
		t.Errorf("Decode into Value aliased the tree")
	}
	bad, err := Parse([]byte(`{"schema":"s","extra":1}`), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(refusal{MalformedRecord, 14, 0, 0, 7, "unknown field"}, asRefusal(t, bad.Decode(&p))); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestUnmarshalErrorsAreContentFree(t *testing.T) {
	const canary = "CANARY"
	docs := []string{
		`{"` + canary + `":1}`,
		`{"schema":["` + canary + `"]}`,
		`{"parts":[{"label":{"weight":"` + canary + `"}}]}`,
		`{"parts":[{"label":{"` + canary + `":1}}]}`,
	}
	for _, doc := range docs {
		var p projection
		err := Unmarshal([]byte(doc), &p, Options{})
		if err == nil {
			t.Fatalf("accepted %s", doc)
		}
		if strings.Contains(err.Error(), canary) {
			t.Errorf("error leaks input: %v", err)
		}
	}
	var m map[string][]int
	err := Unmarshal([]byte(`{"`+canary+`":[1,"x"]}`), &m, Options{})
	if err == nil || strings.Contains(err.Error(), canary) || !strings.Contains(err.Error(), "[*][1]") {
		t.Errorf("map path: %v", err)
	}
}

// ---------------------------------------------------------------------------
// Agreement with encoding/json.

var fuzzSeeds = []string{
	`{"a":1}`, `{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"name":"x","Name":"y"}`, `{"NAME":"x"}`,
	`{"Plain":"p"}`, `{"plain":"p"}`,
	"\"\xef\xbf\xbd\"", `"\ufffd"`, "\"\xff\"", `"\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800"`, `"\ud800\u0041"`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`,
	`{"count":9007199254740993}`, `{"count":1e2}`, `{"count":-0}`, `{"ratio":1e400}`, `{"ratio":-0.0}`,
	`{"tags":["a",null]}`, `{"meta":{"k":null}}`, `{"sub":{}}`, `{"sub":null}`, `{"num":"12"}`, `{"num":1.50}`,
	`{"any":{"x":[1,{"y":null}]}}`, "\xef\xbb\xbf{}", `{} `, `{}x`, ` [1, 2.5e-3, "\u00e9\n", true, null] `,
	`{"name":"\u2028<>&"}`, "{\"name\":\"\x7f\"}", `{"sub":{"a":"x","b":[1,2],"c":3}}`, `{"ok":true,"ok":false}`,
	`"\u0000"`, `{"":1}`, `{"\u0000":1,"\u0000":2}`,
}

func FuzzStrictAgrees(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ours any
		if err := Unmarshal(data, &ours, Options{}); err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || !se.Class.valid() || se.Offset < 0 || se.Offset > len(data) {
				t.Fatalf("bad refusal %#v", err)
			}
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var theirs any
		if err := dec.Decode(&theirs); err != nil {
			t.Fatalf("strict accepted %q, encoding/json refused: %v", data, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Fatalf("strict accepted %q, encoding/json sees more data", data)
		}
		if !reflect.DeepEqual(theirs, ours) { // cmp.Diff is exponential on deep nesting; only explain failures
			t.Fatalf("%q decoded differently (-encoding/json +strict):\n%s", data, cmp.Diff(theirs, ours))
		}
	})
}

type fuzzSub struct {
	A string  `json:"a"`
	B []int   `json:"b"`
	C *uint16 `json:"c,omitempty"`
}

type fuzzDoc struct {
	Name  string             `json:"name"`
	Count int                `json:"count"`
	Ratio float64            `json:"ratio"`
	OK    bool               `json:"ok"`
	Tags  []string           `json:"tags"`
	Meta  map[string]string  `json:"meta"`
	Sub   *fuzzSub           `json:"sub"`
	Num   json.Number        `json:"num"`
	Any   any                `json:"any"`
	Subs  map[string]fuzzSub `json:"subs"`
	Small int8               `json:"small"`
	Plain string
}

func FuzzStrictAgreesTyped(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var ours fuzzDoc
		if err := Unmarshal(data, &ours, Options{}); err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		dec.DisallowUnknownFields()
		var theirs fuzzDoc
		if err := dec.Decode(&theirs); err != nil {
			t.Fatalf("strict accepted %q, encoding/json refused: %v", data, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Fatalf("strict accepted %q, encoding/json sees more data", data)
		}
		if !reflect.DeepEqual(theirs, ours) { // cmp.Diff is exponential on deep nesting; only explain failures
			t.Fatalf("%q decoded differently (-encoding/json +strict):\n%s", data, cmp.Diff(theirs, ours))
		}
	})
}

// ---------------------------------------------------------------------------
// The hot path: a 64 MiB document whose bulk is one JSON string.

type bigDoc struct {
	Schema string `json:"schema"`
	Text   []byte `json:"text"`
}

var bigOnce struct {
	sync.Once
	doc, text []byte
}

// bigDocument returns a document of about size bytes: one string of ≈150
// byte ASCII lines, each ending with the \n escape, with an occasional
// non-ASCII rune and escaped quote, and the decoded text it must yield.
func bigDocument(size int) (doc, text []byte) {
	doc = make([]byte, 0, size+256)
	text = make([]byte, 0, size)
	doc = append(doc, `{"schema":"Projection@1","text":"`...)
	runes := []string{"é", "€", "ü", "😀", "ß"}
	for n := 0; len(doc) < size-200; n++ {
		line := "finding GO-2023-" + strconv.Itoa(1000+n%9000) + " golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module="
		docLine, textLine := line+`\"git.corp.example/payments/ledger`, line+`"git.corp.example/payments/ledger`
		if n%10 == 3 {
			r := runes[n%len(runes)]
			docLine, textLine = docLine+r, textLine+r
		}
		docLine, textLine = docLine+`/`+strconv.Itoa(n)+`\"`, textLine+`/`+strconv.Itoa(n)+`"`
		doc = append(doc, docLine...)
		doc = append(doc, `\n`...)
		text = append(text, textLine...)
		text = append(text, '\n')
	}
	doc = append(doc, `"}`...)
	return doc, text
}

func benchDocument() ([]byte, []byte) {
	bigOnce.Do(func() { bigOnce.doc, bigOnce.text = bigDocument(64 << 20) })
	return bigOnce.doc, bigOnce.text
}

func TestUnmarshalLargeString(t *testing.T) {
	doc, text := bigDocument(1 << 20)
	var got bigDoc
	if err := Unmarshal(doc, &got, Options{}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Text, text) || got.Schema != "Projection@1" {
		t.Fatalf("decoded text differs (len %d, want %d)", len(got.Text), len(text))
	}
	var std struct {
		Schema string `json:"schema"`
		Text   string `json:"text"`
	}
	if err := json.Unmarshal(doc, &std); err != nil || std.Text != string(text) {
		t.Fatalf("encoding/json disagrees: %v", err)
	}
	// A raw invalid byte deep inside the string is found at its offset.
	bad := bytes.Clone(doc)
	at := len(bad) - 1000
	for bad[at] == '\\' || bad[at-1] == '\\' {
		at++
	}
	bad[at] = 0xff
	err := Unmarshal(bad, &got, Options{})
	if r := asRefusal(t, err); r.Class != InvalidUTF8 || r.Offset != at {
		t.Errorf("got %+v, want InvalidUTF8 at %d", r, at)
	}
}

// cpuMeter reports, besides the wall-clock MB/s of SetBytes, the MB/s per
// second of CPU time the process used (user+sys, GC workers included):
// on a shared machine wall time also counts waiting for a CPU.
type cpuMeter struct{ start time.Duration }

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func startCPU() cpuMeter { return cpuMeter{cpuTime()} }

func (m cpuMeter) report(b *testing.B, bytesPerOp int) {
	cpu := (cpuTime() - m.start).Seconds()
	if cpu > 0 && b.N > 0 {
		b.ReportMetric(float64(bytesPerOp)*float64(b.N)/cpu/1e6, "cpu-MB/s")
	}
}

func BenchmarkUnmarshalLargeString(b *testing.B) {
	doc, text := benchDocument()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	var got bigDoc
	m := startCPU()
	for b.Loop() {
		got = bigDoc{}
		if err := Unmarshal(doc, &got, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	m.report(b, len(doc))
	if len(got.Text) != len(text) {
		b.Fatalf("decoded %d bytes, want %d", len(got.Text), len(text))
	}
}

func BenchmarkSHA256Baseline(b *testing.B) {
	doc, _ := benchDocument()
	b.SetBytes(int64(len(doc)))
	m := startCPU()
	for b.Loop() {
		sha256.Sum256(doc)
	}
	m.report(b, len(doc))
}

// BenchmarkFreshBufferBaseline is the floor under any decoder that returns
// a new buffer: allocate as many bytes as the decoded text and write them.
func BenchmarkFreshBufferBaseline(b *testing.B) {
	doc, text := benchDocument()
	b.SetBytes(int64(len(doc)))
	var sink []byte
	m := startCPU()
	for b.Loop() {
		sink = make([]byte, len(text))
		copy(sink, text)
	}
	m.report(b, len(doc))
	runtime.KeepAlive(sink)
}

func BenchmarkCanonicalizeLargeString(b *testing.B) {
	doc, _ := benchDocument()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	m := startCPU()
	for b.Loop() {
		if _, err := Canonicalize(doc); err != nil {
			b.Fatal(err)
		}
	}
	m.report(b, len(doc))
}

func BenchmarkUnmarshalSmall(b *testing.B) {
	doc := []byte(`{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[` +
		`{"kind":"block","key":"scan/findings","text":"finding GO-2023-2102 x\n","label":{"class":"private","weight":3,"categories":["owner.module"]},"lineage":["sha256:00"]},` +
		`{"kind":"query","key":"q","text":"ask triage.rank-by-severity\n","label":{"class":"internal","weight":1,"categories":[]},"lineage":["sha256:01"]}]}`)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var p projection
		if err := Unmarshal(doc, &p, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestLineCol(t *testing.T) {
	data := []byte("ab\ncd\n\nef")
	for _, c := range []struct{ off, line, col int }{
		{-3, 1, 1}, {0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {5, 2, 3}, {6, 3, 1}, {7, 4, 1}, {9, 4, 3}, {99, 4, 3},
	} {
		if l, col := LineCol(data, c.off); l != c.line || col != c.col {
			t.Errorf("LineCol(%d) = %d:%d, want %d:%d", c.off, l, col, c.line, c.col)
		}
	}
}
