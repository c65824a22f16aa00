package canon

import (
	"bytes"
	"testing"
	"unicode/utf8"
)

func TestCanonicalStringEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		end  int
		want bool
	}{
		{`"abc"rest`, 5, true},
		{`""`, 2, true},
		{`"a\"b\\c\b\f\n\r\t"`, 19, true},
		{`"\u0000\u001f\u007f"`, 0, false}, // DEL is written as it is
		{`"\u0000\u001f"x`, 14, true},
		{"\"é\u2028\"", 7, true},
		{`"\/"`, 0, false},
		{`"\u001F"`, 0, false},
		{`"\u000a"`, 0, false},
		{`"\u0041"`, 0, false},
		{`"\ud83d\ude00"`, 0, false},
		{"\"a\nb\"", 0, false},
		{"\"\xff\"", 0, false},
		{"\"\xed\xa0\x80\"", 0, false},
		{`"abc`, 0, false},
		{`"\u00`, 0, false},
		{`"\`, 0, false},
		{`abc"`, 0, false},
		{``, 0, false},
	} {
		end, ok := CanonicalStringEnd([]byte(tc.in), 0)
		if ok != tc.want || ok && end != tc.end {
			t.Errorf("CanonicalStringEnd(%q) = %d, %v; want %d, %v", tc.in, end, ok, tc.end, tc.want)
		}
	}
	if end, ok := CanonicalStringEnd([]byte(`{"k":"v"}`), 5); !ok || end != 8 {
		t.Errorf("at offset 5: %d, %v", end, ok)
	}
}

// FuzzCanonicalStringEnd: a string is accepted exactly when it is the
// canonical form of the value it parses to.
func FuzzCanonicalStringEnd(f *testing.F) {
	for _, s := range []string{`"a"`, `"\n\u0001"`, "\"\u00e9\"", `"\u0041"`, `"\/"`, "\"\x01\"", `"x`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		end, ok := CanonicalStringEnd(data, 0)
		if ok {
			v, err := Parse(data[:end], Options{})
			if err != nil || v.Kind != String {
				t.Fatalf("accepted %q, which does not parse as a string: %v", data[:end], err)
			}
			if c := appendCanonString(nil, v.Str); !bytes.Equal(c, data[:end]) {
				t.Fatalf("accepted %q, whose canonical form is %q", data[:end], c)
			}
		} else if v, err := Parse(data, Options{}); err == nil && v.Kind == String {
			if c := appendCanonString(nil, v.Str); bytes.Equal(c, data) {
				t.Fatalf("refused the canonical string %q", data)
			}
		}
		// Every valid UTF-8 value's canonical form is accepted, whole.
		if c := appendCanonString(nil, data); utf8.Valid(data) {
			if end, ok := CanonicalStringEnd(append(c, `,"x"`...), 0); !ok || end != len(c) {
				t.Fatalf("refused %q (%d, %v)", c, end, ok)
			}
		}
	})
}
