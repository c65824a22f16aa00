package grammar

import (
	"bytes"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/privacycut/privacycut/receipts"
)

// This file freezes the record parser as it was before the hot path was
// tuned, written plainly: Go maps instead of strset, byte loops instead of
// word-at-a-time scans, and no filters or fast paths. The differential tests
// (TestParseMatchesReference, FuzzParseMatchesReference) require the real
// parser to give exactly its stats, spans and refusals.

// refVocab holds a Vocabulary's items in maps, numbered as the Vocabulary
// numbers them.
type refVocab struct {
	diagnostics, modules, deps, statuses, citations, questions, all map[string]int32
	depMod                                                          []int32
}

func newRefVocab(v *Vocabulary) *refVocab {
	m := func(s *strset) map[string]int32 {
		out := make(map[string]int32, s.len())
		for i := 0; i < s.len(); i++ {
			out[string(s.keyAt(int32(i)))] = int32(i)
		}
		return out
	}
	rv := &refVocab{diagnostics: m(v.diagnostics), modules: m(v.modules), deps: m(v.deps),
		statuses: m(v.statuses), citations: m(v.citations), questions: m(v.questions), all: map[string]int32{}}
	for _, t := range []map[string]int32{rv.diagnostics, rv.modules, rv.statuses, rv.citations, rv.questions} {
		for k := range t {
			rv.all[k] = 0
		}
	}
	for k := range rv.deps {
		_, ver, _ := bytes.Cut([]byte(k), []byte("@"))
		rv.all[string(ver)] = 0
	}
	rv.depMod = make([]int32, len(rv.deps))
	for k, i := range rv.deps {
		mod, _, _ := bytes.Cut([]byte(k), []byte("@"))
		mi, ok := rv.modules[string(mod)]
		if !ok {
			mi = -1
		}
		rv.depMod[i] = mi
	}
	return rv
}

func refLookup(m map[string]int32, k []byte) int32 {
	if i, ok := m[string(k)]; ok {
		return i
	}
	return -1
}

// refParse is Parse (emit set, so every span) as the reference has it.
func refParse(p *Parser, rv *refVocab, text []byte, mode spanMode) (Stats, []Span, []receipts.Refusal) {
	if len(text) > p.lim.MaxText {
		return Stats{}, nil, []receipts.Refusal{{Code: receipts.LimitExceeded, Line: 1, Column: 1, Length: len(text)}}
	}
	var st Stats
	var spans []Span
	var refs []receipts.Refusal
	r := refParser{p: p, v: rv, text: text, mode: mode}
	line := 0
	for pos := 0; pos < len(text); {
		line++
		nl := bytes.IndexByte(text[pos:], '\n')
		var bad *receipts.Refusal
		next := pos + nl + 1
		switch {
		case nl < 0 && len(text)-pos > p.lim.MaxRecord, nl > p.lim.MaxRecord: // LF not counted (seventh session)
			n := nl + 1
			if nl < 0 {
				n = len(text) - pos
			}
			bad = &receipts.Refusal{Code: receipts.LimitExceeded, Offset: pos, Length: n}
		case nl < 0:
			r.start, r.rec = pos, text[pos:]
			if bad = r.record(); bad == nil {
				bad = &receipts.Refusal{Code: receipts.MalformedRecord, Offset: len(text) - 1, Length: 1}
			}
		default:
			r.start, r.rec = pos, text[pos:pos+nl]
			bad = r.record()
		}
		if nl < 0 {
			next = len(text)
		}
		if bad != nil {
			bad.Line = line
			bad.Column = bad.Offset - pos + 1
			refs = append(refs, *bad)
			if len(refs) >= p.lim.MaxRefusals {
				return st, spans, refs
			}
		} else {
			st.Add(r.st)
			if r.mode == spansAll {
				r.spans = append(r.spans, Span{Off: pos + nl, Len: 1, Kind: SpanLiteral, Literal: LiteralLF})
			}
			spans = append(spans, r.spans...)
		}
		pos = next
	}
	return st, spans, refs
}

type refParser struct {
	p     *Parser
	v     *refVocab
	text  []byte
	start int
	rec   []byte
	mode  spanMode
	spans []Span
	st    Stats
}

func (r *refParser) refuse(code receipts.Code, off, n int) *receipts.Refusal {
	return &receipts.Refusal{Code: code, Offset: r.start + off, Length: n}
}

func (r *refParser) lit(l Literal, off, n int, c Category) {
	if r.mode == spansAll {
		r.spans = append(r.spans, Span{Off: r.start + off, Len: n, Kind: SpanLiteral, Literal: l, Category: c})
	}
}

func (r *refParser) pub(c Class, item int32, off, n int) {
	r.st.PublicItems++
	if r.mode == spansAll {
		r.spans = append(r.spans, Span{Off: r.start + off, Len: n, Kind: SpanPublic, Class: c, Item: item})
	}
}

func (r *refParser) field(off int) int {
	if i := bytes.IndexByte(r.rec[off:], ' '); i >= 0 {
		return off + i
	}
	return len(r.rec)
}

func (r *refParser) miss(code receipts.Code, off, end int) *receipts.Refusal {
	if end == off {
		if off == len(r.rec) && off > 0 {
			return r.refuse(receipts.UncoveredText, off-1, 1)
		}
		return r.refuse(receipts.UncoveredText, off, 1)
	}
	f := r.rec[off:end]
	for i := 0; i < len(f); {
		c := f[i]
		if c < 0x80 {
			if c < 0x20 || c == 0x7f {
				return r.refuse(receipts.UncoveredText, off+i, 1)
			}
			i++
			continue
		}
		ru, size := utf8.DecodeRune(f[i:])
		if ru == utf8.RuneError && size == 1 {
			return r.refuse(receipts.InvalidUTF8, off+i, 1)
		}
		i += size
	}
	return r.refuse(code, off, end-off)
}

func (r *refParser) record() *receipts.Refusal {
	r.spans, r.st = r.spans[:0], Stats{}
	rec := r.rec
	switch {
	case bytes.HasPrefix(rec, []byte("finding ")):
		r.lit(LiteralFinding, 0, len("finding "), 0)
		return r.finding(len("finding "))
	case bytes.HasPrefix(rec, []byte("ask ")):
		r.lit(LiteralAsk, 0, len("ask "), 0)
		return r.ask(len("ask "))
	}
	if string(rec) == "finding" || string(rec) == "ask" { // seventh session: a missing field
		return r.refuse(receipts.MalformedRecord, 0, len(rec))
	}
	if !utf8.Valid(rec) {
		return r.miss(receipts.UncoveredText, 0, len(rec))
	}
	n := len(rec)
	if n == 0 {
		n = 1
	}
	return r.refuse(receipts.UncoveredText, 0, n)
}

func (r *refParser) finding(off int) *receipts.Refusal {
	v, rec := r.v, r.rec
	end := r.field(off)
	idx := refLookup(v.diagnostics, rec[off:end])
	if idx < 0 {
		return r.miss(receipts.UnknownDiagnostic, off, end)
	}
	r.pub(ClassDiagnostic, idx, off, end-off)
	if end == len(rec) {
		return r.refuse(receipts.MalformedRecord, off, end-off)
	}
	r.lit(LiteralSP, end, 1, 0)
	off = end + 1

	end = r.field(off)
	dep := rec[off:end]
	di := refLookup(v.deps, dep)
	at := bytes.IndexByte(dep, '@')
	if di < 0 {
		if at < 0 {
			if bad := r.miss(receipts.MalformedRecord, off, end); bad.Code != receipts.MalformedRecord {
				return bad
			}
			return r.refuse(receipts.MalformedRecord, off, end-off)
		}
		if refLookup(v.modules, dep[:at]) < 0 {
			return r.miss(receipts.UnknownModule, off, off+at)
		}
		return r.miss(receipts.UnknownVersion, off+at+1, end)
	}
	module := dep[:at]
	r.pub(ClassModule, v.depMod[di], off, at)
	r.lit(LiteralAt, off+at, 1, 0)
	r.pub(ClassVersion, di, off+at+1, end-off-at-1)
	if end == len(rec) {
		return r.refuse(receipts.MalformedRecord, off, end-off)
	}
	r.lit(LiteralSP, end, 1, 0)
	off = end + 1

	end = r.field(off)
	if idx = refLookup(v.statuses, rec[off:end]); idx < 0 {
		return r.miss(receipts.UnknownStatus, off, end)
	}
	r.pub(ClassStatus, idx, off, end-off)
	if end == len(rec) {
		return r.refuse(receipts.MalformedRecord, off, end-off)
	}
	sp := end
	off = end + 1

	if bytes.HasPrefix(rec[off:], []byte("fixed=")) {
		voff := off + len("fixed=")
		end = r.field(voff)
		key := string(module) + "@" + string(rec[voff:end])
		fi := refLookup(v.deps, []byte(key))
		if fi < 0 {
			if end == voff {
				return r.refuse(receipts.MalformedRecord, off, end-off)
			}
			return r.miss(receipts.UnknownVersion, voff, end)
		}
		r.lit(LiteralFixed, sp, voff-sp, 0)
		r.pub(ClassVersion, fi, voff, end-voff)
		if end == len(rec) {
			return r.refuse(receipts.MalformedRecord, off, end-off)
		}
		sp = end
		off = end + 1
	}
	r.lit(LiteralSP, sp, 1, 0)

	end = r.field(off)
	if idx = refLookup(v.citations, rec[off:end]); idx < 0 {
		return r.miss(receipts.UnknownCitation, off, end)
	}
	r.pub(ClassCitation, idx, off, end-off)
	r.st.Records++
	r.st.Findings++
	return r.owners(end)
}

func (r *refParser) ask(off int) *receipts.Refusal {
	end := r.field(off)
	idx := refLookup(r.v.questions, r.rec[off:end])
	if idx < 0 {
		return r.miss(receipts.UnknownQuestion, off, end)
	}
	r.pub(ClassQuestion, idx, off, end-off)
	r.st.Records++
	return r.owners(end)
}

func (r *refParser) owners(off int) *receipts.Refusal {
	rec := r.rec
	n := 0
	for off < len(rec) {
		q := off + 1
		if !bytes.HasPrefix(rec[q:], []byte("owner.")) {
			if q == len(rec) {
				return r.refuse(receipts.UncoveredText, off, 1)
			}
			if rec[q] == ' ' {
				return r.refuse(receipts.UncoveredText, q, 1)
			}
			return r.miss(receipts.UncoveredText, q, len(rec))
		}
		q += len("owner.")
		// The category runs to its "=": a name of any length that is no
		// category is UNKNOWN_CATEGORY, as a short one is.
		eq := refCategoryEnd(rec[q:])
		if eq == len(rec)-q || rec[q+eq] != '=' {
			return r.refuse(receipts.MalformedRecord, off+1, q+eq-off-1)
		}
		cat, ok := ParseCategory(rec[q : q+eq])
		if !ok {
			return r.miss(receipts.UnknownCategory, q, q+eq)
		}
		if !r.p.allowed.Has(cat) {
			return r.refuse(receipts.ProhibitedCategory, q, eq)
		}
		q += eq + 1
		if q >= len(rec) || rec[q] != '"' {
			return r.refuse(receipts.MalformedRecord, min(q, len(rec)-1), 1)
		}
		vstart := q + 1
		vend, escaped, nonASCII, bad := r.value(vstart)
		if bad != nil {
			return bad
		}
		n++
		if n > r.p.lim.MaxOwners {
			return r.refuse(receipts.LimitExceeded, off+1, vend+1-off-1)
		}
		if bad := r.ambiguous(vstart, vend, escaped, nonASCII); bad != nil {
			return bad
		}
		r.lit(LiteralOwner, off, vstart-off, cat)
		r.st.Owners[cat]++
		if r.mode != spansNone {
			r.spans = append(r.spans, Span{Off: r.start + vstart, Len: vend - vstart, Kind: SpanOwner, Category: cat})
		}
		r.lit(LiteralQuote, vend, 1, 0)
		off = vend + 1
		if off < len(rec) && rec[off] != ' ' {
			return r.miss(receipts.UncoveredText, off, len(rec))
		}
	}
	return nil
}

func (r *refParser) value(off int) (end int, escaped, nonASCII bool, bad *receipts.Refusal) {
	rec := r.rec
	for i := off; ; {
		if i >= len(rec) {
			return 0, false, false, r.refuse(receipts.MalformedRecord, off-1, len(rec)-off+1)
		}
		c := rec[i]
		switch {
		case c == '"':
			return i, escaped, nonASCII, nil
		case c == '\\':
			if i+1 < len(rec) && (rec[i+1] == '"' || rec[i+1] == '\\') {
				escaped = true
				i += 2
				continue
			}
			return 0, false, false, r.refuse(receipts.MalformedRecord, i, min(2, len(rec)-i))
		case c < 0x80 && refForbidden(rune(c)):
			return 0, false, false, r.refuse(receipts.UncoveredText, i, 1)
		case c >= 0x80:
			ru, size := utf8.DecodeRune(rec[i:])
			if ru == utf8.RuneError && size == 1 {
				return 0, false, false, r.refuse(receipts.InvalidUTF8, i, 1)
			}
			if refForbidden(ru) {
				return 0, false, false, r.refuse(receipts.UncoveredText, i, size)
			}
			nonASCII = true
			i += size
		default:
			i++
		}
	}
}

func (r *refParser) ambiguous(start, end int, escaped, nonASCII bool) *receipts.Refusal {
	val := r.rec[start:end]
	if len(val) == 0 {
		return r.refuse(receipts.AmbiguousSpan, start-1, 2)
	}
	first, _ := utf8.DecodeRune(val)
	last, _ := utf8.DecodeLastRune(val)
	if isSpaceRune(first) || isSpaceRune(last) {
		return r.refuse(receipts.AmbiguousSpan, start, end-start)
	}
	if nonASCII {
		dec := val
		if escaped {
			dec = bytes.ReplaceAll(bytes.ReplaceAll(val, []byte(`\\`), []byte{0}), []byte(`\"`), []byte(`"`))
			dec = bytes.ReplaceAll(dec, []byte{0}, []byte(`\`))
		}
		if !norm.NFC.IsNormal(dec) {
			return r.refuse(receipts.AmbiguousSpan, start, end-start)
		}
	}
	if !escaped {
		if _, ok := r.v.all[string(val)]; ok {
			return r.refuse(receipts.AmbiguousSpan, start, end-start)
		}
	}
	// Seventh session: a token-shaped value in a projection (not a candidate).
	if s := string(val); !r.p.candidate && (strings.HasPrefix(s, "pcv:") || strings.HasPrefix(s, "redacted:")) {
		return r.refuse(receipts.AmbiguousSpan, start, end-start)
	}
	return nil
}

// refCategoryEnd: where an owner's category name ends (seventh session: it
// was searched for in 16 bytes).
func refCategoryEnd(b []byte) int {
	i := 0
	for i < len(b) && b[i] != '=' && b[i] != ' ' && b[i] != '"' && b[i] != '@' {
		i++
	}
	return i
}

// refForbidden is the reference's own reading of docs/FORMATS.md#grammar's char rule, kept
// apart from the parser's forbiddenRune so that the differential tests check
// that code instead of sharing it: r may not appear in an owner value when it
// is in refForbiddenRanges. DecodeRune never yields a surrogate or a rune
// above U+10FFFF (it reports their encodings as RuneError of size 1, which
// value refuses as INVALID_UTF8), so the table holds scalar values only.
func refForbidden(r rune) bool {
	for _, rg := range refForbiddenRanges {
		if rg[0] <= r && r <= rg[1] {
			return true
		}
	}
	return false
}

// refForbiddenRanges lists, inclusive, the characters docs/FORMATS.md#grammar excludes from
// char, as docs/FORMATS.md#grammar-chars lists them.
var refForbiddenRanges = func() [][2]rune {
	t := [][2]rune{
		{0x00, 0x1f},     // C0 controls
		{'"', '"'},       // ends the value
		{'\\', '\\'},     // starts an escape
		{0x7f, 0x7f},     // DEL
		{0x80, 0x9f},     // C1 controls
		{0x061c, 0x061c}, // bidi: ARABIC LETTER MARK
		{0x200e, 0x200f}, // bidi: LRM, RLM
		{0x202a, 0x202e}, // bidi: LRE, RLE, PDF, LRO, RLO
		{0x2066, 0x2069}, // bidi: LRI, RLI, FSI, PDI
		{0x00ad, 0x00ad}, // SOFT HYPHEN
		{0x180e, 0x180e}, // MONGOLIAN VOWEL SEPARATOR
		{0x200b, 0x200d}, // ZWSP, ZWNJ, ZWJ
		{0x2060, 0x2064}, // WORD JOINER .. INVISIBLE PLUS
		{0xfeff, 0xfeff}, // ZERO WIDTH NO-BREAK SPACE (BOM)
		{0xfdd0, 0xfdef}, // noncharacters in Arabic Presentation Forms-A
	}
	// The noncharacters: the last two code points of each of the 17 planes.
	for plane := rune(0); plane <= 0x10; plane++ {
		t = append(t, [2]rune{plane*0x10000 + 0xfffe, plane*0x10000 + 0xffff})
	}
	return t
}()
