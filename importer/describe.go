package importer

import (
	"bytes"
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/privacycut/privacycut/grammar"
)

// A valueFault is why the grammar refuses an owner value, in words that
// name a character class and a position, never the value: "U+0009 TAB (a
// control character)" at a byte offset, or "padded with white space".
type valueFault struct {
	what   string // fixed text, with at most a code point and its name
	offset int    // byte offset of the character in the value; -1 for the value as a whole
}

// describeValue finds why the grammar refuses val: the first character
// that may never appear in a value, else a property of the whole value.
// inVocabulary reports a value equal to a vocabulary item. ok is false when
// none of the rules it knows applies.
func describeValue(val []byte, inVocabulary bool) (f valueFault, ok bool) {
	for i := 0; i < len(val); {
		r, size := utf8.DecodeRune(val[i:])
		if r == utf8.RuneError && size == 1 {
			return valueFault{what: "a byte that is not UTF-8", offset: i}, true
		}
		if grammar.ForbiddenRune(r) {
			return valueFault{what: runeName(r), offset: i}, true
		}
		i += size
	}
	switch {
	case len(val) == 0:
		return valueFault{what: "empty", offset: -1}, true
	case startsOrEndsWithSpace(val):
		return valueFault{what: "padded with white space", offset: -1}, true
	case !norm.NFC.IsNormal(val):
		return valueFault{what: "not in Unicode normal form C (NFC)", offset: -1}, true
	case bytes.HasPrefix(val, []byte("redacted:")) || bytes.HasPrefix(val, []byte("pcv:")):
		return valueFault{what: "shaped like a token", offset: -1}, true
	case inVocabulary:
		return valueFault{what: "equal to a vocabulary item", offset: -1}, true
	}
	return valueFault{}, false
}

func startsOrEndsWithSpace(val []byte) bool {
	first, _ := utf8.DecodeRune(val)
	last, _ := utf8.DecodeLastRune(val)
	return unicode.IsSpace(first) || unicode.IsSpace(last)
}

// runeNames are the short names of the forbidden characters seen most.
var runeNames = map[rune]string{
	0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x09: "TAB", 0x0a: "LF", 0x0b: "VT", 0x0c: "FF", 0x0d: "CR", 0x1b: "ESC", 0x7f: "DEL",
	0x00ad: "SOFT HYPHEN", 0x061c: "ARABIC LETTER MARK", 0x180e: "MONGOLIAN VOWEL SEPARATOR",
	0x200b: "ZERO WIDTH SPACE", 0x200c: "ZERO WIDTH NON-JOINER", 0x200d: "ZERO WIDTH JOINER",
	0x200e: "LEFT-TO-RIGHT MARK", 0x200f: "RIGHT-TO-LEFT MARK",
	0x202a: "LEFT-TO-RIGHT EMBEDDING", 0x202b: "RIGHT-TO-LEFT EMBEDDING", 0x202c: "POP DIRECTIONAL FORMATTING",
	0x202d: "LEFT-TO-RIGHT OVERRIDE", 0x202e: "RIGHT-TO-LEFT OVERRIDE",
	0x2060: "WORD JOINER", 0x2066: "LEFT-TO-RIGHT ISOLATE", 0x2067: "RIGHT-TO-LEFT ISOLATE",
	0x2068: "FIRST STRONG ISOLATE", 0x2069: "POP DIRECTIONAL ISOLATE", 0xfeff: "ZERO WIDTH NO-BREAK SPACE",
}

// runeName is "U+0009 TAB (a control character)": the code point, its
// short name when it has one here, and its class.
func runeName(r rune) string {
	s := fmt.Sprintf("U+%04X", r)
	if n, ok := runeNames[r]; ok {
		s += " " + n
	}
	var class string
	switch {
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		class = "a control character"
	case r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
		class = "a bidi control"
	case r >= 0xfdd0 && r <= 0xfdef || r&0xfffe == 0xfffe:
		class = "a noncharacter"
	default:
		class = "an invisible character"
	}
	return s + " (" + class + ")"
}
