package verifier

import (
	"errors"
	"slices"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// DefaultMaxParents is the plan's max_parents when the plan leaves it 0.
const DefaultMaxParents = 64

// partKinds is the closed set of part kinds.
var partKinds = map[string]bool{
	"block": true, "history": true, "continuation": true, "query": true, "tool": true, "artifact": true,
}

// classRank orders label classes.
var classRank = map[string]int{"public": 0, "internal": 1, "private": 2, "restricted": 3}

// projection is a strictly decoded Projection@1.
type projection struct {
	Schema  string    `json:"schema"`
	Profile string    `json:"profile"`
	Parts   []srcPart `json:"parts"`
}

type srcPart struct {
	Kind    string    `json:"kind"`
	Key     string    `json:"key"`
	Text    []byte    `json:"text"`
	Label   *srcLabel `json:"label"`
	Lineage []string  `json:"lineage"`
}

type srcLabel struct {
	Class      string   `json:"class"`
	Weight     int      `json:"weight"`
	Categories []string `json:"categories"`
	Subjects   []string `json:"subjects"`
	Parents    []string `json:"parents"`
	Handling   []string `json:"handling"`
}

var (
	errProjectionSchema  = errors.New("verifier: source: schema is not Projection@1")
	errProjectionProfile = errors.New("verifier: source: profile is not closed-diagnostic@1")
)

// parseProjection strictly decodes a Projection@1 document and returns it
// with the document's tree. Its strings are decoded into buffers from alloc
// (nil: the heap), which the texts alias.
func parseProjection(data []byte, alloc func(int) []byte) (*projection, *canon.Value, error) {
	tree, err := canon.Parse(data, canon.Options{Buffer: alloc})
	if err != nil {
		return nil, nil, err
	}
	var p projection
	// The texts alias the tree, which lives as long as the check.
	if err := tree.DecodeShared(&p); err != nil {
		return nil, nil, err
	}
	if p.Schema != "Projection@1" {
		return nil, tree, errProjectionSchema
	}
	if p.Profile != receipts.ProfileName {
		return nil, tree, errProjectionProfile
	}
	return &p, tree, nil
}

// metaRefusal is a refusal about a part's metadata: it names the whole part.
type metaRefusal struct {
	code receipts.Code
	part int
}

// checkMetadata applies the lineage rules of Projection@1 and the part-level
// limits: a known kind, a label with a known class, a lineage that is
// present and has no "unknown", at most maxParents distinct parents in the
// join, and texts within MaxPartTextBytes. It returns every refusal in part
// order.
func checkMetadata(p *projection, maxParents int) []metaRefusal {
	var out []metaRefusal
	parents := map[string]bool{}
	excess := false
	for i := range p.Parts {
		pt := &p.Parts[i]
		if !partKinds[pt.Kind] {
			out = append(out, metaRefusal{receipts.MalformedRecord, i})
		}
		if pt.Label == nil {
			// A missing label counts as restricted with unknown lineage.
			out = append(out, metaRefusal{receipts.UnknownLineage, i})
		} else if _, ok := classRank[pt.Label.Class]; !ok || pt.Label.Weight < 0 {
			out = append(out, metaRefusal{receipts.MalformedRecord, i})
		}
		if len(pt.Lineage) == 0 || slices.Contains(pt.Lineage, "unknown") || slices.Contains(pt.Lineage, "") {
			out = append(out, metaRefusal{receipts.UnknownLineage, i})
		}
		if pt.Label != nil && !excess {
			for _, par := range pt.Label.Parents {
				parents[par] = true
			}
			if len(parents) > maxParents {
				excess = true
				out = append(out, metaRefusal{receipts.ExcessAncestry, i})
			}
		}
		if len(pt.Text) > MaxPartTextBytes {
			out = append(out, metaRefusal{receipts.LimitExceeded, i})
		}
	}
	return out
}

// label is the joined label of a cut: exactly the six members of DESIGN.md,
// arrays sorted and de-duplicated, [] when empty.
type label struct {
	Class      string   `json:"class"`
	Weight     int      `json:"weight"`
	Categories []string `json:"categories"`
	Subjects   []string `json:"subjects"`
	Parents    []string `json:"parents"`
	Handling   []string `json:"handling"`
}

// joinLabels joins the parts' labels: the highest class and weight and the
// union of every array. A missing label counts as restricted.
func joinLabels(p *projection) label {
	j := label{Class: "public"}
	var cats, subs, pars, hand []string
	for i := range p.Parts {
		l := p.Parts[i].Label
		if l == nil {
			j.Class = "restricted"
			continue
		}
		if r, ok := classRank[l.Class]; ok && r > classRank[j.Class] {
			j.Class = l.Class
		}
		j.Weight = max(j.Weight, l.Weight)
		cats = append(cats, l.Categories...)
		subs = append(subs, l.Subjects...)
		pars = append(pars, l.Parents...)
		hand = append(hand, l.Handling...)
	}
	j.Categories, j.Subjects, j.Parents, j.Handling = sortedSet(cats), sortedSet(subs), sortedSet(pars), sortedSet(hand)
	return j
}

func sortedSet(s []string) []string {
	out := append([]string{}, s...)
	slices.Sort(out)
	return slices.Compact(out)
}
