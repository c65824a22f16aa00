package verifier

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// canonCompare compares a JSON document, given piece by piece in RFC 8785
// canonical form, with the bytes want, without building it: it keeps only
// the number of bytes written and the first offset that differs. It is what
// streaming the canonical form into a comparing writer gives, for a
// document that is written while the walk reads the texts.
type canonCompare struct {
	want []byte
	off  int // bytes written while no difference was found
	diff int // first differing offset, or -1
}

func newCanonCompare(want []byte) canonCompare { return canonCompare{want: want, diff: -1} }

// raw compares b, written as is.
func (c *canonCompare) raw(b []byte) {
	if c.diff >= 0 {
		return
	}
	rest := c.want[c.off:]
	if len(b) <= len(rest) && bytes.Equal(b, rest[:len(b)]) {
		c.off += len(b)
		return
	}
	n := min(len(b), len(rest))
	c.diff = c.off + firstDiff(b[:n], rest[:n])
}

// str compares the body of a JSON string holding s (valid UTF-8), escaped
// as RFC 8785 escapes it: \" \\ \b \f \n \r \t, the other controls below
// U+0020 as \u00xx with lower-case hex digits, everything else as it is.
func (c *canonCompare) str(s []byte) {
	for c.diff < 0 {
		k := plainPrefix(s)
		c.raw(s[:k])
		if k == len(s) {
			return
		}
		var esc [6]byte
		c.raw(escapeByte(&esc, s[k]))
		s = s[k+1:]
	}
}

// result returns the first offset at which the document differs from want,
// or -1 when they are equal.
func (c *canonCompare) result() int {
	if c.diff < 0 && c.off != len(c.want) {
		return c.off // off < len(want): the document is a proper prefix
	}
	return c.diff
}

const hexLower = "0123456789abcdef"

// escapeByte returns the canonical escape of c, a byte below U+0020 or '"'
// or '\\'.
func escapeByte(buf *[6]byte, c byte) []byte {
	buf[0] = '\\'
	switch c {
	case '"', '\\':
		buf[1] = c
	case '\b':
		buf[1] = 'b'
	case '\f':
		buf[1] = 'f'
	case '\n':
		buf[1] = 'n'
	case '\r':
		buf[1] = 'r'
	case '\t':
		buf[1] = 't'
	default:
		buf[1], buf[2], buf[3], buf[4], buf[5] = 'u', '0', '0', hexLower[c>>4], hexLower[c&0xf]
		return buf[:6]
	}
	return buf[:2]
}

// Word-at-a-time byte classes. For a little-endian word w, each test below
// sets bit 7 of a byte where the byte is in the class; the lowest set bit
// is exact (a borrow can only raise false positives above a true one).
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// needsEscape flags '"', '\\' and bytes below 0x20.
func needsEscape(w uint64) uint64 {
	return (((w ^ ones*'"') - ones) | ((w ^ ones*'\\') - ones) | (w - ones*0x20)) &^ w & highs
}

// plainPrefix returns the length of the longest prefix of s that JSON
// writes without escapes.
func plainPrefix(s []byte) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if m := needsEscape(binary.LittleEndian.Uint64(s[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			break
		}
	}
	return i
}

// expectedExport compares, while the walk reads the source, the export
// re-derived from it with the exported document: the canonical
// {"parts":[{"kind":…,"text":…}…],"profile":"closed-diagnostic@1"} of the
// source's part kinds and the expected texts. tok is the export with each
// owner value replaced by the token found at its slot (owners-replaced);
// irr, in irreversible mode, the export with each value replaced by its
// redacted:<category>:<n> token (token-consistency). While both documents
// are equal so far, only tok is compared and irr follows it.
type expectedExport struct {
	tok, irr canonCompare
	withIrr  bool
	synced   bool // irr equals tok so far: irr's state is tok's
	parts    int
}

func newExpectedExport(export []byte, withIrr bool) *expectedExport {
	return &expectedExport{tok: newCanonCompare(export), irr: newCanonCompare(export), withIrr: withIrr, synced: true}
}

// raw writes JSON bytes to both documents.
func (x *expectedExport) raw(b []byte) {
	x.tok.raw(b)
	if !x.synced {
		x.irr.raw(b)
	}
}

// text writes text bytes common to both documents.
func (x *expectedExport) text(b []byte) {
	x.tok.str(b)
	if !x.synced {
		x.irr.str(b)
	}
}

// slot writes the bytes of one owner slot: t to tok, i to irr.
func (x *expectedExport) slot(t, i []byte) {
	if x.synced && (!x.withIrr || bytes.Equal(t, i)) {
		x.tok.str(t)
		return
	}
	if x.synced {
		x.irr, x.synced = x.tok, false
	}
	x.tok.str(t)
	x.irr.str(i)
}

func (x *expectedExport) begin() { x.raw([]byte(`{"parts":[`)) }

// beginPart opens the next part, of the given kind, up to its text.
func (x *expectedExport) beginPart(kind string) {
	if x.parts > 0 {
		x.raw([]byte(`,`))
	}
	x.parts++
	x.raw([]byte(`{"kind":"`))
	x.text([]byte(kind))
	x.raw([]byte(`","text":"`))
}

func (x *expectedExport) endPart() { x.raw([]byte(`"}`)) }

func (x *expectedExport) end() { x.raw([]byte(`],"profile":"closed-diagnostic@1"}`)) }

// results returns the first differing offset of each document, or -1.
func (x *expectedExport) results() (tok, irr int) {
	if x.synced {
		x.irr = x.tok
	}
	return x.tok.result(), x.irr.result()
}
