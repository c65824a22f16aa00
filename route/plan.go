package route

import (
	"slices"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

// Instance is what a plan binds besides its route: the one projection it
// is for, the vocabulary loaded for the cut, and when.
type Instance struct {
	// ManifestDigest is censor.ManifestDigest of the projection and
	// RestrictedRef its keyed reference (the keyed digest of the
	// projection document, as censor.NewPlan writes it): both
	// "hmac-sha256:" digests, computed by the caller.
	ManifestDigest string
	RestrictedRef  string
	// VocabularyDigest is the digest of the vocabulary the caller loaded;
	// it must be the route's.
	VocabularyDigest string
	// Now is the time of instantiation; Lifetime the plan's requested
	// lifetime: 0 means the route's max_lifetime_s, otherwise at least one
	// second and at most max_lifetime_s.
	Now      time.Time
	Lifetime time.Duration
}

// Instantiate makes the DisclosurePlan@1 of route r (whose digest is
// digest, as Open returns it) for one projection. The plan is exactly the
// one `cut plan init` writes for that projection with the route's fields as
// options (censor.NewPlan with the same consumer, purpose, target, mode,
// categories, limits, threat model, retention, deadlines, station and
// schema digest, and lifetime), plus the route's wire and route_digest.
// Its expires_at is Now + Lifetime written in whole seconds (RFC 3339,
// UTC), as the censor writes it.
//
// It refuses (PLAN_MISMATCH naming the field) a route Validate refuses, a
// digest that is not the route's ("route"), a vocabulary other than the
// route's ("vocabulary_digest"), manifest and restricted references that
// are not keyed digests, and a lifetime past max_lifetime_s or below one
// second ("expires_at"). The plan it returns passes Check at in.Now.
func Instantiate(r *receipts.Route, digest string, in Instance) (*receipts.Plan, error) {
	if err := checkRoute(r, digest); err != nil {
		return nil, err
	}
	bad := func(field, reason string) error {
		e := refuse(field, reason)
		e.Name = r.Name
		return e
	}
	max := time.Duration(r.MaxLifetimeS) * time.Second
	switch {
	case in.VocabularyDigest != r.VocabularyDigest:
		return nil, bad("vocabulary_digest", "the vocabulary is not the route's")
	case !keyedDigest(in.ManifestDigest):
		return nil, bad("manifest_digest", "is not an hmac-sha256: digest")
	case !keyedDigest(in.RestrictedRef):
		return nil, bad("restricted_ref", "is not an hmac-sha256: digest")
	case in.Now.IsZero():
		return nil, bad("expires_at", "no time of instantiation")
	case in.Lifetime == 0:
		in.Lifetime = max
	case in.Lifetime < time.Second:
		return nil, bad("expires_at", "lifetime below one second")
	case in.Lifetime > max:
		return nil, bad("expires_at", "lifetime past the route's max_lifetime_s")
	}
	p := &receipts.Plan{
		Schema:             receipts.SchemaPlan,
		Consumer:           r.Consumer,
		Purpose:            r.Purpose,
		Target:             r.Target,
		Mode:               r.Mode,
		ManifestDigest:     in.ManifestDigest,
		RestrictedRef:      in.RestrictedRef,
		Invariants:         slices.Clone(receipts.RequiredInvariants),
		ThreatModel:        r.ThreatModel,
		Retention:          r.Retention,
		MaxUses:            r.MaxUses,
		Categories:         receipts.PlanCategories{Allowed: slices.Clone(r.Categories.Allowed), Prohibited: slices.Clone(r.Categories.Prohibited)},
		VocabularyDigest:   r.VocabularyDigest,
		MaxParents:         r.MaxParents,
		ExpiresAt:          in.Now.Add(in.Lifetime).UTC().Format(time.RFC3339),
		PolicyRevision:     receipts.PolicyRevision,
		RemoteDeadlineS:    r.RemoteDeadlineS,
		ReturnWindowS:      r.ReturnWindowS,
		Station:            r.Station,
		OutputSchemaDigest: r.OutputSchemaDigest,
		RouteDigest:        digest,
	}
	if r.Wire != nil {
		w := *r.Wire
		p.Wire = &w
	}
	if err := Check(p, r, digest, in.Now); err != nil {
		return nil, err
	}
	return p, nil
}

// checkRoute validates r and checks that digest is its digest.
func checkRoute(r *receipts.Route, digest string) error {
	if err := Validate(r); err != nil {
		return err
	}
	d, err := Digest(r)
	if err != nil {
		return err
	}
	if d != digest {
		e := refuse("route", "digest is not the route's")
		e.Name = r.Name
		return e
	}
	return nil
}

// Check refuses a plan that departs from its route: PLAN_MISMATCH naming
// the first plan field, in the plan's field order, that is not what
// Instantiate would write for some projection at now. Every field is
// compared exactly (route_digest, schema, consumer, purpose, target,
// mode, invariants, threat_model, retention, max_uses, categories,
// vocabulary_digest, max_parents, policy_revision, remote_deadline_s,
// return_window_s, station, output_schema_digest, wire), but for the two
// that name the projection (manifest_digest and restricted_ref must be
// keyed digests; the censor binds them to the projection) and expires_at:
// written as Instantiate writes it, not passed at now, and not later than
// now + max_lifetime_s.
//
// A plan records no time of issue, and whoever holds the route can make a
// plan from it, so the bound is on the lifetime the plan has left: a plan
// checked at now is obeyed at most max_lifetime_s from now, never longer.
// A route Validate refuses, or a digest that is not r's ("route"), refuses
// too.
func Check(p *receipts.Plan, r *receipts.Route, digest string, now time.Time) error {
	if err := checkRoute(r, digest); err != nil {
		return err
	}
	bad := func(field, reason string) error {
		e := refuse(field, reason)
		e.Name = r.Name
		return e
	}
	differs := "departs from the route"
	if p == nil {
		return bad("route", "no plan")
	}
	switch {
	case p.RouteDigest != digest:
		return bad("route_digest", "is not the route's digest")
	case p.Schema != receipts.SchemaPlan:
		return bad("schema", "is not DisclosurePlan@1")
	case p.Consumer != r.Consumer:
		return bad("consumer", differs)
	case p.Purpose != r.Purpose:
		return bad("purpose", differs)
	case p.Target != r.Target:
		return bad("target", differs)
	case p.Mode != r.Mode:
		return bad("mode", differs)
	case !keyedDigest(p.ManifestDigest):
		return bad("manifest_digest", "is not an hmac-sha256: digest")
	case !keyedDigest(p.RestrictedRef):
		return bad("restricted_ref", "is not an hmac-sha256: digest")
	case !slices.Equal(p.Invariants, receipts.RequiredInvariants):
		return bad("invariants", "are not the required invariants")
	case p.ThreatModel != r.ThreatModel:
		return bad("threat_model", differs)
	case p.Retention != r.Retention:
		return bad("retention", differs)
	case p.MaxUses != r.MaxUses:
		return bad("max_uses", differs)
	case !slices.Equal(p.Categories.Allowed, r.Categories.Allowed) || !slices.Equal(p.Categories.Prohibited, r.Categories.Prohibited):
		return bad("categories", differs)
	case p.VocabularyDigest != r.VocabularyDigest:
		return bad("vocabulary_digest", differs)
	case p.MaxParents != r.MaxParents:
		return bad("max_parents", differs)
	}
	exp, err := time.Parse(time.RFC3339, p.ExpiresAt)
	switch {
	case err != nil || exp.UTC().Format(time.RFC3339) != p.ExpiresAt:
		return bad("expires_at", "is not an RFC 3339 UTC time in whole seconds")
	case !now.Before(exp):
		return bad("expires_at", "has passed")
	case exp.After(now.Add(time.Duration(r.MaxLifetimeS) * time.Second)):
		return bad("expires_at", "is later than now and the route's max_lifetime_s")
	}
	switch {
	case p.PolicyRevision != receipts.PolicyRevision:
		return bad("policy_revision", "is not this build's policy")
	case p.RemoteDeadlineS != r.RemoteDeadlineS:
		return bad("remote_deadline_s", differs)
	case p.ReturnWindowS != r.ReturnWindowS:
		return bad("return_window_s", differs)
	case p.Station != r.Station:
		return bad("station", differs)
	case p.OutputSchemaDigest != r.OutputSchemaDigest:
		return bad("output_schema_digest", differs)
	case !sameWire(p.Wire, r.Wire):
		return bad("wire", differs)
	}
	return nil
}

// sameWire reports whether a plan's wire is its route's: both absent, or
// equal in every member.
func sameWire(a, b *receipts.Wire) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}
