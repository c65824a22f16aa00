package importer

import "testing"

// TestDescribeValue: every fault the grammar has for an owner value is
// named by class and position, never by the value's text.
func TestDescribeValue(t *testing.T) {
	for _, tt := range []struct {
		val    string
		vocab  bool
		what   string
		offset int
	}{
		{"a\x00b", false, "U+0000 NUL (a control character)", 1},
		{"ab\x1b", false, "U+001B ESC (a control character)", 2},
		{"x\u0085", false, "U+0085 (a control character)", 1},
		{"x\u00ady", false, "U+00AD SOFT HYPHEN (an invisible character)", 1},
		{"\u2066x", false, "U+2066 LEFT-TO-RIGHT ISOLATE (a bidi control)", 0},
		{"x\ufdd0", false, "U+FDD0 (a noncharacter)", 1},
		{"xy\ufeff", false, "U+FEFF ZERO WIDTH NO-BREAK SPACE (an invisible character)", 2},
		{"ok\xffno", false, "a byte that is not UTF-8", 2},
		{"", false, "empty", -1},
		{"\u00a0pad", false, "padded with white space", -1},
		{"e\u0301", false, "not in Unicode normal form C (NFC)", -1},
		{"redacted:module:1", false, "shaped like a token", -1},
		{"affected", true, "equal to a vocabulary item", -1},
	} {
		f, ok := describeValue([]byte(tt.val), tt.vocab)
		if !ok || f.what != tt.what || f.offset != tt.offset {
			t.Errorf("describeValue(%q) = %+v %v, want %q at %d", tt.val, f, ok, tt.what, tt.offset)
		}
	}
	if f, ok := describeValue([]byte("fine"), false); ok {
		t.Errorf("a value the grammar takes described as %+v", f)
	}
}
