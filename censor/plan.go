package censor

import (
	"net/url"
	"slices"
	"time"

	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// PolicyRevision is the policy this build enforces; seals must match it.
const PolicyRevision = receipts.PolicyRevision

// PlanOptions are the choices `cut plan init` exposes.
type PlanOptions struct {
	Consumer    receipts.Consumer
	Purpose     string
	Target      string
	Mode        string        // default irreversible
	Expires     time.Duration // default 24h
	Now         time.Time
	MaxUses     int // default 1
	MaxParents  int // default 64
	Allowed     []grammar.Category
	ThreatModel string // default "remote-model-honest-but-curious"
	Retention   string // default receipts.RetentionNone

	// Wire is the wire profile (nil: export@1). A profile other than
	// export@1 binds OutputSchemaDigest in either mode.
	Wire *receipts.Wire

	// Reversible only.
	RemoteDeadline     time.Duration // default 10m
	ReturnWindow       time.Duration // default 1h
	Station            string        // default "local"
	OutputSchemaDigest string
}

// NewPlan builds the DisclosurePlan@1 for a projection. The plan binds the
// projection through keyed digests only.
func NewPlan(doc *grammar.Document, v *grammar.Vocabulary, k *receipts.EvidenceKey, o PlanOptions) (*receipts.Plan, error) {
	b, err := Bind(doc, k)
	if err != nil {
		return nil, err
	}
	md, ref := b.manifest, b.ref
	if o.Mode == "" {
		o.Mode = receipts.ModeIrreversible
	}
	if o.Expires <= 0 {
		o.Expires = 24 * time.Hour
	}
	if o.MaxUses <= 0 {
		o.MaxUses = 1
	}
	if o.MaxParents <= 0 {
		o.MaxParents = grammar.DefaultMaxParents
	}
	if o.ThreatModel == "" {
		o.ThreatModel = "remote-model-honest-but-curious"
	}
	if o.Retention == "" {
		o.Retention = receipts.RetentionNone
	}
	allowed := o.Allowed
	if len(allowed) == 0 {
		for _, c := range grammar.Categories() {
			if c != grammar.CategoryCredential {
				allowed = append(allowed, c)
			}
		}
	}
	p := &receipts.Plan{
		Schema:           receipts.SchemaPlan,
		Consumer:         o.Consumer,
		Purpose:          o.Purpose,
		Target:           o.Target,
		Mode:             o.Mode,
		ManifestDigest:   md,
		RestrictedRef:    ref,
		Invariants:       append([]string(nil), receipts.RequiredInvariants...),
		ThreatModel:      o.ThreatModel,
		Retention:        o.Retention,
		MaxUses:          o.MaxUses,
		VocabularyDigest: v.Digest(),
		MaxParents:       o.MaxParents,
		ExpiresAt:        o.Now.Add(o.Expires).UTC().Format(time.RFC3339),
		PolicyRevision:   PolicyRevision,
		Categories:       receipts.PlanCategories{Allowed: []string{}, Prohibited: []string{}},
	}
	for _, c := range grammar.Categories() {
		if slices.Contains(allowed, c) && c != grammar.CategoryCredential {
			p.Categories.Allowed = append(p.Categories.Allowed, c.String())
		} else {
			p.Categories.Prohibited = append(p.Categories.Prohibited, c.String())
		}
	}
	if o.Mode == receipts.ModeReversible {
		if o.RemoteDeadline <= 0 {
			o.RemoteDeadline = 10 * time.Minute
		}
		if o.ReturnWindow <= 0 {
			o.ReturnWindow = time.Hour
		}
		if o.Station == "" {
			o.Station = "local"
		}
		p.RemoteDeadlineS = int(o.RemoteDeadline / time.Second)
		p.ReturnWindowS = int(o.ReturnWindow / time.Second)
		p.Station = o.Station
		p.OutputSchemaDigest = o.OutputSchemaDigest
	}
	if o.Wire != nil {
		w := *o.Wire
		p.Wire = &w
		if w.Profile != receipts.WireExport {
			p.OutputSchemaDigest = o.OutputSchemaDigest
		}
	}
	if _, err := CheckPlan(p, v, p.Mode); err != nil {
		return nil, err
	}
	return p, nil
}

// CheckPlan validates a plan against the vocabulary and the token source's
// mode and returns the categories it allows. Any mismatch is a
// PLAN_MISMATCH refusal naming the field.
func CheckPlan(p *receipts.Plan, v *grammar.Vocabulary, mode string) (grammar.CategorySet, error) {
	bad := func(field string) (grammar.CategorySet, error) {
		return 0, planRefusal(receipts.PlanMismatch, field)
	}
	switch {
	case p.Schema != receipts.SchemaPlan:
		return bad("schema")
	case p.Mode != receipts.ModeIrreversible && p.Mode != receipts.ModeReversible:
		return bad("mode")
	case p.Mode != mode:
		return bad("mode")
	case p.Consumer.Kind == "" || p.Consumer.ID == "":
		return bad("consumer")
	case p.Purpose == "":
		return bad("purpose")
	case !ValidTarget(p.Target):
		return bad("target")
	case p.MaxUses < 1:
		return bad("max_uses")
	case p.MaxParents < 1:
		return bad("max_parents")
	case p.VocabularyDigest != v.Digest():
		return bad("vocabulary_digest")
	case p.PolicyRevision != PolicyRevision:
		return bad("policy_revision")
	case p.ThreatModel == "":
		return bad("threat_model")
	}
	for _, inv := range receipts.RequiredInvariants {
		if !slices.Contains(p.Invariants, inv) {
			return bad("invariants")
		}
	}
	if _, err := p.Expiry(); err != nil {
		return bad("expires_at")
	}
	if p.Mode == receipts.ModeReversible {
		// A reversible plan binds how its answer may be rehydrated: the
		// output schema (its marked paths are the only places a token is
		// substituted) and the retention of the result. Without them the
		// rehydrating side would choose.
		if p.RemoteDeadlineS <= 0 || p.ReturnWindowS <= 0 || p.Station == "" {
			return bad("reversible")
		}
		if alg, _, err := receipts.ParseDigest(p.OutputSchemaDigest); err != nil || alg != receipts.PrefixSHA256 {
			return bad("output_schema_digest")
		}
		if !receipts.KnownRetention(p.Retention) {
			return bad("retention")
		}
	}
	set := grammar.NoCategories
	for _, name := range p.Categories.Allowed {
		c, ok := grammar.ParseCategory([]byte(name))
		if !ok || c == grammar.CategoryCredential || slices.Contains(p.Categories.Prohibited, name) {
			return bad("categories")
		}
		set = set.With(c)
	}
	for _, name := range p.Categories.Prohibited {
		if _, ok := grammar.ParseCategory([]byte(name)); !ok {
			return bad("categories")
		}
	}
	if !slices.Contains(p.Categories.Prohibited, "credential") {
		return bad("categories")
	}
	return set, nil
}

// CheckExpiry refuses a plan that has expired at now.
func CheckExpiry(p *receipts.Plan, now time.Time) error {
	t, err := p.Expiry()
	if err != nil || !now.Before(t) {
		return planRefusal(receipts.PlanMismatch, "expires_at")
	}
	return nil
}

// ValidTarget reports whether s is a target a plan may name: an absolute
// http or https URL with a host and no user info or fragment.
func ValidTarget(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil && u.Fragment == ""
}

// Binding is what a plan binds of a projection: its manifest digest and its
// restricted reference (the keyed digest of its canonical form, which a
// cut's source digest is), computed by Bind for one decoded document under
// one key. Cut given the Binding of its own document and key does not
// compute them again.
type Binding struct {
	doc      *grammar.Document
	key      *receipts.EvidenceKey
	manifest string
	ref      string
}

// Bind computes the Binding of doc under k.
func Bind(doc *grammar.Document, k *receipts.EvidenceKey) (*Binding, error) {
	md, err := ManifestDigest(doc, k)
	if err != nil {
		return nil, err
	}
	ref, err := RestrictedRef(doc, k)
	if err != nil {
		return nil, err
	}
	return &Binding{doc: doc, key: k, manifest: md, ref: ref}, nil
}

// ManifestDigest returns the projection's manifest_digest.
func (b *Binding) ManifestDigest() string { return b.manifest }

// RestrictedRef returns the projection's restricted_ref.
func (b *Binding) RestrictedRef() string { return b.ref }

// RestrictedRef is a plan's restricted_ref for doc: the keyed digest of
// the projection document, H(projection), an opaque reference to the exact
// local source.
func RestrictedRef(doc *grammar.Document, k *receipts.EvidenceKey) (string, error) {
	h := k.NewHMAC()
	if err := doc.WriteCanonical(h); err != nil {
		return "", err
	}
	return receipts.FormatHMAC(h.Sum(nil)), nil
}

// ManifestDigest is H({"schema":"Manifest@1","parts":[{kind,key,text_digest}…]}).
func ManifestDigest(doc *grammar.Document, k *receipts.EvidenceKey) (string, error) {
	type entry struct {
		Kind       string `json:"kind"`
		Key        string `json:"key"`
		TextDigest string `json:"text_digest"`
	}
	m := struct {
		Schema string  `json:"schema"`
		Parts  []entry `json:"parts"`
	}{Schema: "Manifest@1", Parts: make([]entry, len(doc.Parts))}
	for i, p := range doc.Parts {
		m.Parts[i] = entry{Kind: p.Kind, Key: p.Key, TextDigest: k.HMAC(p.Text)}
	}
	return k.HMACCanonical(m)
}

// LabelDigest is H(label) with the label's six fields.
func LabelDigest(l grammar.Label, k *receipts.EvidenceKey) (string, error) {
	return k.HMACCanonical(l)
}
