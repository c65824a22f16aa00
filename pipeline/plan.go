package pipeline

import (
	"errors"
	"fmt"
	"slices"

	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/rehydrate"
)

// PlanOptions are the choices a DisclosurePlan@1 is made of (consumer,
// purpose, target, mode, expiry, uses, categories, reversible deadlines and
// station); zero values are the documented defaults.
type PlanOptions = censor.PlanOptions

// ErrPlanOptions is wrapped by the errors of MakePlan about its options
// (not about the projection): a reversible plan without a schema, or with
// one that marks no path for the purpose.
var ErrPlanOptions = errors.New("plan options")

// MakePlan writes the DisclosurePlan@1 of a projection, as `cut plan init`
// does: only for a projection the grammar accepts under the vocabulary
// (a *RefusedError otherwise), binding it through keyed digests only. A
// reversible plan needs its output schema, which must mark a path for the
// plan's purpose; its digest is bound into the plan.
func (p *Pipeline) MakePlan(v *Vocabulary, projection []byte, o PlanOptions, schema []byte) (*Plan, error) {
	if o.Mode == "reversible" {
		if schema == nil {
			return nil, fmt.Errorf("%w: a reversible plan needs an output schema", ErrPlanOptions)
		}
		s, err := rehydrate.ParseSchema(schema)
		if err != nil {
			return nil, fmt.Errorf("schema: %w", err)
		}
		// A plan whose purpose no marking names could disclose and never
		// rehydrate: every token in the answer would be at a path marked
		// for another purpose, or none.
		if !slices.ContainsFunc(s.Paths(), func(m rehydrate.MarkedPath) bool { return m.Purpose == o.Purpose }) {
			return nil, fmt.Errorf("%w: the output schema marks no path for purpose %q: nothing in an answer could be rehydrated", ErrPlanOptions, o.Purpose)
		}
		o.OutputSchemaDigest = s.Digest()
	}
	doc, refs := grammar.LoadProjection(projection, grammar.LoadOptions{Buffer: p.opt.Buffer})
	if refs != nil {
		return nil, p.refuse(refs, "", "", nil)
	}
	maxParents := o.MaxParents
	if maxParents <= 0 {
		maxParents = grammar.DefaultMaxParents
	}
	parser := grammar.NewParser(v.g, grammar.Options{})
	if res := grammar.Check(doc, parser, maxParents, nil); !res.OK() {
		return nil, p.refuse(res.Refusals, "", "", nil)
	}
	if o.Now.IsZero() {
		o.Now = p.opt.Now()
	}
	plan, err := censor.NewPlan(doc, v.g, p.opt.EvidenceKey, o)
	if err != nil {
		return nil, p.refusedCut(err)
	}
	return NewPlan(plan)
}
