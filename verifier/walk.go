package verifier

import (
	"bytes"
	"strconv"

	"github.com/privacycut/privacycut/receipts"
)

func itoa(n int) string { return strconv.Itoa(n) }

// walkResult is what the source walk learns for the plan and chain claims.
type walkResult struct {
	sourceRecognized bool    // every source record was recognized
	counts           [8]int  // owner spans per category
	used             [8]bool // categories of the source's owner slots
	findings         int     // finding records
}

// region is a byte range of an export part that is neither public text, a
// literal nor a well-formed token.
type region struct {
	part, start, end int
}

// where formats a position inside a part's text: part, 1-based line, 1-based
// byte column, length. line is the record's line and recStart its offset.
func where(part, line, recStart, off, length int) string {
	return "part " + itoa(part) + " line " + itoa(line) + " col " + itoa(off-recStart+1) + " len " + itoa(length)
}

// tokenState checks token consistency across the whole cut. It stands for
// two maps per category, value → token and token → value: info holds the
// first, the token first paired with each value number; tokens numbers the
// (category, token) pairs seen, and tokVal gives the number of the value
// each first stood for (within one category, equal numbers mean equal
// values).
type tokenState struct {
	mode   string
	info   []tokenInfo // by value number
	tokens *byteTable
	tokVal []int32 // by token number
	ns     []byte  // the reversible namespace of the first token
}

// tokenInfo is the token first paired with one value.
type tokenInfo struct {
	tok int32 // its number in tokens
	has bool
	// clash records that the token table maps the token to another value.
	// The token table never changes an entry, so this holds for every later
	// slot that pairs the value with the same token.
	clash bool
}

// valueToken returns what is known of the token of value id.
func (ts *tokenState) valueToken(id int) *tokenInfo {
	for id >= len(ts.info) {
		ts.info = append(ts.info, tokenInfo{})
	}
	return &ts.info[id]
}

// token looks the token t of category cat up and returns its number: on
// its first appearance it is recorded as standing for value number v;
// later it clashes when it stood for another value.
func (ts *tokenState) token(cat int, t []byte, v int) (int, bool) {
	h := ts.tokens.hash(t)
	id, slot := ts.tokens.find(cat, t, h)
	if id < 0 {
		id = ts.tokens.insert(cat, t, h, slot)
		ts.tokVal = append(ts.tokVal, int32(v))
		return id, false
	}
	return id, int(ts.tokVal[id]) != v
}

// walk runs the recognizer over every source part and, in lockstep, over
// every export part, record by record. It evaluates coverage,
// public-preserved, owners-replaced, token-consistency and no-residual.
//
// Nothing proportional to the texts is built: owner values and tokens are
// numbered in byte-keyed tables, and the export re-derived from the source
// is compared with the export bytes while it is derived (expectedExport).
// The source is recognized on another goroutine (sourceRecords) that runs
// ahead; this one recognizes the export and pairs the records.
func (c *check) walk() *walkResult {
	w := &walkResult{}
	cov, pub, own, tok, res := &c.out[cCoverage], &c.out[cPublic], &c.out[cOwners], &c.out[cTokens], &c.out[cResidual]
	all := []*outcome{cov, pub, own, tok, res}
	if c.src == nil {
		for _, o := range all {
			o.fail("source: not decodable: %s", errText(c.srcErr))
		}
		return w
	}
	if c.voc == nil {
		for _, o := range all {
			o.fail("vocabulary: not decodable: %s", errText(c.vocErr))
		}
		return w
	}

	// Coverage is judged under the plan's categories.
	var allowed [8]bool
	maxParents := DefaultMaxParents
	if c.plan == nil {
		cov.fail("plan: not decodable: %s", errText(c.planErr))
	} else {
		for _, a := range c.plan.Categories.Allowed {
			if i := categoryIndex([]byte(a)); i >= 0 && i != credential {
				allowed[i] = true
			}
		}
		for _, p := range c.plan.Categories.Prohibited {
			if i := categoryIndex([]byte(p)); i >= 0 {
				allowed[i] = false
			}
		}
		if c.plan.MaxParents > 0 {
			maxParents = c.plan.MaxParents
		}
	}
	switch n := len(c.src.Parts); {
	case n == 0:
		cov.fail("%s document: no parts", receipts.MalformedRecord)
	case n > maxParts:
		cov.fail("%s document: more than %d parts", receipts.LimitExceeded, maxParts)
	}
	for _, r := range checkMetadata(c.src, maxParents) {
		cov.fail("%s %s line 0 col 0 len 0", r.code, partName(c.src, r.part))
	}

	haveExp := c.expParts != nil
	if !haveExp {
		msg := "export: not decodable"
		if c.expErr != nil {
			msg += ": " + errText(c.expErr)
		}
		for _, o := range all[1:] {
			o.fail("%s", msg)
		}
	}
	if c.mode == "" {
		tok.fail("plan: mode unknown")
	}

	// The source is recognized on another CPU, a few hundred records ahead
	// (sourceRecords); this goroutine recognizes the export and pairs them.
	vt := newValueTable()
	ts := &tokenState{mode: c.mode, tokens: newByteTable()}
	c.frees = append(c.frees, vt.release, ts.tokens.release)
	var sw sourceWalk
	src := c.startSource(vt, &allowed, &sw)
	defer src.stop()
	expRec := newRecognizer(c.voc, true)
	var bad []region

	nsrc := len(c.src.Parts)
	nexp := len(c.expParts)
	paired := haveExp && nsrc == nexp
	if haveExp && nsrc != nexp {
		pub.fail("export has %d parts, source has %d", nexp, nsrc)
		own.fail("parts could not be paired")
		tok.fail("parts could not be paired")
	}
	x := newExpectedExport(c.req.Export, c.mode == receipts.ModeIrreversible)
	x.begin()
	var espans []span
	var tokOK []bool // whether each export owner slot holds a token of its category

	for p := range max(nsrc, nexp) {
		if p >= nsrc {
			// An export part with no source part: nothing in it is known text.
			bad = append(bad, region{p, 0, len(c.expParts[p].text)})
			continue
		}
		s := c.src.Parts[p].Text
		x.beginPart(c.src.Parts[p].Kind)
		hasE := haveExp && p < nexp
		var e []byte
		if hasE {
			e = c.expParts[p].text
			if c.expParts[p].kind != c.src.Parts[p].Kind {
				pub.fail("part %d: kind differs", p)
			}
		}
		if len(s) > MaxPartTextBytes {
			paired = false
			if hasE {
				bad = append(bad, region{p, 0, len(e)})
			}
			x.endPart()
			continue
		}
		si, ei, rec := 0, 0, 0
		for si < len(s) || (hasE && ei < len(e)) {
			line := rec + 1
			sStart, eStart := si, ei
			var sr sourceRecord
			var eref *refusal
			sHave, eHave := si < len(s), hasE && ei < len(e)
			if sHave {
				sr = src.next(sStart)
				si = sr.end
			}
			shadowed := false // the export record is the source's with other values
			if eHave {
				if sHave && !sr.refused {
					espans, ei, shadowed = shadowRecord(expRec, s, sr.spans, e, ei, espans[:0])
				}
				if !shadowed {
					if sHave {
						expRec.memo.seed(s, sr.spans)
					}
					espans, ei, eref = expRec.record(e, ei, espans[:0])
				}
				tokOK = tokOK[:0]
				for _, sp := range espans {
					if sp.kind == spanValue {
						ok := tokenOfCategory(e[sp.start:sp.end], int(sp.cat))
						tokOK = append(tokOK, ok)
						if !ok {
							bad = append(bad, region{p, sp.start, sp.end})
						}
					}
				}
				if eref != nil {
					bad = append(bad, region{p, eref.off, ei})
				}
			}

			// Pair the source record with the export record.
			recPaired := false
			switch {
			case !hasE:
			case !sHave || !eHave:
				pub.fail("part %d line %d: record count differs", p, line)
			case eref != nil:
				pub.fail("part %d: export record not recognized: %s %s", p, eref.code, where(p, line, eStart, eref.off, eref.length))
			case sr.refused:
				pub.fail("part %d line %d: source record not recognized", p, line)
			case shadowed:
				// shadowRecord compared every span but the owner values
				// with the source's, as skeletonDiff does.
				recPaired = true
			default:
				if k := skeletonDiff(s, sr.spans, e, espans); k >= 0 {
					at := eStart
					if k < len(espans) {
						at = espans[k].start
					}
					pub.fail("part %d: record differs from source: %s", p, where(p, line, eStart, at, 1))
				} else {
					recPaired = true
				}
			}
			if !recPaired {
				paired = false
			}
			irrTokens := false // every export slot holds its irreversible token
			if recPaired {
				irrTokens = c.pairSlots(ts, p, line, eStart, s, sr.spans, e, espans, sr.slots, tokOK)
			}

			// Re-derive the expected candidate text of this record.
			switch {
			case !sHave || sr.refused:
			case recPaired && x.synced && (!x.withIrr || irrTokens):
				// The source record with each value replaced by the token
				// at its slot is the export record, whose spans are the
				// source's and whose other bytes are equal; and the
				// irreversible text, when there is one, is the same.
				// Written in one piece, it is compared as expectRecord
				// would compare it piece by piece.
				x.text(e[eStart:ei])
			default:
				expectRecord(x, s, sStart, si, sr.spans, e, espans, recPaired, sr.slots)
			}
			rec++
		}
		x.endPart()
	}
	x.end()
	src.finish()
	w.sourceRecognized, w.counts, w.used, w.findings = sw.recognized, sw.counts, sw.used, sw.findings
	records, publics, slots := sw.records, sw.publics, sw.slots
	tokDiff, irrDiff := x.results()

	if !w.sourceRecognized {
		paired = false
	}
	pub.facts = "records=" + itoa(records)
	cov.facts = "parts=" + itoa(nsrc) + " records=" + itoa(records) + " public_items=" + itoa(publics) + " owner_spans=" + itoa(slots)
	if !haveExp {
		return w
	}

	// owners-replaced: the export must be exactly the source with each owner
	// value replaced by the token found at its slot.
	if !paired {
		own.fail("owner slots could not all be paired with the source")
	} else if own.ok() && tokDiff >= 0 {
		own.fail("re-derived export differs at byte %d", tokDiff)
	}
	own.facts = "owner_spans=" + itoa(slots)

	// token-consistency.
	switch c.mode {
	case receipts.ModeIrreversible:
		if !w.sourceRecognized {
			tok.fail("source not recognized: expected tokens unknown")
		} else if irrDiff >= 0 {
			tok.fail("export differs from the irreversible expected export at byte %d", irrDiff)
		}
	case receipts.ModeReversible:
		if !paired {
			tok.fail("owner slots could not all be paired with the source")
		}
	}
	distinct := 0
	for i := range ts.info {
		if ts.info[i].has {
			distinct++
		}
	}
	tok.facts = "mode=" + c.mode + " distinct_values=" + itoa(distinct)

	c.checkResidual(vt, bad)
	return w
}

// partName names part i for a detail: its index and, when it is one of the
// closed set, its kind.
func partName(p *projection, i int) string {
	s := "part " + itoa(i)
	if k := p.Parts[i].Kind; partKinds[k] {
		s += " kind " + k
	}
	return s
}

// skeletonDiff compares two recognized records: the same spans, kinds and
// categories, and equal bytes in every span but owner values. It returns the
// index of the first differing span, or -1.
func skeletonDiff(s []byte, ss []span, e []byte, es []span) int {
	for k := range ss {
		if k >= len(es) {
			return k
		}
		a, b := ss[k], es[k]
		if a.kind != b.kind || a.cat != b.cat {
			return k
		}
		if a.kind != spanValue && !bytes.Equal(s[a.start:a.end], e[b.start:b.end]) {
			return k
		}
	}
	if len(es) != len(ss) {
		return len(ss)
	}
	return -1
}

// shadowRecord recognizes the export record that starts at e[start] when it
// is the accepted source record ss (of s) with only its owner values
// changed, each to plain printable ASCII (what a token is): every other
// byte of the record equal. It appends the record's spans to es and returns
// them with the offset just past the record's LF, and true. Otherwise it
// returns false, and the record is recognized by the recognizer r, which
// reports where it fails.
//
// On such a record, r.record would return exactly these spans: the
// machine's states read the same bytes as in the source record, up to the
// same delimiters, and find the same vocabulary items; the values, which
// alone differ, are read by the value state, which steps over plain
// printable ASCII until the closing quote and applies no ambiguity rule to
// a token. The record must also end within r's limits, as record checks.
// The spans are the source's, so skeletonDiff would find no difference.
func shadowRecord(r *recognizer, s []byte, ss []span, e []byte, start int, es []span) ([]span, int, bool) {
	n := len(ss)
	if n == 0 || ss[n-1].kind != spanSep || s[ss[n-1].start] != '\n' {
		return es, start, false
	}
	end := len(e)
	if end-start > r.maxRecord+1 {
		end = start + r.maxRecord + 1
	}
	// i is where, in e, the run of spans from run in s starts: the spans
	// between two values are compared in one bytes.Equal when the run ends.
	i, run := start, ss[0].start
	equal := func(to int) bool {
		n := to - run
		return n <= end-i && bytes.Equal(s[run:to], e[i:i+n])
	}
	owners := 0
	for k, sp := range ss {
		if k > 0 && sp.start != ss[k-1].end {
			return es, start, false // not contiguous: never from record
		}
		if sp.kind != spanValue {
			es = addSpan(es, sp.kind, sp.cat, sp.id, sp.start-run+i, sp.end-run+i)
			continue
		}
		if !equal(sp.start) {
			return es, start, false
		}
		i += sp.start - run
		owners++
		if owners > r.maxOwners {
			return es, start, false
		}
		j := i
		for j < end && e[j] >= ' ' && e[j] < 0x7f && e[j] != '"' && e[j] != '\\' {
			j++
		}
		if j == i || j == end || e[j] != '"' {
			return es, start, false
		}
		es = addSpan(es, spanValue, sp.cat, sp.id, i, j)
		i, run = j, sp.end
	}
	if !equal(ss[n-1].end) {
		return es, start, false
	}
	return es, i + ss[n-1].end - run, true
}

// lazyWhere formats a position only when a detail is written.
type lazyWhere struct{ part, line, recStart, off, length int }

func (w lazyWhere) String() string { return where(w.part, w.line, w.recStart, w.off, w.length) }

// pairSlots checks the owner slots of one paired record: each export slot
// must hold a token of the slot's category (owners-replaced), and tokens
// must be consistent across the cut and of the plan's mode
// (token-consistency). slots are the value numbers of the source record's
// slots and tokOK tells, for each export slot, whether it holds a token of
// its category. In irreversible mode it returns whether every slot holds
// its irreversible token; otherwise false.
func (c *check) pairSlots(ts *tokenState, p, line, eStart int, s []byte, ss []span, e []byte, es []span, slots []sourceSlot, tokOK []bool) bool {
	own, tok := &c.out[cOwners], &c.out[cTokens]
	k := 0
	irrTokens := ts.mode == receipts.ModeIrreversible
	var buf [maxIrreversibleLen]byte
	for i, sp := range ss {
		if sp.kind != spanValue {
			continue
		}
		ep := es[i]
		tv := e[ep.start:ep.end]
		cat := int(sp.cat)
		pos := lazyWhere{p, line, eStart, ep.start, ep.end - ep.start}
		if !tokOK[k] {
			own.fail("owner slot does not hold a %s token: %s", categories[cat], pos)
		}
		id := int(slots[k].id)
		vi := ts.valueToken(id)
		switch {
		case !vi.has:
			t, clash := ts.token(cat, tv, id)
			vi.tok, vi.has, vi.clash = int32(t), true, clash
			if clash {
				tok.fail("one %s token stands for different values: %s", categories[cat], pos)
			}
		case string(ts.tokens.bytes(int(vi.tok))) == string(tv):
			if vi.clash {
				tok.fail("one %s token stands for different values: %s", categories[cat], pos)
			}
		default:
			tok.fail("equal %s values have different tokens: %s", categories[cat], pos)
			if _, clash := ts.token(cat, tv, id); clash {
				tok.fail("one %s token stands for different values: %s", categories[cat], pos)
			}
		}
		switch ts.mode {
		case receipts.ModeIrreversible:
			if !bytes.Equal(tv, appendIrreversible(buf[:0], cat, int(slots[k].n))) {
				irrTokens = false
				tok.fail("token is not redacted:%s:<n> in order of first appearance: %s", categories[cat], pos)
			}
		case receipts.ModeReversible:
			ns, tc, ok := parseReversible(tv)
			switch {
			case !ok:
				tok.fail("token is not a reversible token: %s", pos)
			case tc != cat:
				tok.fail("token category differs from its slot: %s", pos)
			case ts.ns == nil:
				ts.ns = ns
			case !bytes.Equal(ns, ts.ns):
				tok.fail("token namespace differs within the export: %s", pos)
			}
		}
		k++
	}
	return irrTokens
}

// expectRecord writes the expected candidate text of one recognized source
// record s[start:end] to x: the owner values replaced by the tokens found
// in the paired export record (or kept, when the record is not paired) for
// owners-replaced, and by the irreversible tokens of their numbers for
// token-consistency.
func expectRecord(x *expectedExport, s []byte, start, end int, ss []span, e []byte, es []span, paired bool, slots []sourceSlot) {
	last := start
	k := 0
	var buf [maxIrreversibleLen]byte
	for i, sp := range ss {
		if sp.kind != spanValue {
			continue
		}
		x.text(s[last:sp.start])
		t := s[sp.start:sp.end]
		if paired {
			t = e[es[i].start:es[i].end]
		}
		var irr []byte
		if x.withIrr {
			irr = appendIrreversible(buf[:0], int(sp.cat), int(slots[k].n))
		}
		x.slot(t, irr)
		k++
		last = sp.end
	}
	x.text(s[last:end])
}
