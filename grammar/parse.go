package grammar

import (
	"bytes"
	"encoding/binary"
	"iter"
	"math/bits"
	"runtime"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/privacycut/privacycut/receipts"
)

// The default limits of docs/FORMATS.md#grammar.
const (
	DefaultMaxRecord   = 64 << 10  // bytes in one record, its LF not counted
	DefaultMaxOwners   = 64        // owner slots in one record
	DefaultMaxText     = 256 << 20 // bytes in one part's text
	DefaultMaxRefusals = 100       // refusals reported by one parse before it stops
)

// Limits bound a parse. A limit is a refusal (LIMIT_EXCEEDED), never a
// truncation. Zero fields take the defaults.
type Limits struct {
	MaxRecord   int
	MaxOwners   int
	MaxText     int
	MaxRefusals int
}

func (l Limits) withDefaults() Limits {
	if l.MaxRecord <= 0 {
		l.MaxRecord = DefaultMaxRecord
	}
	if l.MaxOwners <= 0 {
		l.MaxOwners = DefaultMaxOwners
	}
	if l.MaxText <= 0 {
		l.MaxText = DefaultMaxText
	}
	if l.MaxRefusals <= 0 {
		l.MaxRefusals = DefaultMaxRefusals
	}
	return l
}

// Options configure a Parser.
type Options struct {
	Limits Limits
	// Allowed is the set of owner categories the plan allows; zero means
	// DefaultAllowed. Credential is never allowed.
	Allowed CategorySet
	// Candidate says the text is a cut's candidate, whose owner quotes hold
	// tokens. Otherwise (a projection to be cut, the default) an owner value
	// that begins as a token does (redacted:, pcv:) is AMBIGUOUS_SPAN: it
	// would read in the export as a token, and its own token may equal it.
	Candidate bool
}

// Parser parses closed-diagnostic@1 text against one vocabulary. A Parser is
// immutable and safe for concurrent use.
type Parser struct {
	v         *Vocabulary
	lim       Limits
	allowed   CategorySet
	candidate bool
}

// NewParser returns a parser for texts over v.
func NewParser(v *Vocabulary, opt Options) *Parser {
	a := opt.Allowed
	if a == 0 {
		a = DefaultAllowed
	}
	a &^= 1 << CategoryCredential
	return &Parser{v: v, lim: opt.Limits.withDefaults(), allowed: a, candidate: opt.Candidate}
}

// Vocabulary returns the parser's vocabulary.
func (p *Parser) Vocabulary() *Vocabulary { return p.v }

// Limits returns the parser's limits, defaults filled in.
func (p *Parser) Limits() Limits { return p.lim }

// Parse parses text, which must be the complete text of one part. It calls
// emit (when not nil) with the spans of each record, in order, once the whole
// record is accepted. The spans of all accepted records tile the accepted
// records exactly. If any refusal is returned the text is refused as a whole
// and the spans must be discarded. Refusals are positioned in text, with Part
// 0 and Kind empty for the caller to set; at most Limits.MaxRefusals are
// returned. Without emit, a large text is parsed on all CPUs.
func (p *Parser) Parse(text []byte, emit func(Span)) (Stats, []receipts.Refusal) {
	if len(text) > p.lim.MaxText {
		return Stats{}, []receipts.Refusal{{Code: receipts.LimitExceeded, Line: 1, Column: 1, Length: len(text)}}
	}
	// The scans read a word at a time and may read past a record, up to the
	// capacity of its slice: cap it at the text, so that nothing outside the
	// text (which another goroutine may be writing) is ever read.
	text = text[:len(text):len(text)]
	if emit == nil {
		st, _, refs := p.parallel(text, spansNone)
		return st, refs
	}
	var refs []receipts.Refusal
	r := recParser{p: p, v: p.v, text: text, mode: spansAll}
	st := r.run(0, len(text), 0, func(spans []Span) {
		for _, s := range spans {
			emit(s)
		}
	}, &refs)
	return st, refs
}

// Owners parses text like Parse and returns only its owner spans, in order.
// It uses all CPUs for a large text.
func (p *Parser) Owners(text []byte) (OwnerSpans, Stats, []receipts.Refusal) {
	if len(text) > p.lim.MaxText {
		return OwnerSpans{}, Stats{}, []receipts.Refusal{{Code: receipts.LimitExceeded, Line: 1, Column: 1, Length: len(text)}}
	}
	st, spans, refs := p.parallel(text[:len(text):len(text)], spansOwners)
	return spans, st, refs
}

// parallelMin is the smallest text split across CPUs.
const parallelMin = 1 << 20

// parallel parses text in chunks split at record boundaries, one goroutine
// per CPU, and merges stats, owner spans and refusals in text order. The
// owner spans stay in the chunks each goroutine filled.
func (p *Parser) parallel(text []byte, mode spanMode) (Stats, OwnerSpans, []receipts.Refusal) {
	n := runtime.GOMAXPROCS(0)
	if n > 8 {
		n = 8
	}
	if len(text) < parallelMin || n < 2 {
		n = 1
	}
	bounds := make([]int, 0, n+1)
	bounds = append(bounds, 0)
	for k := 1; k < n; k++ {
		at := max(len(text)*k/n, bounds[len(bounds)-1])
		if i := bytes.IndexByte(text[at:], '\n'); i >= 0 {
			at += i + 1
		} else {
			at = len(text)
		}
		bounds = append(bounds, at)
	}
	bounds = append(bounds, len(text))
	type result struct {
		st    Stats
		spans ownerChunks
		refs  []receipts.Refusal
		lines int
	}
	res := make([]result, len(bounds)-1)
	var wg sync.WaitGroup
	for k := range res {
		from, to := bounds[k], bounds[k+1]
		work := func() {
			r := recParser{p: p, v: p.v, text: text, mode: mode}
			out := &res[k]
			out.st = r.run(from, to, 0, out.spans.add, &out.refs)
			if k < len(res)-1 {
				out.lines = bytes.Count(text[from:to], []byte{'\n'})
			}
		}
		if len(res) == 1 {
			work()
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); work() }()
	}
	wg.Wait()
	var st Stats
	var spans OwnerSpans
	var refs []receipts.Refusal
	base := 0
	for k := range res {
		r := &res[k]
		st.Add(r.st)
		spans.take(&r.spans)
		for _, f := range r.refs {
			if len(refs) < p.lim.MaxRefusals {
				f.Line += base
				refs = append(refs, f)
			}
		}
		base += r.lines
	}
	return st, spans, refs
}

// ownerChunks collects owner spans in fixed-size chunks of ownerSpan: a
// part of a large text holds a million owner spans or more, which a
// doubling slice of Span would copy and reallocate about twenty times, and
// which would take 40 bytes each instead of 24.
type ownerChunks struct {
	full [][]ownerSpan
	cur  []ownerSpan
	n    int
}

// ownerSpan is an owner span without the fields an owner span leaves zero.
type ownerSpan struct {
	off, n int
	cat    Category
}

// spanChunk is the number of owner spans in a full chunk (192 KiB). The
// first chunk holds firstChunk and each next one twice the last, up to
// spanChunk: a report of a few hundred values does not pay for (and zero)
// a full chunk on each CPU.
const (
	spanChunk  = 8192
	firstChunk = 256
)

// add appends spans, which are owner spans (the only ones collected in
// owner mode).
func (c *ownerChunks) add(spans []Span) {
	for _, s := range spans {
		if len(c.cur) == cap(c.cur) {
			if c.cur != nil {
				c.full = append(c.full, c.cur)
			}
			c.cur = make([]ownerSpan, 0, min(spanChunk, max(firstChunk, 2*cap(c.cur))))
		}
		c.cur = append(c.cur, ownerSpan{off: s.Off, n: s.Len, cat: s.Category})
	}
	c.n += len(spans)
}

// OwnerSpans is the owner spans of one text, in text order, as
// Parser.Owners found them. A large text holds a million or more, so they
// are kept compact, in the chunks the parse filled, never merged into one
// slice.
type OwnerSpans struct {
	chunks [][]ownerSpan
	n      int
}

// take appends c's spans, leaving c empty.
func (o *OwnerSpans) take(c *ownerChunks) {
	o.chunks = append(o.chunks, c.full...)
	if len(c.cur) > 0 {
		o.chunks = append(o.chunks, c.cur)
	}
	o.n += c.n
	*c = ownerChunks{}
}

// Len returns the number of owner spans.
func (o *OwnerSpans) Len() int { return o.n }

// All yields the owner spans in text order.
func (o *OwnerSpans) All() iter.Seq[Span] {
	return func(yield func(Span) bool) {
		for _, ch := range o.chunks {
			for _, s := range ch {
				if !yield(Span{Off: s.off, Len: s.n, Kind: SpanOwner, Category: s.cat}) {
					return
				}
			}
		}
	}
}

// run parses the records of text[from:to] (to is the end of text or just
// after an LF), numbering lines from lineBase+1. Each record is first offered
// to the fast path; a record it declines is cut at its LF and parsed field by
// field. It calls sink with the spans of each accepted record and appends
// refusals to refs, stopping at the limit. It returns the stats of the
// accepted records.
func (r *recParser) run(from, to, lineBase int, sink func([]Span), refs *[]receipts.Refusal) Stats {
	r.st = Stats{}
	text, p := r.text, r.p
	line := lineBase
	for pos := from; pos < to; {
		line++
		// Most records are accepted by the fast path, which finds the LF as
		// it goes. It looks no further than a record may be long.
		window := to - pos
		if window > p.lim.MaxRecord {
			window = p.lim.MaxRecord + 1 // the longest record and its LF
		}
		r.start, r.rec = pos, text[pos:pos+window]
		saved := r.st
		r.spans = r.spans[:0]
		if nl := r.fast(); nl >= 0 {
			if r.mode == spansAll {
				r.spans = append(r.spans, Span{Off: pos + nl, Len: 1, Kind: SpanLiteral, Literal: LiteralLF})
			}
			if r.mode != spansNone && len(r.spans) > 0 {
				sink(r.spans)
			}
			pos += nl + 1
			continue
		}
		r.st = saved
		nl := bytes.IndexByte(text[pos:to], '\n')
		var bad *receipts.Refusal
		next := pos + nl + 1
		switch {
		case nl < 0 && to-pos > p.lim.MaxRecord, nl > p.lim.MaxRecord:
			n := nl + 1
			if nl < 0 {
				n = to - pos
			}
			bad = &receipts.Refusal{Code: receipts.LimitExceeded, Offset: pos, Length: n}
		case nl < 0:
			// The last record has no LF. Report what is wrong inside it first,
			// if anything, else the missing terminator.
			r.start, r.rec = pos, text[pos:to]
			saved := r.st
			if bad = r.record(); bad == nil {
				r.st = saved
				bad = &receipts.Refusal{Code: receipts.MalformedRecord, Offset: to - 1, Length: 1}
			}
		default:
			r.start, r.rec = pos, text[pos:pos+nl]
			bad = r.record()
		}
		if nl < 0 {
			next = to
		}
		if bad != nil {
			bad.Line = line
			bad.Column = bad.Offset - pos + 1
			*refs = append(*refs, *bad)
			if len(*refs) >= p.lim.MaxRefusals {
				return r.st
			}
		} else {
			if r.mode == spansAll {
				r.spans = append(r.spans, Span{Off: pos + nl, Len: 1, Kind: SpanLiteral, Literal: LiteralLF})
			}
			if r.mode != spansNone && len(r.spans) > 0 {
				sink(r.spans)
			}
		}
		pos = next
	}
	return r.st
}

// spanMode says which spans a recParser collects.
type spanMode uint8

const (
	spansNone spanMode = iota
	spansOwners
	spansAll
)

// recParser parses the records of one run: start and rec locate the current
// record (for the fast path, rec runs on past it to at most MaxRecord+1
// bytes from its start), spans holds its spans and st sums the stats of the
// accepted records.
type recParser struct {
	p       *Parser
	v       *Vocabulary
	text    []byte
	start   int    // offset of rec in text
	rec     []byte // the record without its LF
	mode    spanMode
	spans   []Span
	st      Stats
	scratch []byte
}

func (r *recParser) refuse(code receipts.Code, off, n int) *receipts.Refusal {
	return &receipts.Refusal{Code: code, Offset: r.start + off, Length: n}
}

func (r *recParser) lit(l Literal, off, n int, c Category) {
	if r.mode == spansAll {
		r.spans = append(r.spans, Span{Off: r.start + off, Len: n, Kind: SpanLiteral, Literal: l, Category: c})
	}
}

func (r *recParser) pub(c Class, item int32, off, n int) {
	r.st.PublicItems++
	if r.mode == spansAll {
		r.spans = append(r.spans, Span{Off: r.start + off, Len: n, Kind: SpanPublic, Class: c, Item: item})
	}
}

// field returns the end of the field starting at off: the next SP or the end
// of the record.
func (r *recParser) field(off int) int {
	if i := spaceIndex(r.rec[off:]); i >= 0 {
		return off + i
	}
	return len(r.rec)
}

// miss turns a failed lookup of rec[off:end] into a refusal: an empty field is
// a stray separator (UNCOVERED_TEXT), a field with a control byte or invalid
// UTF-8 is refused for that byte, anything else gets code.
func (r *recParser) miss(code receipts.Code, off, end int) *receipts.Refusal {
	if end == off {
		if off == len(r.rec) && off > 0 {
			return r.refuse(receipts.UncoveredText, off-1, 1) // trailing separator
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

// record parses r.rec field by field, adds its stats to r.st and its spans
// to r.spans (emptied first), and reports the first refusal, or nil. A
// refused record leaves r.st as it was. This is the parse that defines
// acceptance and refusals; the fast path only ever agrees with it.
func (r *recParser) record() *receipts.Refusal {
	saved := r.st
	r.spans = r.spans[:0]
	if bad := r.fields(); bad != nil {
		r.st = saved
		return bad
	}
	return nil
}

// fields parses r.rec field by field.
func (r *recParser) fields() *receipts.Refusal {
	rec := r.rec
	var off int
	switch {
	case bytes.HasPrefix(rec, []byte("finding ")):
		off = len("finding ")
		r.lit(LiteralFinding, 0, off, 0)
		return r.finding(off)
	case bytes.HasPrefix(rec, []byte("ask ")):
		off = len("ask ")
		r.lit(LiteralAsk, 0, off, 0)
		return r.ask(off)
	}
	// A keyword with nothing after it: a record whose fields are missing.
	if string(rec) == "finding" || string(rec) == "ask" {
		return r.refuse(receipts.MalformedRecord, 0, len(rec))
	}
	// Not a record: prose, a blank line or a broken keyword.
	if !utf8.Valid(rec) {
		return r.miss(receipts.UncoveredText, 0, len(rec))
	}
	n := len(rec)
	if n == 0 {
		n = 1 // the LF of a blank line
	}
	return r.refuse(receipts.UncoveredText, 0, n)
}

func (r *recParser) finding(off int) *receipts.Refusal {
	v, rec := r.v, r.rec
	// diagnostic
	end := r.field(off)
	idx := v.diagnostics.lookup(rec[off:end])
	if idx < 0 {
		return r.miss(receipts.UnknownDiagnostic, off, end)
	}
	r.pub(ClassDiagnostic, idx, off, end-off)
	if end == len(rec) {
		return r.refuse(receipts.MalformedRecord, off, end-off) // record ends early
	}
	r.lit(LiteralSP, end, 1, 0)
	off = end + 1

	// dependency = module "@" version
	end = r.field(off)
	dep := rec[off:end]
	di := v.deps.lookup(dep)
	if di < 0 {
		at := bytes.IndexByte(dep, '@')
		if at < 0 {
			if bad := r.miss(receipts.MalformedRecord, off, end); bad.Code != receipts.MalformedRecord {
				return bad
			}
			return r.refuse(receipts.MalformedRecord, off, end-off)
		}
		if v.modules.lookup(dep[:at]) < 0 {
			return r.miss(receipts.UnknownModule, off, off+at)
		}
		return r.miss(receipts.UnknownVersion, off+at+1, end)
	}
	dm := v.depMod[di]
	at := int(dm.at)
	module := dep[:at]
	r.pub(ClassModule, dm.module, off, at)
	r.lit(LiteralAt, off+at, 1, 0)
	r.pub(ClassVersion, di, off+at+1, end-off-at-1)
	if end == len(rec) {
		return r.refuse(receipts.MalformedRecord, off, end-off)
	}
	r.lit(LiteralSP, end, 1, 0)
	off = end + 1

	// status
	end = r.field(off)
	if idx = v.statuses.lookup(rec[off:end]); idx < 0 {
		return r.miss(receipts.UnknownStatus, off, end)
	}
	r.pub(ClassStatus, idx, off, end-off)
	if end == len(rec) {
		return r.refuse(receipts.MalformedRecord, off, end-off)
	}
	sp := end
	off = end + 1

	// [ "fixed=" version ]
	if bytes.HasPrefix(rec[off:], []byte("fixed=")) {
		voff := off + len("fixed=")
		end = r.field(voff)
		r.scratch = append(append(append(r.scratch[:0], module...), '@'), rec[voff:end]...)
		fi := v.deps.lookup(r.scratch)
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

	// citation
	end = r.field(off)
	if idx = v.citations.lookup(rec[off:end]); idx < 0 {
		return r.miss(receipts.UnknownCitation, off, end)
	}
	r.pub(ClassCitation, idx, off, end-off)
	r.st.Records++
	r.st.Findings++
	return r.owners(end)
}

func (r *recParser) ask(off int) *receipts.Refusal {
	end := r.field(off)
	idx := r.v.questions.lookup(r.rec[off:end])
	if idx < 0 {
		return r.miss(receipts.UnknownQuestion, off, end)
	}
	r.pub(ClassQuestion, idx, off, end-off)
	r.st.Records++
	return r.owners(end)
}

// owners parses *( SP owner ) from off to the end of the record.
func (r *recParser) owners(off int) *receipts.Refusal {
	rec := r.rec
	n := 0
	for off < len(rec) {
		// rec[off] is the SP that ended the previous production.
		q := off + 1
		if !bytes.HasPrefix(rec[q:], []byte("owner.")) {
			if q == len(rec) {
				return r.refuse(receipts.UncoveredText, off, 1) // trailing space
			}
			if rec[q] == ' ' {
				return r.refuse(receipts.UncoveredText, q, 1) // double space
			}
			return r.miss(receipts.UncoveredText, q, len(rec))
		}
		q += len("owner.")
		// The category runs to its "=": a name of any length that is no
		// category is UNKNOWN_CATEGORY, as a short one is.
		eq := categoryEnd(rec[q:])
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
		vend, escaped, composing, bad := r.value(vstart)
		if bad != nil {
			return bad
		}
		n++
		if n > r.p.lim.MaxOwners {
			return r.refuse(receipts.LimitExceeded, off+1, vend+1-off-1)
		}
		if bad := r.ambiguous(vstart, vend, escaped, composing); bad != nil {
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

// value scans an owner value starting at off and returns the offset of its
// closing quote. composing reports a rune at or above U+0300: a value
// without one is NFC (see nfcBelow).
func (r *recParser) value(off int) (end int, escaped, composing bool, bad *receipts.Refusal) {
	rec := r.rec
	i := off
	for {
		if i = plainRun(rec, i); i >= len(rec) {
			// unterminated: from the opening quote to the end of the record
			return 0, false, false, r.refuse(receipts.MalformedRecord, off-1, len(rec)-off+1)
		}
		switch valueByte[rec[i]] {
		case vbQuote:
			return i, escaped, composing, nil
		case vbBackslash:
			if i+1 < len(rec) && (rec[i+1] == '"' || rec[i+1] == '\\') {
				escaped = true
				i += 2
				continue
			}
			return 0, false, false, r.refuse(receipts.MalformedRecord, i, min(2, len(rec)-i))
		case vbForbidden:
			return 0, false, false, r.refuse(receipts.UncoveredText, i, 1)
		case vbMulti:
			ru, size := utf8.DecodeRune(rec[i:])
			if ru == utf8.RuneError && size == 1 {
				return 0, false, false, r.refuse(receipts.InvalidUTF8, i, 1)
			}
			if forbiddenRune(ru) {
				return 0, false, false, r.refuse(receipts.UncoveredText, i, size)
			}
			composing = composing || ru >= nfcBelow
			i += size
		}
	}
}

// nfcBelow bounds the runes that need no NFC check: every rune below U+0300
// has canonical combining class 0, is its own NFC form and composes with no
// neighbour, so a string of them is NFC (TestNFCBelow checks every pair).
// U+0300 is the first combining mark.
const nfcBelow = 0x300

// ambiguous applies the AMBIGUOUS_SPAN rule to the value rec[start:end];
// composing says whether the value holds a rune at or above nfcBelow.
func (r *recParser) ambiguous(start, end int, escaped, composing bool) *receipts.Refusal {
	val := r.rec[start:end]
	if len(val) == 0 {
		return r.refuse(receipts.AmbiguousSpan, start-1, 2)
	}
	if c0, cn := val[0], val[len(val)-1]; c0|cn < utf8.RuneSelf {
		if asciiSpace(c0) || asciiSpace(cn) {
			return r.refuse(receipts.AmbiguousSpan, start, end-start)
		}
	} else {
		first, _ := utf8.DecodeRune(val)
		last, _ := utf8.DecodeLastRune(val)
		if isSpaceRune(first) || isSpaceRune(last) {
			return r.refuse(receipts.AmbiguousSpan, start, end-start)
		}
	}
	if composing {
		dec := val
		if escaped {
			r.scratch = unescapeValue(r.scratch[:0], val)
			dec = r.scratch
		}
		if !norm.NFC.IsNormal(dec) {
			return r.refuse(receipts.AmbiguousSpan, start, end-start)
		}
	}
	if !escaped && r.v.all.has(val) {
		return r.refuse(receipts.AmbiguousSpan, start, end-start)
	}
	if !r.p.candidate && tokenPrefixed(val) {
		return r.refuse(receipts.AmbiguousSpan, start, end-start)
	}
	return nil
}

// tokenPrefixed reports whether a value begins as a token does (redacted:,
// pcv:).
func tokenPrefixed(val []byte) bool {
	return bytes.HasPrefix(val, []byte("redacted:")) || bytes.HasPrefix(val, []byte("pcv:"))
}

// unescapeValue appends the decoded form of an escaped owner value to dst.
// The value must already have been accepted by the parser.
func unescapeValue(dst, val []byte) []byte {
	for {
		i := bytes.IndexByte(val, '\\')
		if i < 0 {
			return append(dst, val...)
		}
		dst = append(dst, val[:i]...)
		if i+1 >= len(val) {
			return dst // a lone trailing backslash is never accepted
		}
		dst = append(dst, val[i+1])
		val = val[i+2:]
	}
}

// Unescape returns the decoded form of an owner value as it appears between
// its quotes in accepted text (the bytes of an owner span).
func Unescape(val []byte) []byte { return unescapeValue(nil, val) }

// Escape appends the written form of a decoded owner value to dst.
func Escape(dst, val []byte) []byte {
	for _, c := range val {
		if c == '"' || c == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, c)
	}
	return dst
}

// plainRun returns the index of the first byte of b at or after i that is
// not a plain value byte (printable ASCII other than '"' and '\\'), or
// len(b). It reads eight bytes at a time; the last word may be read from b's
// spare capacity, whose bytes never count.
func plainRun(b []byte, i int) int {
	for ; len(b)-i >= 8; i += 8 {
		if m := notPlain(binary.LittleEndian.Uint64(b[i : i+8])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	if i < len(b) && cap(b)-i >= 8 {
		return min(len(b), i+bits.TrailingZeros64(notPlain(binary.LittleEndian.Uint64(b[i:i+8])))>>3)
	}
	for ; i < len(b) && valueByte[b[i]] == vbPlain; i++ {
	}
	return i
}

// plainWord reports whether all eight bytes of x are plain value bytes:
// printable ASCII other than '"' and '\\'.
func plainWord(x uint64) bool { return notPlain(x) == 0 }

// notPlain returns a word whose lowest set bit is the top bit of the first
// (lowest) byte of x that is not a plain value byte, or 0 if all are plain.
// Bits above that one are not exact: a borrow may flag a later byte.
func notPlain(x uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	bad := x & highs                             // ≥ 0x80
	bad |= (x - 0x2020202020202020) &^ x & highs // < 0x20 (exact for the first such byte)
	bad |= zeroBytes(x ^ 0x2222222222222222)     // '"'
	bad |= zeroBytes(x ^ 0x5c5c5c5c5c5c5c5c)     // '\\'
	bad |= zeroBytes(x ^ 0x7f7f7f7f7f7f7f7f)     // DEL
	return bad
}

// categoryEnd returns the index of the first "=", SP, '"' or "@" in b (where
// an owner's category name ends), or len(b).
func categoryEnd(b []byte) int {
	for i, c := range b {
		if c == '=' || c == ' ' || c == '"' || c == '@' {
			return i
		}
	}
	return len(b)
}
