package grammar

import (
	"encoding/binary"
	"math/bits"

	"github.com/privacycut/privacycut/receipts"
)

// The fast path. Most records of a real text are well formed, so run first
// offers each record to fast, which accepts exactly the records the
// field-by-field parse accepts, with the same spans and stats, in one pass
// and with fewer instructions, calls and unpredictable branches: it finds the
// record's LF as it goes instead of first, finds each field with one inline
// word scan, makes each lookup one call (strset.find), matches an owner's
// prefix and category as two words, scans and checks a plain ASCII owner
// value inline, and builds spans only in the mode that keeps them. It
// declines everything else: a record it does not accept is cut at its LF and
// parsed field by field, which alone decides refusals and their positions.
// Declining is always safe; accepting is checked against a frozen reference
// parser by TestParseMatchesReference and FuzzParseMatchesReference.
//
// fast sees the text from the record's start to at most MaxRecord+1 bytes on
// (r.rec). A field that runs past the record's LF holds the LF, so no
// vocabulary item matches it and fast declines; only the last public field
// and what follows an owner value are checked for the LF itself.

var (
	wordFinding = binary.LittleEndian.Uint64([]byte("finding "))
	wordAsk     = binary.LittleEndian.Uint32([]byte("ask "))
	wordFixed   = binary.LittleEndian.Uint64([]byte("fixed=\x00\x00")) // six bytes
)

const mask6 = 1<<48 - 1

// nextSP returns the index of the first SP in b at or after i, or len(b) if
// there is none. The last word may be read from b's spare capacity, whose
// bytes never count.
func nextSP(b []byte, i int) int {
	for ; len(b)-i >= 8; i += 8 {
		if t := zeroBytes(binary.LittleEndian.Uint64(b[i:i+8]) ^ 0x2020202020202020); t != 0 {
			return i + bits.TrailingZeros64(t)>>3
		}
	}
	return nextSPTail(b, i)
}

// nextSPTail is nextSP for the last seven bytes or fewer.
func nextSPTail(b []byte, i int) int {
	if i < len(b) && cap(b)-i >= 8 {
		t := zeroBytes(binary.LittleEndian.Uint64(b[i:i+8]) ^ 0x2020202020202020)
		return min(len(b), i+bits.TrailingZeros64(t)>>3)
	}
	for ; i < len(b) && b[i] != ' '; i++ {
	}
	return i
}

// nextEnd is nextSP stopping at an LF too.
func nextEnd(b []byte, i int) int {
	for ; len(b)-i >= 8; i += 8 {
		x := binary.LittleEndian.Uint64(b[i : i+8])
		if t := zeroBytes(x^0x2020202020202020) | zeroBytes(x^0x0a0a0a0a0a0a0a0a); t != 0 {
			return i + bits.TrailingZeros64(t)>>3
		}
	}
	for ; i < len(b) && b[i] != ' ' && b[i] != '\n'; i++ {
	}
	return i
}

// fast accepts the record at the start of r.rec if it is a record of the
// grammar, adding its stats to r.st and its spans to r.spans, and returns
// the offset of its LF in r.rec; or it returns -1, leaving r.st and r.spans
// holding garbage for run to restore.
func (r *recParser) fast() int {
	rec := r.rec
	if len(rec) < 8 {
		return -1
	}
	var end int
	switch w := binary.LittleEndian.Uint64(rec); {
	case w == wordFinding:
		end = r.findingFast(len("finding "))
	case uint32(w) == wordAsk:
		end = r.askFast(len("ask "))
	default:
		return -1
	}
	if end < 0 {
		return -1
	}
	return r.ownersFast(end)
}

// findingFast accepts the public fields of a finding record and returns the
// offset of the SP or LF after its citation, or -1.
func (r *recParser) findingFast(off int) int {
	v, rec := r.v, r.rec
	e1 := nextSP(rec, off) // diagnostic
	o2 := e1 + 1
	e2 := nextSP(rec, o2) // dependency
	o3 := e2 + 1
	e3 := nextSP(rec, o3) // status
	o5 := e3 + 1
	if o5 >= len(rec) {
		return -1 // a field is missing
	}
	fv, e4 := -1, -1
	if len(rec)-o5 >= 8 {
		if binary.LittleEndian.Uint64(rec[o5:])&mask6 == wordFixed {
			fv = o5 + len("fixed=")
			e4 = nextSP(rec, fv) // fixed version
			if e4 >= len(rec) {
				return -1
			}
			o5 = e4 + 1
		}
	} else if len(rec)-o5 >= len("fixed=") {
		return -1 // a short tail: leave it to the field-by-field parse
	}
	e5 := nextEnd(rec, o5) // citation
	if e5 >= len(rec) {
		return -1
	}

	i1 := v.diagnostics.find(rec[off:e1])
	dep := rec[o2:e2]
	di := v.deps.find(dep)
	i5 := v.citations.find(rec[o5:e5])
	i3 := v.statuses.lookup(rec[o3:e3])
	if i1 < 0 || di < 0 || i5 < 0 || i3 < 0 {
		return -1
	}
	dm := v.depMod[di]
	at := int(dm.at)
	fi := int32(-1)
	if fv >= 0 {
		r.scratch = append(append(append(r.scratch[:0], dep[:at]...), '@'), rec[fv:e4]...)
		if fi = v.deps.find(r.scratch); fi < 0 {
			return -1
		}
	}

	r.st.Records++
	r.st.Findings++
	if r.mode != spansAll {
		r.st.PublicItems += 5
		if fi >= 0 {
			r.st.PublicItems++
		}
		return e5
	}
	r.lit(LiteralFinding, 0, off, 0)
	r.pub(ClassDiagnostic, i1, off, e1-off)
	r.lit(LiteralSP, e1, 1, 0)
	r.pub(ClassModule, dm.module, o2, at)
	r.lit(LiteralAt, o2+at, 1, 0)
	r.pub(ClassVersion, di, o2+at+1, e2-o2-at-1)
	r.lit(LiteralSP, e2, 1, 0)
	r.pub(ClassStatus, i3, o3, e3-o3)
	sp := e3
	if fi >= 0 {
		r.lit(LiteralFixed, e3, fv-e3, 0)
		r.pub(ClassVersion, fi, fv, e4-fv)
		sp = e4
	}
	r.lit(LiteralSP, sp, 1, 0)
	r.pub(ClassCitation, i5, o5, e5-o5)
	return e5
}

// askFast accepts the question of an ask record and returns the offset of
// the SP or LF after it, or -1.
func (r *recParser) askFast(off int) int {
	end := nextEnd(r.rec, off)
	if end >= len(r.rec) {
		return -1
	}
	idx := r.v.questions.find(r.rec[off:end])
	if idx < 0 {
		return -1
	}
	r.st.Records++
	r.lit(LiteralAsk, 0, off, 0)
	r.pub(ClassQuestion, idx, off, end-off)
	return end
}

// ownerPattern is the text after ` owner.` up to and including the opening
// quote, for one category, as the two words the fast path compares: the
// first word is "owner." and the category's first two letters; the second
// holds the rest of the name, `="`, and bytes that are masked off.
type ownerPattern struct {
	head, tail, mask uint64
	n                int // bytes from "owner." to the opening quote, inclusive
	cat              Category
}

// ownerPatterns is indexed by ownerSlot of the first word. Credential has no
// entry: it is never allowed, so its owners are always refused.
var ownerPatterns = func() (t [16]ownerPattern) {
	for _, c := range Categories() {
		if c == CategoryCredential {
			continue
		}
		var b [16]byte
		n := copy(b[:], "owner."+c.String()+`="`)
		p := ownerPattern{
			head: binary.LittleEndian.Uint64(b[:8]),
			tail: binary.LittleEndian.Uint64(b[8:]),
			mask: 1<<(8*(n-8)) - 1,
			n:    n,
			cat:  c,
		}
		slot := ownerSlot(p.head)
		if t[slot].cat != CategoryNone {
			panic("grammar: two owner categories share a slot")
		}
		t[slot] = p
	}
	return t
}()

// ownerSlot maps the first word of an owner (its bytes 6 and 7 being the
// category's first two letters) to its slot in ownerPatterns: a perfect hash
// of the seven categories other than credential.
func ownerSlot(head uint64) uint64 { return (head >> 48 * 17 & 0xffff) >> 7 & 15 }

// ownersFast accepts *( SP owner ) from off, the SP or LF after the last
// public field, to the record's LF, and returns the offset of the LF or -1.
func (r *recParser) ownersFast(off int) int {
	rec := r.rec
	n := 0
	for {
		if off >= len(rec) {
			return -1
		}
		switch rec[off] {
		case '\n':
			return off
		case ' ':
		default:
			return -1
		}
		q := off + 1
		if cap(rec)-q < 16 {
			return -1
		}
		w := rec[q : q+16 : q+16] // may reach past the record; masked below
		head := binary.LittleEndian.Uint64(w)
		p := &ownerPatterns[ownerSlot(head)]
		if head != p.head || binary.LittleEndian.Uint64(w[8:])&p.mask != p.tail || p.cat == CategoryNone {
			return -1
		}
		// The pattern holds no LF, so it lies in the record.
		vstart := q + p.n
		if vstart > len(rec) || !r.p.allowed.Has(p.cat) {
			return -1
		}
		n++
		if n > r.p.lim.MaxOwners {
			return -1
		}
		// A value of plain ASCII bytes up to its closing quote is scanned
		// here; anything else goes through value and ambiguous, which
		// refuse an LF as a control character.
		vend := plainRun(rec, vstart)
		if vend < len(rec) && rec[vend] == '"' && vend > vstart &&
			rec[vstart] != ' ' && rec[vend-1] != ' ' && !r.v.all.mayHold(rec[vstart:vend]) &&
			(r.p.candidate || !tokenPrefixed(rec[vstart:vend])) {
			// Plain ASCII is NFC, has no escape, cannot start or end with
			// white space other than SP, and is no vocabulary item nor, in a
			// projection, token-shaped.
		} else {
			var escaped, composing bool
			var bad *receipts.Refusal
			if vend, escaped, composing, bad = r.value(vstart); bad != nil {
				return -1
			}
			if r.ambiguous(vstart, vend, escaped, composing) != nil {
				return -1
			}
		}
		r.st.Owners[p.cat]++
		if r.mode != spansNone {
			r.lit(LiteralOwner, off, vstart-off, p.cat)
			r.spans = append(r.spans, Span{Off: r.start + vstart, Len: vend - vstart, Kind: SpanOwner, Category: p.cat})
			r.lit(LiteralQuote, vend, 1, 0)
		}
		off = vend + 1
	}
}
