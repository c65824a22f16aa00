package verifier

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/canon"
)

// checkDecodeBody compares decodeBody with the strict parser on the string
// body b: whatever decodeBody accepts, the parser accepts, decoding the same
// bytes.
func checkDecodeBody(t *testing.T, b []byte) bool {
	t.Helper()
	got, ok := decodeBody(nil, b)
	tree, err := canon.Parse(append(append([]byte{'"'}, b...), '"'), canon.Options{})
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("decodeBody accepts %q, the parser refuses it: %v", b, err)
	}
	if !bytes.Equal(got, tree.Str) {
		t.Fatalf("body %q: decodeBody %q, parser %q", b, got, tree.Str)
	}
	return true
}

func TestDecodeBody(t *testing.T) {
	for _, tt := range []struct {
		body string
		ok   bool
	}{
		{``, true},
		{`plain text é €`, true},
		{`\" \\ \/ \b \f \n \r \t`, true},
		{`\u0000\u00e9\u00E9\u20ac\uffff`, true},
		{`\ud83d\ude00`, true},
		{`\ud83d`, false},
		{`\ud83d\u0041`, false},
		{`\ude00`, false},
		{`\u12`, false},
		{`\x`, false},
		{`\`, false},
		{"a\tb", false},
		{"a\"b", false},
		{"\xff", false},
		{"\xed\xa0\x80", false}, // a surrogate written raw
	} {
		if got := checkDecodeBody(t, []byte(tt.body)); got != tt.ok {
			t.Errorf("decodeBody(%q) ok = %v, want %v", tt.body, got, tt.ok)
		}
	}
}

func FuzzDecodeBody(f *testing.F) {
	for _, s := range []string{`a\n\"`, `\ud83d\ude00`, `\u00e9`, "é\t"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkDecodeBody(t, b) })
}

// checkShadow compares parseSource with the strict parse of data: the same
// projection, the same canonical form of the tree, the same error. It
// returns whether the shadow parse took data.
func checkShadow(t *testing.T, data []byte) bool {
	t.Helper()
	want, wantTree, wantErr := parseProjection(data)
	_, _, free, took := parseShadow(data)
	if took {
		free()
	}
	got, gotTree, free, err := parseSource(data)
	defer free()
	if (err == nil) != (wantErr == nil) || (err != nil && err.Error() != wantErr.Error()) {
		t.Fatalf("error %v, strict parse %v", err, wantErr)
	}
	if took && wantErr != nil {
		t.Fatalf("the shadow parse took a document the strict parse refuses: %v", wantErr)
	}
	if !reflect.DeepEqual(want, got) { // cmp.Diff only to explain: it is slow on long texts
		t.Fatalf("projection (-strict +shadow):\n%s", cmp.Diff(want, got))
	}
	if (gotTree == nil) != (wantTree == nil) {
		t.Fatalf("tree %v, strict parse's %v", gotTree != nil, wantTree != nil)
	}
	if wantTree != nil {
		a, errA := wantTree.Canonical()
		b, errB := gotTree.Canonical()
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Fatalf("canonical forms differ (%v, %v)", errA, errB)
		}
	}
	return took
}

// longParts are parts whose texts the shadow parse takes out.
func longParts() []testPart {
	text := strings.Repeat(sampleParts[0].Text, 1+shadowMin/len(sampleParts[0].Text))
	return []testPart{{"block", "scan", text}, {"query", "q", sampleParts[1].Text}, {"tool", "t", text + "ask triage.explain owner.person=\"é \\\\ \\\"\"\n"}}
}

// TestShadowTakesProjections: projections with long texts go through the
// shadow parse, with the same result as the strict parse, whatever the
// layout of the document.
func TestShadowTakesProjections(t *testing.T) {
	src := makeCut(t, longParts(), cutOptions{}).Source
	indented := bytes.ReplaceAll(src, []byte(`,"`), []byte(",\n  \""))
	escaped := bytes.Replace(src, []byte("finding"), []byte(`\u0066inding`), 1)
	slash := bytes.Replace(src, []byte("go.dev/issue"), []byte(`go.dev\/issue`), 1)
	for name, doc := range map[string][]byte{"canonical": src, "indented": indented, "escaped": escaped, "slash": slash} {
		if !checkShadow(t, doc) {
			t.Errorf("%s: the shadow parse did not take it", name)
		}
	}
}

// TestShadowLeavesBrokenDocuments: a document the strict parse refuses, or
// that breaks the shadow parse's own rules, gives the strict parse's result.
func TestShadowLeavesBrokenDocuments(t *testing.T) {
	src := makeCut(t, longParts(), cutOptions{}).Source
	long := string(bytes.Repeat([]byte("k"), shadowMin))
	for name, doc := range map[string][]byte{
		"invalid UTF-8 in a text":  bytes.Replace(src, []byte("finding"), []byte("f\xffnding"), 1),
		"lone surrogate in a text": bytes.Replace(src, []byte("finding"), []byte(`\ud800finding`), 1),
		"raw tab in a text":        bytes.Replace(src, []byte("finding"), []byte("\tfinding"), 1),
		"duplicate key":            bytes.Replace(src, []byte(`"key":"scan"`), []byte(`"key":"scan","key":"x"`), 1),
		"unknown field":            bytes.Replace(src, []byte(`"key":"scan"`), []byte(`"key":"scan","extra":"`+long+`"`), 1),
		"long key":                 bytes.Replace(src, []byte(`"key":"scan"`), []byte(`"key":"scan","`+long+`":1`), 1),
		"trailing data":            append(append([]byte{}, src...), '}'),
		"truncated":                src[:len(src)-10],
		"unterminated":             src[:len(src)/2],
		"schema":                   bytes.Replace(src, []byte(`"Projection@1"`), []byte(`"Projection@2"`), 1),
		"a text of the wrong type": bytes.Replace(src, []byte(`"text":"`), []byte(`"text":["`), 1),
	} {
		if checkShadow(t, doc) {
			t.Errorf("%s: the shadow parse took it", name)
		}
	}
}

// FuzzShadowParse: whatever the document, parseSource gives the strict
// parse's projection, tree and error.
func FuzzShadowParse(f *testing.F) {
	src := makeCut(f, longParts(), cutOptions{}).Source
	f.Add(src)
	f.Add(bytes.Replace(src, []byte("finding"), []byte(`\u0066inding \ud83d\ude00`), 2))
	f.Fuzz(func(t *testing.T, data []byte) { checkShadow(t, data) })
}
