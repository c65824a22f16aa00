package route

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// TestParse: a valid route parses from its canonical form and from an
// indented document with its members in another order, to the same route
// and digest; the digest is S(canonical form).
func TestParse(t *testing.T) {
	for _, r := range []*receipts.Route{irreversibleRoute(t), reversibleRoute(t)} {
		c, err := Canonical(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Parse(c)
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if d := cmp.Diff(r, got); d != "" {
			t.Errorf("%s: parsed route (-want +got):\n%s", r.Name, d)
		}
		// Indented, members reversed.
		var m map[string]any
		if err := json.Unmarshal(c, &m); err != nil {
			t.Fatal(err)
		}
		indented, err := json.MarshalIndent(m, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got2, err := Parse(indented)
		if err != nil {
			t.Fatalf("%s indented: %v", r.Name, err)
		}
		if d := cmp.Diff(r, got2); d != "" {
			t.Errorf("%s indented (-want +got):\n%s", r.Name, d)
		}
		if d := mustDigest(t, got2); d != receipts.SHA256(c) {
			t.Errorf("%s: digest %s, want S(canonical) %s", r.Name, d, receipts.SHA256(c))
		}
	}
}

// TestParseRefuses: documents that are not strict, canonical-member
// DisclosureRoute@1 documents refuse with field "route"; syntax errors
// carry the strict reader's content-free *canon.SyntaxError.
func TestParseRefuses(t *testing.T) {
	good, err := Canonical(irreversibleRoute(t))
	if err != nil {
		t.Fatal(err)
	}
	body := string(good[1 : len(good)-1])
	cases := []struct {
		name   string
		doc    string
		syntax bool
	}{
		{"empty", "", true},
		{"not an object", `["` + canary + `"]`, true},
		{"unknown member", `{"x":"` + canary + `",` + body + `}`, true},
		{"duplicate member", `{"purpose":"` + canary + `",` + body + `}`, true},
		{"case-folded member", `{"Purpose":"` + canary + `",` + body + `}`, true},
		{"trailing data", string(good) + `"` + canary + `"`, true},
		{"invalid UTF-8", `{"station":"` + canary + "\xff" + `",` + body + `}`, true},
		{"explicit empty station", `{"station":"",` + body + `}`, false},
		{"explicit zero deadline", `{"remote_deadline_s":0,` + body + `}`, false},
		{"explicit null wire", `{"wire":null,` + body + `}`, false},
		{"too large", `{"purpose":"` + strings.Repeat("a", MaxRouteBytes) + `"}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			e := wantRefusal(t, err, "route")
			var se *canon.SyntaxError
			if got := errors.As(err, &se); got != c.syntax {
				t.Errorf("carries a *canon.SyntaxError: %v, want %v (%v)", got, c.syntax, err)
			}
			if e.Name != "" {
				t.Errorf("a document that does not parse names route %q", e.Name)
			}
		})
	}
}

// routeCases are single-field departures from a valid route, each refused
// by Validate naming its field. The canary is planted where a value can
// carry it.
func routeCases(t testing.TB) []struct {
	name, field string
	base        func(testing.TB) *receipts.Route
	edit        func(*receipts.Route)
} {
	irr, rev := irreversibleRoute, reversibleRoute
	return []struct {
		name, field string
		base        func(testing.TB) *receipts.Route
		edit        func(*receipts.Route)
	}{
		{"schema", "schema", irr, func(r *receipts.Route) { r.Schema = "DisclosurePlan@1" }},
		{"name empty", "name", irr, func(r *receipts.Route) { r.Name = "" }},
		{"name with space", "name", irr, func(r *receipts.Route) { r.Name = "a " + canary }},
		{"name leading dot", "name", irr, func(r *receipts.Route) { r.Name = ".hidden" }},
		{"name too long", "name", irr, func(r *receipts.Route) { r.Name = strings.Repeat("a", 65) }},
		{"name with slash", "name", irr, func(r *receipts.Route) { r.Name = "a/b" }},
		{"consumer kind empty", "consumer", irr, func(r *receipts.Route) { r.Consumer.Kind = "" }},
		{"consumer id empty", "consumer", irr, func(r *receipts.Route) { r.Consumer.ID = "" }},
		{"consumer kind with colon", "consumer", irr, func(r *receipts.Route) { r.Consumer.Kind = "model:" + canary }},
		{"consumer id with bidi", "consumer", irr, func(r *receipts.Route) { r.Consumer.ID = canary + "\u202e" }},
		{"purpose empty", "purpose", irr, func(r *receipts.Route) { r.Purpose = "" }},
		{"purpose with newline", "purpose", irr, func(r *receipts.Route) { r.Purpose = canary + "\n" }},
		{"purpose with zero width", "purpose", irr, func(r *receipts.Route) { r.Purpose = canary + "\u200b" }},
		{"target ftp", "target", irr, func(r *receipts.Route) { r.Target = "ftp://" + canary + "/" }},
		{"target relative", "target", irr, func(r *receipts.Route) { r.Target = "/v1/" + canary }},
		{"target user info", "target", irr, func(r *receipts.Route) { r.Target = "https://" + canary + "@model.example/" }},
		{"target fragment", "target", irr, func(r *receipts.Route) { r.Target = "https://model.example/#" + canary }},
		{"target no host", "target", irr, func(r *receipts.Route) { r.Target = "https:///" + canary }},
		{"target with bidi", "target", irr, func(r *receipts.Route) { r.Target = "https://model.example/\u202e" + canary }},
		{"mode", "mode", irr, func(r *receipts.Route) { r.Mode = "both" }},
		{"wire unknown profile", "wire.profile", irr, func(r *receipts.Route) {
			r.Wire = &receipts.Wire{Profile: "grpc@1"}
		}},
		{"wire export with model", "wire", irr, func(r *receipts.Route) {
			r.Wire = &receipts.Wire{Profile: receipts.WireExport, Model: canary}
		}},
		{"wire export with instruction", "wire", irr, func(r *receipts.Route) {
			r.Wire = &receipts.Wire{Profile: receipts.WireExport, Instruction: canary}
		}},
		{"wire export with max tokens", "wire", irr, func(r *receipts.Route) {
			r.Wire = &receipts.Wire{Profile: receipts.WireExport, MaxOutputTokens: 5}
		}},
		{"wire model empty", "wire.model", rev, func(r *receipts.Route) { r.Wire.Model = "" }},
		{"wire model with space", "wire.model", rev, func(r *receipts.Route) { r.Wire.Model = "gpt " + canary }},
		{"wire model non-ASCII", "wire.model", rev, func(r *receipts.Route) { r.Wire.Model = canary + "é" }},
		{"wire instruction empty", "wire.instruction", rev, func(r *receipts.Route) { r.Wire.Instruction = "" }},
		{"wire instruction invalid UTF-8", "wire.instruction", rev, func(r *receipts.Route) { r.Wire.Instruction = canary + "\xff" }},
		{"wire instruction bidi", "wire.instruction", rev, func(r *receipts.Route) { r.Wire.Instruction = canary + "\u2066" }},
		{"wire instruction control", "wire.instruction", rev, func(r *receipts.Route) { r.Wire.Instruction = canary + "\r" }},
		{"wire instruction C1", "wire.instruction", rev, func(r *receipts.Route) { r.Wire.Instruction = canary + "\u0085" }},
		{"wire instruction noncharacter", "wire.instruction", rev, func(r *receipts.Route) { r.Wire.Instruction = canary + "\ufffe" }},
		{"wire max tokens", "wire.max_output_tokens", rev, func(r *receipts.Route) { r.Wire.MaxOutputTokens = 0 }},
		{"categories credential allowed", "categories", irr, func(r *receipts.Route) {
			r.Categories.Allowed = append(r.Categories.Allowed, "credential")
			r.Categories.Prohibited = nil
		}},
		{"categories both", "categories", irr, func(r *receipts.Route) { r.Categories.Prohibited = append(r.Categories.Prohibited, "module") }},
		{"categories missing one", "categories", irr, func(r *receipts.Route) { r.Categories.Allowed = r.Categories.Allowed[1:] }},
		{"categories unknown", "categories", irr, func(r *receipts.Route) { r.Categories.Allowed = append(r.Categories.Allowed, canary) }},
		{"categories twice", "categories", irr, func(r *receipts.Route) { r.Categories.Allowed = append(r.Categories.Allowed, "host") }},
		{"categories out of order", "categories", irr, func(r *receipts.Route) {
			r.Categories.Allowed[0], r.Categories.Allowed[1] = r.Categories.Allowed[1], r.Categories.Allowed[0]
		}},
		{"categories none allowed", "categories", irr, func(r *receipts.Route) {
			r.Categories = receipts.PlanCategories{Allowed: []string{}, Prohibited: Categories()}
		}},
		{"vocabulary digest keyed", "vocabulary_digest", irr, func(r *receipts.Route) {
			r.VocabularyDigest = "hmac-sha256:" + strings.Repeat("0", 64)
		}},
		{"vocabulary digest malformed", "vocabulary_digest", irr, func(r *receipts.Route) { r.VocabularyDigest = canary }},
		{"output schema missing (reversible)", "output_schema_digest", rev, func(r *receipts.Route) {
			r.OutputSchemaDigest = ""
			r.Wire = nil
		}},
		{"output schema missing (wire)", "output_schema_digest", irr, func(r *receipts.Route) {
			r.Wire = &receipts.Wire{Profile: receipts.WireAnthropicMessages, Model: "claude-test", Instruction: "Rank.", MaxOutputTokens: 10}
		}},
		{"output schema on irreversible export", "output_schema_digest", irr, func(r *receipts.Route) {
			r.OutputSchemaDigest = "sha256:" + strings.Repeat("1", 64)
		}},
		{"output schema keyed", "output_schema_digest", rev, func(r *receipts.Route) {
			r.OutputSchemaDigest = "hmac-sha256:" + strings.Repeat("1", 64)
		}},
		{"max uses 0", "max_uses", irr, func(r *receipts.Route) { r.MaxUses = 0 }},
		{"max uses negative", "max_uses", irr, func(r *receipts.Route) { r.MaxUses = -1 }},
		{"max lifetime 0", "max_lifetime_s", irr, func(r *receipts.Route) { r.MaxLifetimeS = 0 }},
		{"max lifetime too long", "max_lifetime_s", irr, func(r *receipts.Route) { r.MaxLifetimeS = MaxSeconds + 1 }},
		{"threat model empty", "threat_model", irr, func(r *receipts.Route) { r.ThreatModel = "" }},
		{"threat model control", "threat_model", irr, func(r *receipts.Route) { r.ThreatModel = canary + "\x00" }},
		{"retention empty", "retention", irr, func(r *receipts.Route) { r.Retention = "" }},
		{"retention unknown", "retention", rev, func(r *receipts.Route) { r.Retention = canary }},
		{"remote deadline 0", "remote_deadline_s", rev, func(r *receipts.Route) { r.RemoteDeadlineS = 0 }},
		{"remote deadline too long", "remote_deadline_s", rev, func(r *receipts.Route) { r.RemoteDeadlineS = MaxSeconds + 1 }},
		{"return window 0", "return_window_s", rev, func(r *receipts.Route) { r.ReturnWindowS = 0 }},
		{"return window too long", "return_window_s", rev, func(r *receipts.Route) { r.ReturnWindowS = MaxSeconds + 1 }},
		{"station empty", "station", rev, func(r *receipts.Route) { r.Station = "" }},
		{"station invisible", "station", rev, func(r *receipts.Route) { r.Station = canary + "\u00ad" }},
		{"irreversible remote deadline", "remote_deadline_s", irr, func(r *receipts.Route) { r.RemoteDeadlineS = 5 }},
		{"irreversible return window", "return_window_s", irr, func(r *receipts.Route) { r.ReturnWindowS = 5 }},
		{"irreversible station", "station", irr, func(r *receipts.Route) { r.Station = canary }},
		{"max parents 0", "max_parents", irr, func(r *receipts.Route) { r.MaxParents = 0 }},
	}
}

// TestValidateRefuses: every single-field departure refuses PLAN_MISMATCH
// naming its field (and the route, when its name is one), both from
// Validate and from Parse of its canonical form, without quoting a value.
func TestValidateRefuses(t *testing.T) {
	for _, c := range routeCases(t) {
		t.Run(c.name, func(t *testing.T) {
			r := c.base(t)
			if err := Validate(r); err != nil {
				t.Fatalf("base route refused: %v", err)
			}
			c.edit(r)
			e := wantRefusal(t, Validate(r), c.field)
			if c.field != "name" && e.Name != r.Name {
				t.Errorf("names route %q, want %q", e.Name, r.Name)
			}
			if c.field == "name" && e.Name != "" {
				t.Errorf("an invalid name is named: %q", e.Name)
			}
			if doc, err := canon.Marshal(r); err == nil {
				_, err := Parse(doc)
				wantRefusal(t, err, c.field)
			}
		})
	}
	wantRefusal(t, Validate(nil), "route")
}

// planOf copies a route's fields into a plan as Instantiate does, without
// any check: what the censor would be given.
func planOf(r *receipts.Route, v *grammar.Vocabulary) *receipts.Plan {
	p := &receipts.Plan{
		Schema: receipts.SchemaPlan, Consumer: r.Consumer, Purpose: r.Purpose, Target: r.Target, Mode: r.Mode,
		ManifestDigest: "hmac-sha256:" + strings.Repeat("a", 64), RestrictedRef: "hmac-sha256:" + strings.Repeat("b", 64),
		Invariants: receipts.RequiredInvariants, ThreatModel: r.ThreatModel, Retention: r.Retention, MaxUses: r.MaxUses,
		Categories: r.Categories, VocabularyDigest: r.VocabularyDigest, MaxParents: r.MaxParents,
		ExpiresAt: testNow.Add(time.Hour).Format(time.RFC3339), PolicyRevision: receipts.PolicyRevision,
		RemoteDeadlineS: r.RemoteDeadlineS, ReturnWindowS: r.ReturnWindowS, Station: r.Station,
		OutputSchemaDigest: r.OutputSchemaDigest, Wire: r.Wire,
	}
	return p
}

// TestRulesAgreeWithCensor: the route's rules include the censor's. For
// every departure, when censor.CheckPlan refuses the plan made of the
// route's fields, Validate refuses the route; the valid routes' plans pass
// CheckPlan; and the cases cover every field CheckPlan checks that a route
// carries.
func TestRulesAgreeWithCensor(t *testing.T) {
	v := exampleVocabulary(t)
	for _, r := range []*receipts.Route{irreversibleRoute(t), reversibleRoute(t)} {
		if _, err := censor.CheckPlan(planOf(r, v), v, r.Mode); err != nil {
			t.Fatalf("%s: censor refuses the plan of a valid route: %v", r.Name, err)
		}
	}
	censorFields := map[string]bool{}
	extra := []struct {
		name string
		edit func(*receipts.Route)
	}{
		// Departures only the censor's vocabulary check can see.
		{"other vocabulary", func(r *receipts.Route) { r.VocabularyDigest = "sha256:" + strings.Repeat("0", 64) }},
	}
	for _, c := range routeCases(t) {
		r := c.base(t)
		c.edit(r)
		mode := r.Mode
		if mode != receipts.ModeReversible {
			mode = receipts.ModeIrreversible
		}
		_, cerr := censor.CheckPlan(planOf(r, v), v, mode)
		if cerr == nil {
			continue
		}
		var re *censor.RefusedError
		if !errors.As(cerr, &re) {
			t.Fatalf("%s: censor: %v", c.name, cerr)
		}
		censorFields[re.Field] = true
		if Validate(r) == nil {
			t.Errorf("%s: the censor refuses (%s), the route is accepted", c.name, re.Field)
		}
	}
	for _, c := range extra {
		r := irreversibleRoute(t)
		c.edit(r)
		if _, err := censor.CheckPlan(planOf(r, v), v, r.Mode); err == nil {
			t.Errorf("%s: the censor accepts", c.name)
		}
		// The route is valid: the vocabulary is checked at instantiation.
		if err := Validate(r); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		_, err := Instantiate(r, mustDigest(t, r), Instance{ManifestDigest: "hmac-sha256:" + strings.Repeat("a", 64),
			RestrictedRef: "hmac-sha256:" + strings.Repeat("b", 64), VocabularyDigest: v.Digest(), Now: testNow})
		wantRefusal(t, err, "vocabulary_digest")
	}
	// The censor's fields a route carries (schema, invariants, policy
	// revision and expiry are the plan's own).
	for _, f := range []string{"mode", "consumer", "purpose", "target", "max_uses", "max_parents", "vocabulary_digest",
		"threat_model", "reversible", "output_schema_digest", "retention", "categories"} {
		if !censorFields[f] {
			t.Errorf("no departure makes the censor refuse field %s", f)
		}
	}
}

// TestCategoriesAreTheGrammars: the route's category list is the
// grammar's, in its order.
func TestCategoriesAreTheGrammars(t *testing.T) {
	var want []string
	for _, c := range grammar.Categories() {
		want = append(want, c.String())
	}
	if d := cmp.Diff(want, Categories()); d != "" {
		t.Fatalf("categories (-grammar +route):\n%s", d)
	}
}

// TestReviewable: the characters a reviewer cannot see are refused, the
// ones they can are kept; tab and newline only in multiline text.
func TestReviewable(t *testing.T) {
	for _, c := range []struct {
		s             string
		single, multi bool
	}{
		{"plain text, é ü 日本", true, true},
		{"a\nb\tc", false, true},
		{"a\rb", false, false},
		{"\x00", false, false},
		{"\x7f", false, false},
		{"\u0085", false, false},
		{"\u061c", false, false},
		{"\u200e", false, false},
		{"\u202a", false, false},
		{"\u2069", false, false},
		{"\u00ad", false, false},
		{"\u180e", false, false},
		{"\u200b", false, false},
		{"\u2064", false, false},
		{"\ufeff", false, false},
		{"\ufdd0", false, false},
		{"\U0001ffff", false, false},
		{"\xff", false, false},
		{"\u2028 stays: it is escaped nowhere but visible as a line break", true, true},
	} {
		if got := reviewable(c.s, false); got != c.single {
			t.Errorf("reviewable(%+q, false) = %v", c.s, got)
		}
		if got := reviewable(c.s, true); got != c.multi {
			t.Errorf("reviewable(%+q, true) = %v", c.s, got)
		}
	}
}

// FuzzValidTarget: the route's target rule is the censor's.
func FuzzValidTarget(f *testing.F) {
	for _, s := range []string{"https://model.example/v1/answer", "http://127.0.0.1:8080/", "ftp://x/", "https://u@x/",
		"https://x/#f", "https:///x", "HTTPS://X/", "https://x/%zz", "https://[::1]/", "//x/", "https://x/ y", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validTarget(s), censor.ValidTarget(s); got != want {
			t.Fatalf("validTarget(%q) = %v, censor says %v", s, got, want)
		}
	})
}

// FuzzParse: the route decoder either refuses with a content-free
// PLAN_MISMATCH *Error, or accepts a route whose canonical form parses back
// to it, whose digest is S(canonical form), and from which a plan the
// censor accepts is instantiated.
func FuzzParse(f *testing.F) {
	for _, r := range []*receipts.Route{irreversibleRoute(f), reversibleRoute(f)} {
		c, err := Canonical(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(c)
		r.Purpose = canary
		c, _ = Canonical(r)
		f.Add(c)
		f.Add(bytes.Replace(c, []byte(`"max_uses":3`), []byte(`"max_uses":0`), 1))
		f.Add(bytes.Replace(c, []byte(`"mode":"`), []byte(`"station":"","mode":"`), 1))
	}
	f.Add([]byte(`{"schema":"DisclosureRoute@1"}`))
	v := exampleVocabulary(f)
	f.Fuzz(func(t *testing.T, doc []byte) {
		r, err := Parse(doc)
		if err != nil {
			e := checkContentFree(t, err, doc)
			if e.Name != "" && !validName(e.Name) {
				t.Fatalf("names an invalid route name")
			}
			return
		}
		c, err := Canonical(r)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := Parse(c)
		if err != nil {
			t.Fatalf("canonical form refused: %v", err)
		}
		if d := cmp.Diff(r, r2); d != "" {
			t.Fatalf("round trip (-first +second):\n%s", d)
		}
		cd, err := canon.Canonicalize(doc)
		if err != nil || !bytes.Equal(cd, c) {
			t.Fatalf("accepted document is not its fields' canonical form")
		}
		if mustDigest(t, r) != receipts.SHA256(c) {
			t.Fatal("digest is not S(canonical form)")
		}
		// Any accepted route, over the example vocabulary, makes a plan
		// the censor accepts.
		r.VocabularyDigest = v.Digest()
		p, err := Instantiate(r, mustDigest(t, r), Instance{ManifestDigest: "hmac-sha256:" + strings.Repeat("a", 64),
			RestrictedRef: "hmac-sha256:" + strings.Repeat("b", 64), VocabularyDigest: v.Digest(), Now: testNow})
		if err != nil {
			t.Fatalf("valid route not instantiated: %v", err)
		}
		if _, err := censor.CheckPlan(p, v, r.Mode); err != nil {
			t.Fatalf("the censor refuses a plan of a valid route: %v", err)
		}
		if err := censor.CheckExpiry(p, testNow); err != nil {
			t.Fatalf("the censor says the plan has expired: %v", err)
		}
	})
}

// fields are every field an *Error may name.
var fields = map[string]bool{
	"route": true, "trust": true, "key": true, "schema": true, "name": true, "consumer": true, "purpose": true,
	"target": true, "mode": true, "wire": true, "wire.profile": true, "wire.model": true, "wire.instruction": true,
	"wire.max_output_tokens": true, "categories": true, "vocabulary_digest": true, "output_schema_digest": true,
	"max_uses": true, "max_lifetime_s": true, "threat_model": true, "retention": true, "remote_deadline_s": true,
	"return_window_s": true, "station": true, "max_parents": true, "route_digest": true, "manifest_digest": true,
	"restricted_ref": true, "invariants": true, "expires_at": true, "policy_revision": true,
}

// checkContentFree checks that err is a PLAN_MISMATCH *Error of a known
// field whose text is made of its fields alone: names of valid shape, a
// reason that quotes nothing of input (no canary), and at most a
// *canon.SyntaxError.
func checkContentFree(t *testing.T, err error, input []byte) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v, want *route.Error", err, err)
	}
	if e.Code != receipts.PlanMismatch || !fields[e.Field] {
		t.Fatalf("code %s field %q", e.Code, e.Field)
	}
	for _, k := range e.Keys {
		if !validName(k) {
			t.Fatalf("names a key of invalid shape")
		}
	}
	if e.Err != nil {
		var se *canon.SyntaxError
		if !errors.As(e.Err, &se) {
			t.Fatalf("wraps %T", e.Err)
		}
	}
	if strings.Contains(e.Reason, canary) || strings.Contains(err.Error(), canary) {
		t.Fatalf("error quotes the canary")
	}
	if bytes.Contains(input, []byte(canary)) && strings.Contains(err.Error(), canary) {
		t.Fatalf("error quotes input")
	}
	return e
}
