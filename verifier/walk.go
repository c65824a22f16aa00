package verifier

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/privacycut/privacycut/receipts"
)

func itoa(n int) string { return strconv.Itoa(n) }

// walkResult is what the source walk learns for the plan and chain claims.
type walkResult struct {
	sourceRecognized bool    // every source record was recognized
	counts           [8]int  // owner spans per category
	used             [8]bool // categories of the source's owner slots
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

// tokenState checks token consistency across the whole cut.
type tokenState struct {
	mode   string
	valTok [8]map[string]string // owner value (as written) → token
	tokVal [8]map[string]string // token → owner value
	ns     []byte               // the reversible namespace of the first token
}

// walk runs the recognizer over every source part and, in lockstep, over
// every export part, record by record. It evaluates coverage,
// public-preserved, owners-replaced, token-consistency and no-residual.
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

	srcRec := newRecognizer(c.voc, false)
	expRec := newRecognizer(c.voc, true)
	ts := &tokenState{mode: c.mode}
	var irrevN [8]map[string]int
	var irrevNext [8]int
	for i := range 8 {
		ts.valTok[i] = map[string]string{}
		ts.tokVal[i] = map[string]string{}
		irrevN[i] = map[string]int{}
	}
	values := map[string]struct{}{}
	var bad []region

	nsrc := len(c.src.Parts)
	nexp := len(c.expParts)
	paired := haveExp && nsrc == nexp
	if haveExp && nsrc != nexp {
		pub.fail("export has %d parts, source has %d", nexp, nsrc)
		own.fail("parts could not be paired")
		tok.fail("parts could not be paired")
	}
	w.sourceRecognized = true
	expectTok := make([][]byte, nsrc)
	expectIrr := make([][]byte, nsrc)
	var sspans, espans []span
	var slotN []int
	records, publics, slots := 0, 0, 0

	for p := range max(nsrc, nexp) {
		if p >= nsrc {
			// An export part with no source part: nothing in it is known text.
			bad = append(bad, region{p, 0, len(c.expParts[p].text)})
			continue
		}
		s := c.src.Parts[p].Text
		hasE := haveExp && p < nexp
		var e []byte
		if hasE {
			e = c.expParts[p].text
			if c.expParts[p].kind != c.src.Parts[p].Kind {
				pub.fail("part %d: kind differs", p)
			}
		}
		if len(s) > MaxPartTextBytes {
			w.sourceRecognized = false
			paired = false
			if hasE {
				bad = append(bad, region{p, 0, len(e)})
			}
			continue
		}
		bufTok := make([]byte, 0, len(e)+64)
		bufIrr := make([]byte, 0, len(s)+len(s)/4+64)
		si, ei, rec := 0, 0, 0
		for si < len(s) || (hasE && ei < len(e)) {
			line := rec + 1
			sStart, eStart := si, ei
			var sref, eref *refusal
			sHave, eHave := si < len(s), hasE && ei < len(e)
			if sHave {
				sspans, si, sref = srcRec.record(s, si, sspans[:0])
				slotN = slotN[:0]
				var cat int8 = -1
				for _, sp := range sspans {
					switch {
					case sp.kind == spanOwnerKey:
						cat = sp.cat
						if !allowed[cat] && c.plan != nil {
							cov.fail("%s %s", receipts.ProhibitedCategory, where(p, line, sStart, sp.start, sp.end-sp.start))
						}
						w.used[cat] = true
					case sp.kind == spanValue:
						v := s[sp.start:sp.end]
						if _, ok := values[string(v)]; !ok {
							values[string(v)] = struct{}{}
						}
						n, ok := irrevN[cat][string(v)]
						if !ok {
							irrevNext[cat]++
							n = irrevNext[cat]
							irrevN[cat][string(v)] = n
						}
						slotN = append(slotN, n)
						if sref == nil {
							w.counts[cat]++
							slots++
						}
					case sp.kind.public():
						publics++
					}
				}
				if sref != nil {
					w.sourceRecognized = false
					cov.fail("%s %s", sref.code, where(p, line, sStart, sref.off, sref.length))
				} else {
					records++
				}
			}
			if eHave {
				espans, ei, eref = expRec.record(e, ei, espans[:0])
				for _, sp := range espans {
					if sp.kind == spanValue && !tokenOfCategory(e[sp.start:sp.end], int(sp.cat)) {
						bad = append(bad, region{p, sp.start, sp.end})
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
			case sref != nil:
				pub.fail("part %d line %d: source record not recognized", p, line)
			default:
				if k := skeletonDiff(s, sspans, e, espans); k >= 0 {
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
			if recPaired {
				c.pairSlots(ts, p, line, eStart, s, sspans, e, espans, slotN)
			}

			// Re-derive the expected candidate text of this record.
			if sHave && sref == nil {
				bufTok, bufIrr = c.appendExpected(bufTok, bufIrr, s, sStart, si, sspans, e, espans, recPaired, slotN)
			}
			rec++
		}
		expectTok[p], expectIrr[p] = bufTok, bufIrr
	}

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
	} else if own.ok() {
		if k, err := c.compareExpected(expectTok); err != nil {
			own.fail("re-derived export: %s", errText(err))
		} else if k >= 0 {
			own.fail("re-derived export differs at byte %d", k)
		}
	}
	own.facts = "owner_spans=" + itoa(slots)

	// token-consistency.
	switch c.mode {
	case receipts.ModeIrreversible:
		if !w.sourceRecognized {
			tok.fail("source not recognized: expected tokens unknown")
		} else if sameTexts(expectTok, expectIrr) && own.ok() {
			// Equal to the owners-replaced export, already compared.
		} else if k, err := c.compareExpected(expectIrr); err != nil {
			tok.fail("expected export: %s", errText(err))
		} else if k >= 0 {
			tok.fail("export differs from the irreversible expected export at byte %d", k)
		}
	case receipts.ModeReversible:
		if !paired {
			tok.fail("owner slots could not all be paired with the source")
		}
	}
	distinct := 0
	for i := range 8 {
		distinct += len(ts.valTok[i])
	}
	tok.facts = "mode=" + c.mode + " distinct_values=" + itoa(distinct)

	c.checkResidual(values, bad)
	return w
}

// sameTexts reports whether a and b hold equal texts.
func sameTexts(a, b [][]byte) bool {
	return slices.EqualFunc(a, b, bytes.Equal)
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

// lazyWhere formats a position only when a detail is written.
type lazyWhere struct{ part, line, recStart, off, length int }

func (w lazyWhere) String() string { return where(w.part, w.line, w.recStart, w.off, w.length) }

// pairSlots checks the owner slots of one paired record: each export slot
// must hold a token of the slot's category (owners-replaced), and tokens
// must be consistent across the cut and of the plan's mode
// (token-consistency).
func (c *check) pairSlots(ts *tokenState, p, line, eStart int, s []byte, ss []span, e []byte, es []span, slotN []int) {
	own, tok := &c.out[cOwners], &c.out[cTokens]
	k := 0
	var want []byte
	for i, sp := range ss {
		if sp.kind != spanValue {
			continue
		}
		ep := es[i]
		sv, tv := s[sp.start:sp.end], e[ep.start:ep.end]
		cat := int(sp.cat)
		pos := lazyWhere{p, line, eStart, ep.start, ep.end - ep.start}
		if !tokenOfCategory(tv, cat) {
			own.fail("owner slot does not hold a %s token: %s", categories[cat], pos)
		}
		if prev, ok := ts.valTok[cat][string(sv)]; ok {
			if prev != string(tv) {
				tok.fail("equal %s values have different tokens: %s", categories[cat], pos)
			}
		} else {
			ts.valTok[cat][string(sv)] = string(tv)
		}
		if prev, ok := ts.tokVal[cat][string(tv)]; ok {
			if prev != string(sv) {
				tok.fail("one %s token stands for different values: %s", categories[cat], pos)
			}
		} else {
			ts.tokVal[cat][string(tv)] = string(sv)
		}
		switch ts.mode {
		case receipts.ModeIrreversible:
			want = appendIrreversible(want[:0], cat, slotN[k])
			if !bytes.Equal(tv, want) {
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
				ts.ns = slices.Clone(ns)
			case !bytes.Equal(ns, ts.ns):
				tok.fail("token namespace differs within the export: %s", pos)
			}
		}
		k++
	}
}

// appendExpected appends the expected candidate text of one recognized
// source record s[start:end] to bufTok (owner values replaced by the tokens
// found in the paired export record) and bufIrr (owner values replaced by
// the irreversible tokens numbered in slotN).
func (c *check) appendExpected(bufTok, bufIrr, s []byte, start, end int, ss []span, e []byte, es []span, paired bool, slotN []int) ([]byte, []byte) {
	last := start
	k := 0
	for i, sp := range ss {
		if sp.kind != spanValue {
			continue
		}
		bufTok = append(bufTok, s[last:sp.start]...)
		bufIrr = append(bufIrr, s[last:sp.start]...)
		if paired {
			bufTok = append(bufTok, e[es[i].start:es[i].end]...)
		} else {
			bufTok = append(bufTok, s[sp.start:sp.end]...)
		}
		bufIrr = appendIrreversible(bufIrr, int(sp.cat), slotN[k])
		k++
		last = sp.end
	}
	bufTok = append(bufTok, s[last:end]...)
	bufIrr = append(bufIrr, s[last:end]...)
	return bufTok, bufIrr
}

// compareExpected encodes the canonical export
// {"parts":[{"kind":…,"text":…}…],"profile":"closed-diagnostic@1"} that the
// texts make with the source's part kinds and compares it with the export
// bytes. It returns the first differing offset, or -1 when they are equal.
func (c *check) compareExpected(texts [][]byte) (int, error) {
	tree, _ := partsTree(func(i int) []receipts.Member {
		return []receipts.Member{member("kind", strValue([]byte(c.src.Parts[i].Kind))), member("text", strValue(texts[i]))}
	}, len(texts), member("profile", strValue([]byte(receipts.ProfileName))))
	return compareCanonical(tree, c.req.Export)
}
