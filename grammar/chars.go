package grammar

import "unicode"

// forbiddenRune reports whether r may never appear in an owner value or a
// vocabulary item: C0 and C1 controls, DEL, the bidi controls, the zero-width
// and invisible characters of docs/FORMATS.md#grammar, and the noncharacters.
func forbiddenRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true // bidi controls
	case r == 0x00ad, r == 0x180e, r >= 0x200b && r <= 0x200d, r >= 0x2060 && r <= 0x2064, r == 0xfeff:
		return true // zero-width and invisible
	case r >= 0xfdd0 && r <= 0xfdef, r&0xfffe == 0xfffe:
		return true // noncharacters
	case r >= 0xd800 && r <= 0xdfff, r > 0x10ffff:
		return true // not a scalar value
	}
	return false
}

// isSpaceRune reports Unicode white space (the White_Space property as Go's
// unicode.IsSpace has it).
func isSpaceRune(r rune) bool { return unicode.IsSpace(r) }

// asciiSpace is isSpaceRune for a byte below utf8.RuneSelf: TAB, LF, VT, FF,
// CR and SP.
func asciiSpace(c byte) bool { return c == ' ' || c-'\t' <= '\r'-'\t' }

// valueByte classifies an ASCII byte inside an owner value.
const (
	vbPlain     = iota // allowed as is
	vbQuote            // '"': ends the value
	vbBackslash        // '\': starts an escape
	vbForbidden        // control or DEL
	vbMulti            // first byte of a multi-byte sequence (or invalid)
)

var valueByte = func() (t [256]uint8) {
	for i := 0; i < 256; i++ {
		switch {
		case i < 0x20 || i == 0x7f:
			t[i] = vbForbidden
		case i == '"':
			t[i] = vbQuote
		case i == '\\':
			t[i] = vbBackslash
		case i >= 0x80:
			t[i] = vbMulti
		}
	}
	return
}()

// ForbiddenRune reports whether r may never appear in an owner value or a
// vocabulary item (the rule the parser applies), for callers that name the
// character that made a value refused.
func ForbiddenRune(r rune) bool { return forbiddenRune(r) }
