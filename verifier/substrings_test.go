package verifier

import (
	"bytes"
	"testing"
)

func TestSubstrings(t *testing.T) {
	text := []byte("abcbc\xffowner.team=\"payments\"\xffabab")
	a := newSubstrings(text)
	for _, p := range []string{"", "a", "bcbc", "cbc", "abcbc\xffo", "payments", "\"payments\"", "abab", "bab", "b\xffa",
		"abcd", "paymentz", "ababa", "\xff\xff", "team=\"p", "x"} {
		if got, want := a.contains([]byte(p)), bytes.Contains(text, []byte(p)); got != want {
			t.Errorf("contains(%q) = %v, want %v", p, got, want)
		}
	}
	if !newSubstrings(nil).contains(nil) || newSubstrings(nil).contains([]byte("a")) {
		t.Error("the empty text's automaton")
	}
}

// FuzzSubstrings: the automaton of a text finds a pattern exactly when
// bytes.Contains does, for the pattern and for every substring of the text.
func FuzzSubstrings(f *testing.F) {
	f.Add([]byte("abcbc"), []byte("cbc"))
	f.Add([]byte("aaaaab"), []byte("aab"))
	f.Add([]byte("owner.team=\"a b\"\xffmodel"), []byte("a b"))
	f.Fuzz(func(t *testing.T, text, pattern []byte) {
		if len(text) > 4096 {
			return
		}
		a := newSubstrings(text)
		if got, want := a.contains(pattern), bytes.Contains(text, pattern); got != want {
			t.Fatalf("contains(%q) in %q = %v, want %v", pattern, text, got, want)
		}
		for i := 0; i < len(text) && i < 64; i++ {
			for j := i; j <= len(text) && j < i+64; j++ {
				if !a.contains(text[i:j]) {
					t.Fatalf("the substring [%d:%d] of %q is not found", i, j, text)
				}
			}
		}
	})
}
