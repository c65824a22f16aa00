package verifier

import (
	"bytes"

	"github.com/privacycut/privacycut/receipts"
)

// coverage: the source is a strict Projection@1; every part has a known
// kind, a label and a lineage without "unknown"; the join stays within the
// plan's max_parents; every byte of every text is recognized under the
// vocabulary; every owner category is allowed by the plan (credential
// never).

// coverMetadata applies the part-level rules (checkMetadata) and returns
// the categories the plan allows.
func (c *check) coverMetadata() (allowed [8]bool) {
	o := &c.out[cCoverage]
	maxParents := DefaultMaxParents
	if c.plan == nil {
		o.fail("plan: not decodable: %s", errText(c.planErr))
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
		o.fail("%s document: no parts", receipts.MalformedRecord)
	case n > maxParts:
		o.fail("%s document: more than %d parts", receipts.LimitExceeded, maxParts)
	}
	for _, r := range checkMetadata(c.src, maxParents) {
		o.fail("%s %s line 0 col 0 len 0", r.code, partName(c.src, r.part))
	}
	return allowed
}

// coverRecord takes one source record, recognized (ref nil) or refused at
// ref, with the spans accepted before a refusal. line is its line and
// start its offset in part p's text s.
func (c *check) coverRecord(p, line, start int, s []byte, spans []span, ref *refusal, allowed *[8]bool) {
	o, w := &c.out[cCoverage], &c.w
	for _, sp := range spans {
		switch {
		case sp.kind == spanOwnerKey:
			if !allowed[sp.cat] && c.plan != nil {
				o.fail("%s %s", receipts.ProhibitedCategory, where(p, line, start, sp.start, sp.end-sp.start))
			}
			w.used[sp.cat] = true
		case sp.kind == spanValue:
			if ref == nil {
				w.counts[sp.cat]++
				w.slots++
			}
		case sp.kind.public():
			w.publics++
		}
	}
	if ref != nil {
		w.sourceRecognized = false
		o.fail("%s %s", ref.code, where(p, line, start, ref.off, ref.length))
		return
	}
	w.records++
	if bytes.HasPrefix(s[start:], []byte("finding ")) {
		w.findings++
	}
}

// coverage concludes the claim: the walk has recorded every refusal.
func (c *check) coverage(o *outcome) {
	if !c.w.walked {
		return
	}
	o.facts = "parts=" + itoa(len(c.src.Parts)) + " records=" + itoa(c.w.records) + " public_items=" + itoa(c.w.publics) + " owner_spans=" + itoa(c.w.slots)
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
