package pipeline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/route"
	"github.com/privacycut/privacycut/wire"
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
	if o.Wire != nil && o.Wire.Profile != receipts.WireExport {
		// A provider profile asks for an answer of the output schema's
		// shape, in either mode.
		if schema == nil {
			return nil, fmt.Errorf("%w: the wire profile %s needs an output schema", ErrPlanOptions, o.Wire.Profile)
		}
		s, err := wire.ParseSchema(schema)
		if err != nil {
			return nil, p.wireRefusal(err)
		}
		o.OutputSchemaDigest = s.Digest()
	}
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
	if err := wire.CheckPlan(plan); err != nil {
		return nil, p.wireRefusal(err)
	}
	return NewPlan(plan)
}

// MakeRoutePlan writes the DisclosurePlan@1 of a projection from an
// approved route, as `cut plan init --route` does: the route's every field,
// the projection's manifest digest and restricted reference, an expiry
// lifetime from now (0: the route's max_lifetime_s, and never more), and
// route_digest. The vocabulary must be the route's; a route that binds an
// output schema needs that schema, which for a reversible route must mark
// a path for its purpose.
func (p *Pipeline) MakeRoutePlan(v *Vocabulary, projection []byte, a *route.Approved, lifetime time.Duration, schema []byte) (*Plan, error) {
	return p.MakeRoutePlanAt(v, projection, a, lifetime, schema, nil)
}

// ExpiryFunc chooses a route plan's expiry: given the projection's keyed
// manifest digest, the time of instantiation and the latest expiry the
// plan may have (now + lifetime, in whole seconds), it returns the expiry
// to write, in whole seconds, at least a second after now and no later
// than latest, or
// an error, which MakeRoutePlanAt returns as it is.
type ExpiryFunc func(manifestDigest string, now, latest time.Time) (time.Time, error)

// MakeRoutePlanAt is MakeRoutePlan with the expiry chosen by expiry (nil:
// the latest). A process that makes a plan per request uses it to give
// every request a plan of its own: two plans of one route for one
// projection differ only in their expiry, and the seal authority seals a
// plan and its export once.
func (p *Pipeline) MakeRoutePlanAt(v *Vocabulary, projection []byte, a *route.Approved, lifetime time.Duration, schema []byte, expiry ExpiryFunc) (*Plan, error) {
	doc, refs := grammar.LoadProjection(projection, grammar.LoadOptions{Buffer: p.opt.Buffer})
	if refs != nil {
		return nil, p.refuse(refs, "", "", nil)
	}
	plan, _, err := p.makeRoutePlan(v, doc, a, lifetime, schema, expiry, true)
	return plan, err
}

// makeRoutePlan is MakeRoutePlanAt of a decoded projection; with check, it
// refuses a projection the grammar does not accept before making the plan.
// It returns the projection's binding too, for the censor.
func (p *Pipeline) makeRoutePlan(v *Vocabulary, doc *grammar.Document, a *route.Approved, lifetime time.Duration, schema []byte, expiry ExpiryFunc, check bool) (*Plan, *censor.Binding, error) {
	r := a.Route
	if r.OutputSchemaDigest != "" {
		if schema == nil {
			return nil, nil, fmt.Errorf("%w: the route binds an output schema; give it", ErrPlanOptions)
		}
		s, err := p.CheckSchema(r.OutputSchemaDigest, schema)
		if err != nil {
			return nil, nil, err
		}
		if r.Mode == receipts.ModeReversible &&
			!slices.ContainsFunc(s.Paths(), func(m rehydrate.MarkedPath) bool { return m.Purpose == r.Purpose }) {
			return nil, nil, fmt.Errorf("%w: the output schema marks no path for purpose %q: nothing in an answer could be rehydrated", ErrPlanOptions, r.Purpose)
		}
	}
	if check {
		parser := grammar.NewParser(v.g, grammar.Options{})
		if res := grammar.Check(doc, parser, r.MaxParents, nil); !res.OK() {
			return nil, nil, p.refuse(res.Refusals, "", "", nil)
		}
	}
	b, err := censor.Bind(doc, p.opt.EvidenceKey)
	if err != nil {
		return nil, nil, err
	}
	md, ref := b.ManifestDigest(), b.RestrictedRef()
	now := p.opt.Now()
	if expiry != nil {
		if lifetime == 0 {
			lifetime = time.Duration(r.MaxLifetimeS) * time.Second
		}
		latest := now.Add(lifetime).Truncate(time.Second)
		at, err := expiry(md, now, latest)
		if err != nil {
			return nil, nil, err
		}
		if at.After(latest) || at.Before(now.Add(time.Second)) || !at.Equal(at.Truncate(time.Second)) {
			return nil, nil, fmt.Errorf("%w: the expiry chosen is not in whole seconds within the lifetime", ErrPlanOptions)
		}
		// Instantiate writes now + lifetime in whole seconds: at itself.
		lifetime = at.Sub(now)
	}
	plan, err := route.Instantiate(r, a.Digest, route.Instance{ManifestDigest: md, RestrictedRef: ref,
		VocabularyDigest: v.Digest(), Now: now, Lifetime: lifetime})
	if err != nil {
		return nil, nil, p.routeRefusal(err)
	}
	np, err := NewPlan(plan)
	return np, b, err
}

// RouteInput is one disclosure through an approved route (PrepareRoute):
// its plan is made from the route for the projection, as by
// MakeRoutePlanAt, then prepared, as by Prepare.
type RouteInput struct {
	Vocabulary *Vocabulary
	Route      *route.Approved
	// Projection is the Projection@1 document, kept as Input.Projection is.
	Projection []byte
	// Lifetime is the plan's (0: the route's max_lifetime_s, never more);
	// Expiry chooses its expiry within it (nil: the latest).
	Lifetime time.Duration
	Expiry   ExpiryFunc
	// Schema is the output schema the route binds, if any.
	Schema []byte
	// Run and Attempt are Input's.
	Run     string
	Attempt uint32
}

// PrepareRoute makes the plan of one disclosure from an approved route and
// prepares it: MakeRoutePlanAt then Prepare, with the projection decoded
// and parsed once. The plan is made without MakeRoutePlanAt's grammar
// check: the censor's, which runs before any token is asked for (so before
// a reversible route's lease is granted), refuses the same projection with
// the same refusals. The cut's Timings.Plan is the plan's making.
func (p *Pipeline) PrepareRoute(ctx context.Context, in RouteInput) (*Cut, error) {
	if in.Vocabulary == nil || in.Route == nil {
		return nil, errors.New("pipeline: prepare needs a vocabulary and a route")
	}
	t := time.Now()
	doc, refs := grammar.LoadProjection(in.Projection, grammar.LoadOptions{Buffer: p.opt.Buffer})
	if refs != nil {
		return nil, p.refuse(refs, "", "", nil)
	}
	r := in.Route.Route
	plan, binding, err := p.makeRoutePlan(in.Vocabulary, doc, in.Route, in.Lifetime, in.Schema, in.Expiry, false)
	if err != nil {
		return nil, err
	}
	took := time.Since(t)
	pin := Input{Vocabulary: in.Vocabulary, Plan: plan, Projection: in.Projection, Route: in.Route,
		Run: in.Run, Attempt: in.Attempt}
	if r.Mode == receipts.ModeReversible || r.WireProfile() != receipts.WireExport {
		// The schema rehydrates a reversible answer, and renders a
		// provider request in either mode.
		pin.Schema = in.Schema
	}
	cut, err := p.prepare(ctx, pin, doc, binding)
	if cut != nil {
		cut.Timings.Plan = took
	}
	return cut, err
}

// CheckRoute refuses a plan that departs from its approved route in any
// field, or whose expiry is past the route's max_lifetime_s from now
// (PLAN_MISMATCH naming the field).
func (p *Pipeline) CheckRoute(plan *Plan, a *route.Approved) error {
	if err := route.Check(&plan.fields, a.Route, a.Digest, p.opt.Now()); err != nil {
		return p.routeRefusal(err)
	}
	return nil
}

// routeRefusal makes a *route.Error a plan refusal naming its field; any
// other error is returned as it is.
func (p *Pipeline) routeRefusal(err error) error {
	var re *route.Error
	if errors.As(err, &re) {
		return p.refuse(planRefusal(re.Code), re.Field, re.Reason, err)
	}
	return err
}
