package verifier

import (
	"net/url"
	"slices"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// planWire checks the plan's wire: a known profile; export@1 takes nothing
// else; the provider profiles name a model and a positive
// max_output_tokens, and the plan binds the output schema they send.
func (c *check) planWire(o *outcome, p *receipts.Plan) {
	w := p.Wire
	if w == nil {
		return
	}
	switch w.Profile {
	case receipts.WireExport:
		if w.Model != "" || w.Instruction != "" || w.MaxOutputTokens != 0 {
			o.fail("wire: %s takes no model, instruction or max_output_tokens", receipts.WireExport)
		}
	case receipts.WireOpenAIChat, receipts.WireAnthropicMessages:
		if w.Model == "" {
			o.fail("wire: model empty")
		}
		if w.MaxOutputTokens < 1 {
			o.fail("wire: max_output_tokens below 1")
		}
		if alg, _, err := receipts.ParseDigest(p.OutputSchemaDigest); err != nil || alg != receipts.PrefixSHA256 {
			o.fail("wire: profile %s without a sha256 output_schema_digest", w.Profile)
		}
	default:
		o.fail("wire: profile unknown")
	}
}

// absoluteHTTP reports whether s is an absolute http or https URL with a
// host, and no user info or fragment.
func absoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.Host == "" || u.User != nil || u.Fragment != "" {
		return false
	}
	return u.Scheme == "http" || u.Scheme == "https"
}

// planMatch concludes plan-match: the plan is a well-formed
// DisclosurePlan@1 of this policy that binds this source, vocabulary and
// receipts and has not expired. Details name plan fields, never values.
func (c *check) planMatch(o *outcome) {
	if c.plan == nil {
		o.fail("plan: not decodable: %s", errText(c.planErr))
		return
	}
	p := c.plan
	// The censor and the seal digest the plan's fields; this digest is the
	// document's. A member the fields leave out (an explicit empty or null
	// value) would make them two digests.
	if fields, err := canon.Marshal(p); err != nil || receipts.SHA256(fields) != c.planDigest {
		o.fail("plan document holds a member its fields leave out (an explicit empty, zero or null value)")
	}
	if p.Schema != receipts.SchemaPlan {
		o.fail("schema is not %s", receipts.SchemaPlan)
	}
	if c.mode == "" {
		o.fail("mode is neither irreversible nor reversible")
	}
	if p.Consumer.Kind == "" || p.Consumer.ID == "" {
		o.fail("consumer kind or id empty")
	}
	if p.Purpose == "" {
		o.fail("purpose empty")
	}
	if !absoluteHTTP(p.Target) {
		o.fail("target is not an absolute http(s) URL without user info or fragment")
	}
	if p.MaxUses < 1 {
		o.fail("max_uses below 1")
	}
	if p.MaxParents < 1 {
		o.fail("max_parents below 1")
	}
	if p.PolicyRevision != receipts.PolicyRevision {
		o.fail("policy_revision is not %s", receipts.PolicyRevision)
	}
	if p.ThreatModel == "" {
		o.fail("threat_model empty")
	}
	for _, inv := range receipts.RequiredInvariants {
		if !slices.Contains(p.Invariants, inv) {
			o.fail("invariants lack %s", inv)
		}
	}
	if c.mode == receipts.ModeReversible {
		// What the rehydrating side may do is bound here, not chosen later.
		if p.RemoteDeadlineS <= 0 || p.ReturnWindowS <= 0 {
			o.fail("reversible plan without a positive remote_deadline_s and return_window_s")
		}
		if p.Station == "" {
			o.fail("reversible plan without a station")
		}
		if alg, _, err := receipts.ParseDigest(p.OutputSchemaDigest); err != nil || alg != receipts.PrefixSHA256 {
			o.fail("reversible plan without a sha256 output_schema_digest")
		}
		if !receipts.KnownRetention(p.Retention) {
			o.fail("reversible plan with an unknown retention")
		}
	}

	c.planWire(o, p)

	// Categories: known names only; credential never allowed; every category
	// the source uses allowed and not prohibited.
	for _, a := range p.Categories.Allowed {
		switch i := categoryIndex([]byte(a)); {
		case i < 0:
			o.fail("categories.allowed names an unknown category")
		case i == credential:
			o.fail("categories.allowed includes credential")
		}
	}
	for _, a := range p.Categories.Prohibited {
		if categoryIndex([]byte(a)) < 0 {
			o.fail("categories.prohibited names an unknown category")
		}
	}
	if !slices.Contains(p.Categories.Prohibited, "credential") {
		o.fail("categories.prohibited lacks credential")
	}
	for _, a := range p.Categories.Allowed {
		if slices.Contains(p.Categories.Prohibited, a) {
			o.fail("a category is both allowed and prohibited")
			break
		}
	}
	if c.w.walked {
		if !c.w.sourceRecognized {
			o.fail("source not fully recognized: its categories are unknown")
		} else if c.w.findings == 0 && slices.Contains(p.Invariants, "preserve-diagnostics") {
			o.fail("%s: preserve-diagnostics, and the source has no finding record", receipts.LostUtility)
		}
		for i, used := range c.w.used {
			if !used {
				continue
			}
			name := categories[i]
			if i == credential || !slices.Contains(p.Categories.Allowed, name) {
				o.fail("source uses category %s, which the plan does not allow", name)
			}
			if slices.Contains(p.Categories.Prohibited, name) {
				o.fail("source uses category %s, which the plan prohibits", name)
			}
		}
	} else {
		o.fail("source categories unknown (source or vocabulary not decodable)")
	}

	// Digests the plan binds.
	switch {
	case c.src == nil:
		o.fail("manifest_digest: source not decodable")
	case c.key == nil:
		o.fail("manifest_digest: %s", errText(c.keyErr))
	default:
		if d, err := c.dig.manifest, c.dig.manifestErr; err != nil {
			o.fail("manifest_digest: %s", errText(err))
		} else if d != p.ManifestDigest {
			o.fail("manifest_digest does not match the source")
		}
		if c.srcDigest == "" || c.srcDigest != p.RestrictedRef {
			o.fail("restricted_ref does not match the source")
		}
	}
	if c.vocDigest == "" || p.VocabularyDigest != c.vocDigest {
		o.fail("vocabulary_digest does not match the vocabulary")
	}

	// Expiry.
	exp, err := p.Expiry()
	switch {
	case err != nil:
		o.fail("expires_at is not RFC 3339")
	case c.req.Now.IsZero():
		o.fail("expires_at: %s", errText(errNoClock))
	case !c.req.Now.Before(exp):
		o.fail("plan expired")
	}

	// Every receipt binds this plan.
	if c.recErr != nil {
		o.fail("receipts: not decodable")
	} else {
		for i := range c.recs {
			if c.recs[i].PlanDigest != c.planDigest {
				o.fail("receipt %d: plan_digest does not match the plan", i)
			}
		}
	}
	o.facts = "mode=" + c.mode
}
