package verifier

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// A projection is mostly its part texts. The strict parser copies every
// decoded string into memory of its own, which in a fresh process (the
// plugin) costs one page fault per 4 KiB, each expensive on a virtual
// machine. parseSource therefore takes the long string values out before
// the strict parse ("shadow" document), decodes them itself into a buffer
// that newBuffer maps at once, and puts them back into the tree. The strict
// parser still reads every byte of the structure; the long strings are
// checked here against the same rules it applies.

// shadowMin is the length from which a string value's body is decoded
// apart from the strict parse.
const shadowMin = 1024

// parseSource strictly decodes a Projection@1 document, as parseProjection
// does, and returns the same projection, tree and error. free releases the
// memory the texts may live in; nothing may use them after.
func parseSource(data []byte) (p *projection, tree *canon.Value, free func(), err error) {
	if p, tree, free, ok := parseShadow(data); ok {
		return p, tree, free, nil
	}
	// Anything the shadow parse does not take, the strict parser decides,
	// naming the first thing wrong at its place in data.
	p, tree, err = parseProjection(data)
	return p, tree, func() {}, err
}

// blank is a string value taken out of the shadow document: its opening
// quote's offset in the shadow and its decoded bytes.
type blank struct {
	off int
	str []byte
}

// parseShadow is the shadow parse. It reports false, having freed what it
// took, when data is not a valid Projection@1 document that it can take
// apart; then the strict parse of data decides.
//
// Why the result is the strict parse's: the shadow is data with the bodies
// of some string values emptied, so both documents have the same tokens. An
// emptied body is one that the strict parser accepts (checked below,
// possibly more strictly), decoding to the bytes decodeBody returns. So
// data parses if and only if the shadow does, to the same tree but for
// those strings, which are put back, and for the offsets, which only
// errors carry: on any error the strict parse of data is taken instead.
func parseShadow(data []byte) (*projection, *canon.Value, func(), bool) {
	if len(data) < shadowMin || len(data) > canon.DefaultMaxBytes {
		return nil, nil, nil, false
	}
	buf, free := newBuffer(len(data))
	shadow, blanks, ok := takeApart(data, buf)
	if !ok || len(blanks) == 0 {
		free()
		return nil, nil, nil, false
	}
	tree, err := canon.Parse(shadow, canon.Options{})
	if err != nil {
		free()
		return nil, nil, nil, false
	}
	if rest := putBack(tree, blanks); len(rest) != 0 {
		free()
		return nil, nil, nil, false
	}
	var p projection
	if err := tree.DecodeShared(&p); err != nil || p.Schema != "Projection@1" || p.Profile != receipts.ProfileName {
		free()
		return nil, nil, nil, false
	}
	return &p, tree, free, true
}

// takeApart copies data into a shadow document, emptying the body of every
// string value at least shadowMin bytes long after decoding it into buf
// (which holds len(data) bytes). It reports false when a string cannot be
// read to its end or a body to be emptied is not one the strict parser
// accepts.
func takeApart(data, buf []byte) ([]byte, []blank, bool) {
	shadow := make([]byte, 0, 4096)
	var blanks []blank
	dec := buf[:0]
	i := 0
	for {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return append(shadow, data[i:]...), blanks, true
		}
		q += i
		// Every string is decoded, in one pass that finds its end; a key
		// or a short string is dropped again. A string the strict parser
		// refuses makes the strict parse decide.
		start := len(dec)
		var end int
		var ok bool
		dec, end, ok = decodeUntilQuote(dec, data, q+1)
		if !ok || end == len(data) {
			return nil, nil, false
		}
		end++ // past the closing quote
		// A string followed by ':' is a key; it stays.
		k := end
		for k < len(data) && (data[k] == ' ' || data[k] == '\t' || data[k] == '\n' || data[k] == '\r') {
			k++
		}
		if end-q-2 < shadowMin || (k < len(data) && data[k] == ':') {
			dec = dec[:start]
			shadow = append(shadow, data[i:end]...)
			i = end
			continue
		}
		shadow = append(shadow, data[i:q]...)
		blanks = append(blanks, blank{off: len(shadow), str: dec[start:len(dec):len(dec)]})
		shadow = append(shadow, '"', '"')
		i = end
	}
}

// decodeBody appends the decoded bytes of the JSON string body b (between
// the quotes) to dst, applying the strict parser's rules (decodeUntilQuote).
// It reports false for anything else.
func decodeBody(dst, b []byte) ([]byte, bool) {
	dst, end, ok := decodeUntilQuote(dst, b, 0)
	return dst, ok && end == len(b)
}

// decodeUntilQuote appends the decoded bytes of the string body that starts
// at data[i] to dst, up to its first unescaped '"' or the end of data, and
// returns the offset where it stopped. It applies the strict parser's
// rules: valid UTF-8, no raw byte below 0x20, escapes \" \\ \/ \b \f \n \r
// \t and \uXXXX, where a surrogate must be a high one followed by an escaped
// low one; it reports false for anything else.
func decodeUntilQuote(dst, data []byte, i int) ([]byte, int, bool) {
	for {
		k := i + plainPrefix(data[i:])
		if !utf8.Valid(data[i:k]) {
			return dst, k, false
		}
		dst = append(dst, data[i:k]...)
		if k == len(data) || data[k] == '"' {
			return dst, k, true
		}
		b := data[k:]
		if b[0] != '\\' || len(b) < 2 {
			return dst, k, false // a raw control byte or a lone backslash
		}
		var c byte
		switch b[1] {
		case '"', '\\', '/':
			c = b[1]
		case 'b':
			c = '\b'
		case 'f':
			c = '\f'
		case 'n':
			c = '\n'
		case 'r':
			c = '\r'
		case 't':
			c = '\t'
		case 'u':
			r, ok := hex4(b[2:])
			if !ok {
				return dst, k, false
			}
			n := 6
			switch {
			case utf16.IsSurrogate(r) && r < 0xdc00:
				if len(b) < 12 || b[6] != '\\' || b[7] != 'u' {
					return dst, k, false
				}
				lo, ok := hex4(b[8:])
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return dst, k, false
				}
				r, n = utf16.DecodeRune(r, lo), 12
			case utf16.IsSurrogate(r):
				return dst, k, false // a low surrogate alone
			}
			dst = utf8.AppendRune(dst, r)
			i = k + n
			continue
		default:
			return dst, k, false
		}
		dst = append(dst, c)
		i = k + 2
	}
}

// hex4 reads four hexadecimal digits.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// putBack walks the tree in document order and gives each emptied string
// value its decoded bytes. It returns the blanks it did not find.
func putBack(v *canon.Value, blanks []blank) []blank {
	if len(blanks) == 0 {
		return blanks
	}
	switch v.Kind {
	case canon.String:
		if v.Off == blanks[0].off && len(v.Str) == 0 {
			v.Str = blanks[0].str
			return blanks[1:]
		}
	case canon.Array:
		for i := range v.Elems {
			if blanks = putBack(&v.Elems[i], blanks); len(blanks) == 0 {
				break
			}
		}
	case canon.Object:
		for i := range v.Members {
			if blanks = putBack(&v.Members[i].Value, blanks); len(blanks) == 0 {
				break
			}
		}
	}
	return blanks
}
