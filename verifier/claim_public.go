package verifier

import "bytes"

// public-preserved: the export has the source's parts, kinds and records,
// and in each record the same literals and public items at the same places
// relative to the owner slots.

// pairRecord pairs the source record of part p at line (spans ss of s,
// refused at sref; sHave false past the source's last record) with the
// export record starting at eStart (spans es of e, refused at eref; eHave
// false past the export's last record). It reports whether they pair: both
// recognized, with the same skeleton.
func (c *check) pairRecord(p, line int, s []byte, ss []span, sHave bool, sref *refusal,
	e []byte, eStart int, es []span, eHave bool, eref *refusal) bool {
	o := &c.out[cPublic]
	switch {
	case !sHave || !eHave:
		o.fail("part %d line %d: record count differs", p, line)
	case eref != nil:
		o.fail("part %d: export record not recognized: %s %s", p, eref.code, where(p, line, eStart, eref.off, eref.length))
	case sref != nil:
		o.fail("part %d line %d: source record not recognized", p, line)
	default:
		k := skeletonDiff(s, ss, e, es)
		if k < 0 {
			return true
		}
		at := eStart
		if k < len(es) {
			at = es[k].start
		}
		o.fail("part %d: record differs from source: %s", p, where(p, line, eStart, at, 1))
	}
	return false
}

// skeletonDiff compares two recognized records: the same spans, kinds and
// categories, and equal bytes in every span but owner values. It returns the
// index of the first differing span, or -1. The spans of a recognized
// record are contiguous, so each run of spans between two values is
// compared in one piece.
func skeletonDiff(s []byte, ss []span, e []byte, es []span) int {
	// runDiff compares the spans [lo, hi) and returns the first that
	// differs, or -1.
	runDiff := func(lo, hi int) int {
		if lo == hi || bytes.Equal(s[ss[lo].start:ss[hi-1].end], e[es[lo].start:es[hi-1].end]) {
			return -1
		}
		for k := lo; ; k++ {
			if !bytes.Equal(s[ss[k].start:ss[k].end], e[es[k].start:es[k].end]) {
				return k
			}
		}
	}
	n := min(len(ss), len(es))
	run := 0 // the first span of the run of non-value spans being read
	for k := range n {
		if ss[k].kind != es[k].kind || ss[k].cat != es[k].cat {
			if d := runDiff(run, k); d >= 0 {
				return d
			}
			return k
		}
		if ss[k].kind == spanValue {
			if d := runDiff(run, k); d >= 0 {
				return d
			}
			run = k + 1
		}
	}
	if d := runDiff(run, n); d >= 0 {
		return d
	}
	if len(ss) != len(es) {
		return n
	}
	return -1
}

// publicPreserved concludes the claim: the walk has recorded every record
// that does not pair.
func (c *check) publicPreserved(o *outcome) {
	if c.w.walked {
		o.facts = "records=" + itoa(c.w.records)
	}
}
