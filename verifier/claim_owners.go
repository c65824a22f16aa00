package verifier

// owners-replaced: every owner slot holds a token of its category, and the
// export is the source with each owner value replaced by the token at its
// slot: every record pairs (pairRecord). Pairing is that re-derivation:
// the spans of a recognized record tile it, so two records with the same
// spans, kinds and categories and equal bytes in every span but the values
// are the one with its values replaced by the other's; parts of equal kinds
// made of paired records are the re-derived texts, and export-canonical
// makes the export the canonical document of those parts.

// ownerSlots checks the owner slots of one export record (spans es of part
// p's text e, at line, starting at eStart): each must hold a well-formed
// token of its category. A slot that does not is a region of no known text
// for no-residual.
func (c *check) ownerSlots(p, line, eStart int, e []byte, es []span) {
	for _, sp := range es {
		if sp.kind != spanValue || tokenOfCategory(e[sp.start:sp.end], int(sp.cat)) {
			continue
		}
		c.w.bad = append(c.w.bad, region{p, sp.start, sp.end})
		c.out[cOwners].fail("owner slot does not hold a %s token: %s", categories[sp.cat], where(p, line, eStart, sp.start, sp.end-sp.start))
	}
}

// ownersReplaced concludes the claim.
func (c *check) ownersReplaced(o *outcome) {
	w := &c.w
	if !w.walked || c.exp == nil {
		return
	}
	if !w.paired {
		o.fail("owner slots could not all be paired with the source")
	}
	o.facts = "owner_spans=" + itoa(w.slots)
}
