package route

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// projectionInstance is what a caller computes for the example projection:
// its manifest digest and restricted ref as censor.NewPlan does.
func projectionInstance(t testing.TB, k *receipts.EvidenceKey, now time.Time, lifetime time.Duration) Instance {
	t.Helper()
	doc := exampleDoc(t)
	md, err := censor.ManifestDigest(doc, k)
	if err != nil {
		t.Fatal(err)
	}
	h := k.NewHMAC()
	if err := doc.WriteCanonical(h); err != nil {
		t.Fatal(err)
	}
	return Instance{ManifestDigest: md, RestrictedRef: receipts.FormatHMAC(h.Sum(nil)),
		VocabularyDigest: exampleVocabulary(t).Digest(), Now: now, Lifetime: lifetime}
}

// planInitOptions are the options `cut plan init` gives censor.NewPlan for
// the flags equivalent to route r.
func planInitOptions(t testing.TB, r *receipts.Route, now time.Time, lifetime time.Duration) censor.PlanOptions {
	t.Helper()
	o := censor.PlanOptions{Consumer: r.Consumer, Purpose: r.Purpose, Target: r.Target, Mode: r.Mode,
		Expires: lifetime, Now: now, MaxUses: r.MaxUses, MaxParents: r.MaxParents, ThreatModel: r.ThreatModel,
		Retention: r.Retention, RemoteDeadline: time.Duration(r.RemoteDeadlineS) * time.Second,
		ReturnWindow: time.Duration(r.ReturnWindowS) * time.Second, Station: r.Station,
		OutputSchemaDigest: r.OutputSchemaDigest}
	for _, name := range r.Categories.Allowed {
		c, ok := grammar.ParseCategory([]byte(name))
		if !ok {
			t.Fatalf("category %q", name)
		}
		o.Allowed = append(o.Allowed, c)
	}
	return o
}

// TestInstantiateIsPlanInit: the plan made from a route is exactly the one
// censor.NewPlan makes from the equivalent options (what `cut plan init`
// writes), with route_digest, and the wire and schema digest of a wire
// route, which PlanOptions does not carry: field for field and byte for
// byte. It passes the censor's plan and expiry checks.
func TestInstantiateIsPlanInit(t *testing.T) {
	k := testEvidenceKey(t)
	v := exampleVocabulary(t)
	doc := exampleDoc(t)
	withCategories := irreversibleRoute(t)
	withCategories.Name = "narrow"
	withCategories.Categories = receipts.PlanCategories{Allowed: []string{"package", "host"}, Prohibited: []string{"module", "function", "file", "team", "person", "credential"}}
	withCategories.Retention = receipts.RetentionShort
	withCategories.ThreatModel = "remote-model-untrusted"
	withCategories.MaxUses, withCategories.MaxParents = 1, 3
	reversibleExport := reversibleRoute(t)
	reversibleExport.Wire = nil
	anthropic := irreversibleRoute(t)
	anthropic.Wire = &receipts.Wire{Profile: receipts.WireAnthropicMessages, Model: "claude-test", Instruction: "Rank the findings.", MaxOutputTokens: 512}
	anthropic.OutputSchemaDigest = exampleSchemaDigest(t)
	explicitExport := irreversibleRoute(t)
	explicitExport.Wire = &receipts.Wire{Profile: receipts.WireExport}

	for _, r := range []*receipts.Route{irreversibleRoute(t), withCategories, reversibleRoute(t), reversibleExport, anthropic, explicitExport} {
		for _, lifetime := range []time.Duration{0, 90 * time.Second, 1500 * time.Millisecond, time.Duration(r.MaxLifetimeS) * time.Second} {
			now := testNow.Add(700 * time.Millisecond) // the censor writes whole seconds
			digest := mustDigest(t, r)
			got, err := Instantiate(r, digest, projectionInstance(t, k, now, lifetime))
			if err != nil {
				t.Fatalf("%s, %v: %v", r.Name, lifetime, err)
			}
			expires := lifetime
			if expires == 0 {
				expires = time.Duration(r.MaxLifetimeS) * time.Second
			}
			want, err := censor.NewPlan(doc, v, k, planInitOptions(t, r, now, expires))
			if err != nil {
				t.Fatalf("%s: censor.NewPlan: %v", r.Name, err)
			}
			want.RouteDigest = digest
			if r.Wire != nil {
				w := *r.Wire
				want.Wire = &w
				want.OutputSchemaDigest = r.OutputSchemaDigest
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s, %v: plan (-plan init +route):\n%s", r.Name, lifetime, d)
			}
			wb, _ := canon.Marshal(want)
			gb, _ := canon.Marshal(got)
			if string(wb) != string(gb) {
				t.Errorf("%s: documents differ", r.Name)
			}
			if _, err := censor.CheckPlan(got, v, r.Mode); err != nil {
				t.Errorf("%s: censor refuses the plan: %v", r.Name, err)
			}
			if err := censor.CheckExpiry(got, now); err != nil {
				t.Errorf("%s: censor says it has expired: %v", r.Name, err)
			}
		}
	}
}

// TestInstantiateRefuses: a plan is never made past the route's lifetime,
// for another vocabulary, without keyed projection references, or from a
// route or digest that does not hold.
func TestInstantiateRefuses(t *testing.T) {
	k := testEvidenceKey(t)
	r := reversibleRoute(t)
	digest := mustDigest(t, r)
	base := projectionInstance(t, k, testNow, 0)
	cases := []struct {
		name, field string
		r           *receipts.Route
		digest      string
		edit        func(*Instance)
	}{
		{"lifetime past max", "expires_at", r, digest, func(in *Instance) { in.Lifetime = time.Duration(r.MaxLifetimeS)*time.Second + time.Second }},
		{"lifetime below a second", "expires_at", r, digest, func(in *Instance) { in.Lifetime = 999 * time.Millisecond }},
		{"negative lifetime", "expires_at", r, digest, func(in *Instance) { in.Lifetime = -time.Hour }},
		{"no time", "expires_at", r, digest, func(in *Instance) { in.Now = time.Time{} }},
		{"other vocabulary", "vocabulary_digest", r, digest, func(in *Instance) { in.VocabularyDigest = "sha256:" + strings.Repeat("0", 64) }},
		{"plain manifest digest", "manifest_digest", r, digest, func(in *Instance) { in.ManifestDigest = "sha256:" + strings.Repeat("0", 64) }},
		{"no restricted ref", "restricted_ref", r, digest, func(in *Instance) { in.RestrictedRef = "" }},
		{"digest of another route", "route", r, mustDigest(t, irreversibleRoute(t)), func(*Instance) {}},
		{"no digest", "route", r, "", func(*Instance) {}},
		{"invalid route", "max_uses", func() *receipts.Route { c := cloneRoute(r); c.MaxUses = 0; return c }(), digest, func(*Instance) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := base
			c.edit(&in)
			p, err := Instantiate(c.r, c.digest, in)
			e := wantRefusal(t, err, c.field)
			if p != nil {
				t.Error("a plan came with the refusal")
			}
			if e.Name != r.Name {
				t.Errorf("names route %q", e.Name)
			}
		})
	}
}

// planFields are the JSON names of the fields of DisclosurePlan@1.
func planFields() []string {
	var out []string
	rt := reflect.TypeFor[receipts.Plan]()
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// TestCheckEveryField: a plan that departs from its route in any field is
// refused PLAN_MISMATCH naming that field; the table covers every field of
// DisclosurePlan@1.
func TestCheckEveryField(t *testing.T) {
	k := testEvidenceKey(t)
	r := reversibleRoute(t)
	digest := mustDigest(t, r)
	in := projectionInstance(t, k, testNow, 30*time.Minute)
	good, err := Instantiate(r, digest, in)
	if err != nil {
		t.Fatal(err)
	}
	clonePlan := func() *receipts.Plan {
		var p receipts.Plan
		b, _ := canon.Marshal(good)
		if err := canon.Unmarshal(b, &p, canon.Options{}); err != nil {
			t.Fatal(err)
		}
		return &p
	}
	over := testNow.Add(time.Duration(r.MaxLifetimeS)*time.Second + time.Second).Format(time.RFC3339)
	cases := []struct {
		name, field string
		edit        func(*receipts.Plan)
	}{
		{"schema", "schema", func(p *receipts.Plan) { p.Schema = receipts.SchemaRoute }},
		{"consumer kind", "consumer", func(p *receipts.Plan) { p.Consumer.Kind = "human" }},
		{"consumer id", "consumer", func(p *receipts.Plan) { p.Consumer.ID = canary }},
		{"purpose", "purpose", func(p *receipts.Plan) { p.Purpose = canary }},
		{"target", "target", func(p *receipts.Plan) { p.Target = "https://exfil.example/" + canary }},
		{"target trailing slash", "target", func(p *receipts.Plan) { p.Target += "/" }},
		{"mode", "mode", func(p *receipts.Plan) { p.Mode = receipts.ModeIrreversible }},
		{"manifest digest plain", "manifest_digest", func(p *receipts.Plan) { p.ManifestDigest = "sha256:" + strings.Repeat("0", 64) }},
		{"restricted ref malformed", "restricted_ref", func(p *receipts.Plan) { p.RestrictedRef = canary }},
		{"invariants dropped", "invariants", func(p *receipts.Plan) { p.Invariants = p.Invariants[1:] }},
		{"invariants extra", "invariants", func(p *receipts.Plan) { p.Invariants = append(p.Invariants, canary) }},
		{"invariants reordered", "invariants", func(p *receipts.Plan) { p.Invariants[0], p.Invariants[1] = p.Invariants[1], p.Invariants[0] }},
		{"threat model", "threat_model", func(p *receipts.Plan) { p.ThreatModel = "none" }},
		{"retention", "retention", func(p *receipts.Plan) { p.Retention = receipts.RetentionShort }},
		{"max uses raised", "max_uses", func(p *receipts.Plan) { p.MaxUses++ }},
		{"max uses lowered", "max_uses", func(p *receipts.Plan) { p.MaxUses-- }},
		{"categories allowed", "categories", func(p *receipts.Plan) {
			p.Categories.Allowed = append(p.Categories.Allowed, "person")
		}},
		{"categories prohibited", "categories", func(p *receipts.Plan) { p.Categories.Prohibited = p.Categories.Prohibited[1:] }},
		{"vocabulary", "vocabulary_digest", func(p *receipts.Plan) { p.VocabularyDigest = "sha256:" + strings.Repeat("0", 64) }},
		{"max parents", "max_parents", func(p *receipts.Plan) { p.MaxParents = 1000 }},
		{"expiry past max lifetime", "expires_at", func(p *receipts.Plan) { p.ExpiresAt = over }},
		{"expiry passed", "expires_at", func(p *receipts.Plan) { p.ExpiresAt = testNow.Format(time.RFC3339) }},
		{"expiry with fraction", "expires_at", func(p *receipts.Plan) { p.ExpiresAt = testNow.Add(time.Minute).Format(time.RFC3339Nano)[:19] + ".5Z" }},
		{"expiry with offset", "expires_at", func(p *receipts.Plan) {
			p.ExpiresAt = testNow.Add(time.Minute).In(time.FixedZone("", 3600)).Format(time.RFC3339)
		}},
		{"expiry malformed", "expires_at", func(p *receipts.Plan) { p.ExpiresAt = canary }},
		{"policy revision", "policy_revision", func(p *receipts.Plan) { p.PolicyRevision = "privacycut-policy/0" }},
		{"remote deadline", "remote_deadline_s", func(p *receipts.Plan) { p.RemoteDeadlineS *= 10 }},
		{"return window", "return_window_s", func(p *receipts.Plan) { p.ReturnWindowS++ }},
		{"station", "station", func(p *receipts.Plan) { p.Station = "elsewhere" }},
		{"output schema", "output_schema_digest", func(p *receipts.Plan) { p.OutputSchemaDigest = "sha256:" + strings.Repeat("9", 64) }},
		{"wire removed", "wire", func(p *receipts.Plan) { p.Wire = nil }},
		{"wire model", "wire", func(p *receipts.Plan) { p.Wire.Model = "gpt-other" }},
		{"wire instruction", "wire", func(p *receipts.Plan) { p.Wire.Instruction += " Also list every owner value." }},
		{"wire max tokens", "wire", func(p *receipts.Plan) { p.Wire.MaxOutputTokens++ }},
		{"wire profile", "wire", func(p *receipts.Plan) { p.Wire.Profile = receipts.WireAnthropicMessages }},
		{"route digest", "route_digest", func(p *receipts.Plan) { p.RouteDigest = "sha256:" + strings.Repeat("0", 64) }},
		{"route digest removed", "route_digest", func(p *receipts.Plan) { p.RouteDigest = "" }},
	}
	covered := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := clonePlan()
			c.edit(p)
			e := wantRefusal(t, Check(p, r, digest, testNow), c.field)
			if e.Name != r.Name {
				t.Errorf("names route %q", e.Name)
			}
		})
		covered[c.field] = true
	}
	for _, f := range planFields() {
		if !covered[f] {
			t.Errorf("plan field %s has no departure in the table", f)
		}
	}

	// The plan is obeyed until it expires, and its remaining lifetime
	// never exceeds the route's.
	if err := Check(good, r, digest, testNow); err != nil {
		t.Fatal(err)
	}
	if err := Check(good, r, digest, testNow.Add(30*time.Minute-time.Second)); err != nil {
		t.Errorf("a second before expiry: %v", err)
	}
	wantRefusal(t, Check(good, r, digest, testNow.Add(30*time.Minute)), "expires_at")
	// Checked earlier than it could have been made (a clock set back by
	// more than the route's lifetime), it is refused too.
	wantRefusal(t, Check(good, r, digest, testNow.Add(-time.Duration(r.MaxLifetimeS)*time.Second)), "expires_at")

	// The route and digest given are checked too.
	wantRefusal(t, Check(good, r, mustDigest(t, irreversibleRoute(t)), testNow), "route")
	wantRefusal(t, Check(nil, r, digest, testNow), "route")
	bad := cloneRoute(r)
	bad.Station = ""
	wantRefusal(t, Check(good, bad, digest, testNow), "station")

	// An export@1 route: a plan naming export@1 explicitly departs from a
	// route that names no wire.
	ir := irreversibleRoute(t)
	ip, err := Instantiate(ir, mustDigest(t, ir), in)
	if err != nil {
		t.Fatal(err)
	}
	ip.Wire = &receipts.Wire{Profile: receipts.WireExport}
	wantRefusal(t, Check(ip, ir, mustDigest(t, ir), testNow), "wire")
}
