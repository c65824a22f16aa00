package verifier

import (
	"unicode/utf8"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// decodeCanonicalExport reads an export that already is what
// export-canonical demands, without building a JSON tree and without
// writing its canonical form again. It accepts exactly:
//
//	{"parts":[{"kind":"K","text":"T"},…],"profile":"closed-diagnostic@1"}
//
// with zero or more parts and nothing before or after, where every K and T
// is a string body as RFC 8785 writes it: valid UTF-8 with no raw '"', '\\'
// or byte below 0x20, and only the escapes \" \\ \b \f \n \r \t, and \u00xx
// (lower-case hex) for the other bytes below 0x20. The texts are decoded
// into buf, which must hold len(data) bytes; they alias it.
//
// Whatever it accepts, canon.Parse accepts too (one strict JSON object,
// no duplicate keys, valid UTF-8, no raw controls, depth 3, at most
// canon.DefaultMaxBytes), decoding the same strings; the canonical form
// of that tree is data itself, and the shape is the export's: parseExport
// would return the same parts, -1 and no error. Anything else is left to
// parseExport, which finds and names what is wrong.
func decodeCanonicalExport(data, buf []byte) ([]exportPart, bool) {
	if len(data) > canon.DefaultMaxBytes || len(buf) < len(data) {
		return nil, false
	}
	// The literals between the strings; canonicalBody consumes each
	// string's closing quote.
	const (
		open  = `{"parts":[`
		kind  = `{"kind":"`
		text  = `,"text":"`
		close = `],"profile":"` + receipts.ProfileName + `"}`
	)
	i, ok := literal(data, 0, open)
	if !ok {
		return nil, false
	}
	parts := []exportPart{}
	dst := buf[:0]
	for len(parts) == 0 || (i < len(data) && data[i] == ',') {
		if len(parts) > 0 {
			i++ // the ',' between parts
		} else if i < len(data) && data[i] == ']' {
			break // no parts
		}
		if i, ok = literal(data, i, kind); !ok {
			return nil, false
		}
		k := len(dst)
		if dst, i, ok = canonicalBody(data, i, dst); !ok {
			return nil, false
		}
		kindStr := string(dst[k:])
		dst = dst[:k]
		if i, ok = literal(data, i, text); !ok {
			return nil, false
		}
		t := len(dst)
		if dst, i, ok = canonicalBody(data, i, dst); !ok {
			return nil, false
		}
		parts = append(parts, exportPart{kind: kindStr, text: dst[t:len(dst):len(dst)]})
		if i, ok = literal(data, i, "}"); !ok {
			return nil, false
		}
	}
	if i, ok = literal(data, i, close); !ok || i != len(data) {
		return nil, false
	}
	return parts, true
}

// literal checks that data[i:] starts with s and returns the offset after
// it.
func literal(data []byte, i int, s string) (int, bool) {
	if len(data)-i < len(s) || string(data[i:i+len(s)]) != s {
		return i, false
	}
	return i + len(s), true
}

// canonicalBody decodes the string body that starts at data[i] and ends at
// the next unescaped '"', appending it to dst. It returns the offset just
// past that quote, and false if the body is not written as RFC 8785 writes
// it (see decodeCanonicalExport).
func canonicalBody(data []byte, i int, dst []byte) ([]byte, int, bool) {
	for {
		k := i + plainPrefix(data[i:])
		if !utf8.Valid(data[i:k]) {
			return dst, k, false
		}
		dst = append(dst, data[i:k]...)
		if k >= len(data) {
			return dst, k, false
		}
		switch data[k] {
		case '"':
			return dst, k + 1, true
		case '\\':
			b, n := canonicalEscape(data[k:])
			if n == 0 {
				return dst, k, false
			}
			dst = append(dst, b)
			i = k + n
		default:
			return dst, k, false // a raw control byte
		}
	}
}

// canonicalEscape decodes the escape at the start of e (e[0] is '\\') when
// it is the one RFC 8785 writes for its byte, and returns the byte and the
// escape's length, or 0.
func canonicalEscape(e []byte) (byte, int) {
	if len(e) < 2 {
		return 0, 0
	}
	switch e[1] {
	case '"', '\\':
		return e[1], 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	case 'n':
		return '\n', 2
	case 'r':
		return '\r', 2
	case 't':
		return '\t', 2
	case 'u':
		if len(e) < 6 || e[2] != '0' || e[3] != '0' || (e[4] != '0' && e[4] != '1') {
			return 0, 0
		}
		lo := e[5]
		var v byte
		switch {
		case lo >= '0' && lo <= '9':
			v = lo - '0'
		case lo >= 'a' && lo <= 'f':
			v = lo - 'a' + 10
		default:
			return 0, 0
		}
		v += (e[4] - '0') << 4
		switch v {
		case '\b', '\f', '\n', '\r', '\t':
			return 0, 0 // written with their short escapes
		}
		return v, 6
	}
	return 0, 0
}
