package canon

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestParseBuffer: with Options.Buffer a large document's strings are
// decoded into the buffers it returns, small ones on the heap; the tree and
// the refusals are those of a heap parse.
func TestParseBuffer(t *testing.T) {
	long := strings.Repeat(`line one \"quoted\"\n`, bufferMin/10)
	for _, doc := range []string{
		`{"a":"` + long + `","b":["` + long + `"]}`,    // escapes: the arena outgrows its first chunk
		`["` + strings.Repeat("x", 3*bufferMin) + `"]`, // one plain string larger than the first chunk
		`{"small":"doc"}`,
		`{"a":"` + long + `","a":1}`, // refused after the arena was taken
		`["` + long + "\x01" + `"]`,
	} {
		data := []byte(doc)
		var bufs [][]byte
		alloc := func(n int) []byte {
			if n < bufferMin {
				t.Fatalf("Buffer asked for %d bytes, below %d", n, bufferMin)
			}
			b := make([]byte, n+7) // longer than asked: the parser keeps to n
			bufs = append(bufs, b)
			return b
		}
		got, gotErr := Parse(data, Options{Buffer: alloc})
		want, wantErr := Parse(data, Options{})
		if !reflect.DeepEqual(gotErr, wantErr) || !reflect.DeepEqual(got, want) {
			t.Fatalf("%.40q: tree or refusal differs with Buffer (%v, %v)", doc, gotErr, wantErr)
		}
		if len(doc) < bufferMin {
			if len(bufs) > 0 {
				t.Fatalf("%q: Buffer used for a small document", doc)
			}
			continue
		}
		if len(bufs) == 0 {
			t.Fatalf("%.40q: Buffer not used", doc)
		}
		if got == nil {
			continue
		}
		// The long strings are in the buffers: writing them rewrites them.
		for _, b := range bufs {
			for i := range b {
				b[i] = 0xFF
			}
		}
		for _, s := range treeStrings(got, nil) {
			if len(s) >= bufferMin && bytes.Count(s, []byte{0xFF}) != len(s) {
				t.Fatalf("%.40q: a long string is not in the buffers Buffer returned", doc)
			}
		}
	}
	// Unmarshal never decodes into Buffer.
	var v struct {
		A string `json:"a"`
	}
	if err := Unmarshal([]byte(`{"a":"`+long+`"}`), &v, Options{Buffer: func(int) []byte { t.Fatal("Unmarshal used Buffer"); return nil }}); err != nil {
		t.Fatal(err)
	}
}

// treeStrings returns every string of the tree, keys and values, in
// document order.
func treeStrings(v *Value, out [][]byte) [][]byte {
	switch v.Kind {
	case String:
		out = append(out, v.Str)
	case Array:
		for i := range v.Elems {
			out = treeStrings(&v.Elems[i], out)
		}
	case Object:
		for i := range v.Members {
			out = append(out, v.Members[i].Key)
			out = treeStrings(&v.Members[i].Value, out)
		}
	}
	return out
}
