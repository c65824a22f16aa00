package verifier

import (
	"bytes"
	"sort"
)

// isBoundary reports whether c is a byte that every span boundary of a
// recognized record touches: SP and LF between productions, the "@" of a
// dependency, the "=" of "fixed=" and of an owner, and the owner quotes.
func isBoundary(c byte) bool {
	return c == ' ' || c == '@' || c == '=' || c == '"' || c == '\n'
}

// checkResidual evaluates no-residual: no owner value, as written inside
// quotes in the source, occurs in an export text except wholly inside one
// public item, one literal or one well-formed token.
//
// A value that straddles two spans of a recognized record contains a
// boundary byte, so values without one can only occur wholly inside a span:
// they are searched only in the regions that are not known text (slots
// without a well-formed token, unrecognized remainders, export parts with no
// source part). Values with a boundary byte are searched in every export text
// and each occurrence is checked against the spans of its record. Both
// searches are one Aho–Corasick pass each.
func (c *check) checkResidual(values map[string]struct{}, bad []region) {
	res := &c.out[cResidual]
	var straddling, plain [][]byte
	for v := range values {
		if bytes.ContainsFunc([]byte(v), func(r rune) bool { return r < 0x80 && isBoundary(byte(r)) }) {
			straddling = append(straddling, []byte(v))
		} else {
			plain = append(plain, []byte(v))
		}
	}
	found := 0
	first := ""
	report := func(p int, text []byte, s, e int) {
		found++
		if first == "" {
			line := 1 + bytes.Count(text[:s], []byte{'\n'})
			recStart := bytes.LastIndexByte(text[:s], '\n') + 1
			first = where(p, line, recStart, s, e-s)
		}
	}

	if len(straddling) > 0 {
		m := newMatcher(straddling)
		rec := newRecognizer(c.voc, true)
		nsrc := len(c.src.Parts)
		for p, part := range c.expParts {
			text := part.text
			cachedStart := -1
			var spans []span
			m.scan(text, 0, len(text), func(s, e int) bool {
				if p >= nsrc {
					report(p, text, s, e)
					return true
				}
				rs := bytes.LastIndexByte(text[:s], '\n') + 1
				if rs != cachedStart {
					spans, _, _ = rec.record(text, rs, spans[:0])
					cachedStart = rs
				}
				if !insideKnownSpan(text, spans, s, e) {
					report(p, text, s, e)
				}
				return true
			})
		}
	}
	if len(bad) > 0 && len(plain) > 0 {
		m := newMatcher(plain)
		for _, r := range bad {
			text := c.expParts[r.part].text
			m.scan(text, r.start, r.end, func(s, e int) bool {
				report(r.part, text, s, e)
				return true
			})
		}
	}
	if found > 0 {
		res.fail("%d owner value occurrence(s) outside public text and tokens; first at %s", found, first)
	}
	res.facts = "values=" + itoa(len(values)) + " searched_straddling=" + itoa(len(straddling)) + " unknown_regions=" + itoa(len(bad))
}

// insideKnownSpan reports whether [s, e) lies wholly inside one recognized
// span that is public text, a literal or a well-formed token.
func insideKnownSpan(text []byte, spans []span, s, e int) bool {
	k := sort.Search(len(spans), func(i int) bool { return spans[i].end > s })
	if k == len(spans) {
		return false
	}
	sp := spans[k]
	if sp.start > s || e > sp.end {
		return false
	}
	if sp.kind == spanValue {
		return tokenOfCategory(text[sp.start:sp.end], int(sp.cat))
	}
	return true
}
