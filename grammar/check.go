package grammar

import (
	"cmp"
	"slices"

	"github.com/privacycut/privacycut/receipts"
)

// Result is what a check of a whole projection found.
type Result struct {
	Parts    int
	Stats    Stats
	Label    Label              // the join of the parts' labels
	Refusals []receipts.Refusal // empty when the projection is accepted
}

// OK reports whether the projection was accepted.
func (r *Result) OK() bool { return len(r.Refusals) == 0 }

// Check applies the lineage and ancestry rules and parses every part's text.
// It reports refusals in part order, at most the parser's MaxRefusals in all.
// emit, when not nil, receives every span with the part's index; the spans
// are meaningful only when the result is OK.
func Check(d *Document, p *Parser, maxParents int, emit func(part int, s Span)) Result {
	res := Result{Parts: len(d.Parts), Label: Join(d.Parts)}
	res.Refusals = CheckLineage(d.Parts, maxParents)
	for i := range d.Parts {
		part := &d.Parts[i]
		var fn func(Span)
		if emit != nil {
			idx := i
			fn = func(s Span) { emit(idx, s) }
		}
		st, refs := p.Parse(part.Text, fn)
		res.Stats.Add(st)
		for _, r := range refs {
			if len(res.Refusals) >= p.lim.MaxRefusals {
				break
			}
			r.Part, r.Kind = i, part.Kind
			res.Refusals = append(res.Refusals, r)
		}
	}
	sortRefusals(res.Refusals)
	return res
}

// CheckOwners is Check returning, instead of every span, the owner spans of
// each part (in order). Large parts are parsed on all CPUs. The spans are
// meaningful only when the result is OK.
func CheckOwners(d *Document, p *Parser, maxParents int) (Result, []OwnerSpans) {
	res := Result{Parts: len(d.Parts), Label: Join(d.Parts)}
	res.Refusals = CheckLineage(d.Parts, maxParents)
	owners := make([]OwnerSpans, len(d.Parts))
	for i := range d.Parts {
		part := &d.Parts[i]
		spans, st, refs := p.Owners(part.Text)
		owners[i] = spans
		res.Stats.Add(st)
		for _, r := range refs {
			if len(res.Refusals) >= p.lim.MaxRefusals {
				break
			}
			r.Part, r.Kind = i, part.Kind
			res.Refusals = append(res.Refusals, r)
		}
	}
	sortRefusals(res.Refusals)
	return res, owners
}

// sortRefusals orders refusals by part, then position (lineage refusals,
// which have line 0, first within a part).
func sortRefusals(rs []receipts.Refusal) {
	slices.SortStableFunc(rs, func(a, b receipts.Refusal) int {
		if c := cmp.Compare(a.Part, b.Part); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Line, b.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Column, b.Column)
	})
}
