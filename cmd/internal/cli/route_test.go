package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// routeEnv approves a route for the test projection's vocabulary with a
// new signer key, and returns the note and the trust file.
func routeEnv(t *testing.T, e *testEnv, name string, edit func(map[string]any)) (note, trust string) {
	t.Helper()
	key := filepath.Join(e.dir, name+".key")
	code, out, errb := e.run(t, "route", "keygen", "--name", name, "-o", key)
	if code != ExitOK {
		t.Fatalf("route keygen: exit %d: %s", code, errb)
	}
	trust = e.write(t, name+".vkeys", string(out))
	if err := os.Chmod(trust, 0o644); err != nil {
		t.Fatal(err)
	}
	vb, err := os.ReadFile(e.vocab)
	if err != nil {
		t.Fatal(err)
	}
	c, err := canon.Canonicalize(vb)
	if err != nil {
		t.Fatal(err)
	}
	r := map[string]any{
		"schema": "DisclosureRoute@1", "name": "triage", "consumer": map[string]any{"kind": "model", "id": "triage"},
		"purpose": "dependency-triage", "target": "https://model.example/v1/answer", "mode": "irreversible",
		"categories": map[string]any{"allowed": []string{"module", "package", "function", "file", "team", "person", "host"},
			"prohibited": []string{"credential"}},
		"vocabulary_digest": receipts.SHA256(c), "max_uses": 1, "max_lifetime_s": 3600,
		"threat_model": "remote-model-honest-but-curious", "retention": "no-retention", "max_parents": 64,
	}
	if edit != nil {
		edit(r)
	}
	doc, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	rp := e.write(t, name+"-route.json", string(doc))
	note = filepath.Join(e.dir, name+".note")
	if code, _, errb := e.run(t, "route", "approve", "--key", key, "-o", note, rp); code != ExitOK {
		t.Fatalf("route approve: exit %d: %s", code, errb)
	}
	return note, trust
}

// TestRoutes: a plan made from an approved route prepares under it; an
// edited plan, a route signed by an untrusted key and a lifetime past the
// route's max_lifetime_s are each refused PLAN_MISMATCH (exit 3), naming
// the field, and nothing of the projection is printed.
func TestRoutes(t *testing.T) {
	e, proj, _ := cutEnv(t, "https://model.example/v1/answer")
	note, trust := routeEnv(t, e, "reviewer.example", nil)
	_, otherTrust := routeEnv(t, e, "other.example", nil)
	plan := filepath.Join(e.dir, "route-plan.json")
	if code, _, errb := e.run(t, "plan", "init", "--vocab", e.vocab, "--route", note, "--trust", trust, "-o", plan, proj); code != ExitOK {
		t.Fatalf("plan init --route: exit %d: %s", code, errb)
	}
	pb, err := os.ReadFile(plan)
	if err != nil || !bytes.Contains(pb, []byte(`"route_digest":"sha256:`)) {
		t.Fatalf("the plan carries no route digest: %s %v", pb, err)
	}
	prepare := func(plan, trust string) (int, []byte, []byte) {
		return e.run(t, "prepare", "--vocab", e.vocab, "--plan", plan, "--route", note, "--trust", trust,
			"--verifier", "inprocess", "--json", proj)
	}
	if code, _, errb := prepare(plan, trust); code != ExitOK {
		t.Fatalf("prepare under the route: exit %d: %s", code, errb)
	}
	refused := func(name string, code int, out, errb []byte, field string) {
		t.Helper()
		if code != ExitRefused || !bytes.Contains(out, []byte("PLAN_MISMATCH")) || !bytes.Contains(errb, []byte(field)) {
			t.Errorf("%s: exit %d, want 3 naming %s\n%s\n%s", name, code, field, out, errb)
		}
		assertNoCanary(t, name+" stdout", out)
		assertNoCanary(t, name+" stderr", errb)
	}
	for _, tc := range []struct{ field, from, to string }{
		{"target", `"target":"https://model.example/v1/answer"`, `"target":"https://evil.example/v1/answer"`},
		{"consumer", `"id":"triage"`, `"id":"other"`},
		{"max_uses", `"max_uses":1`, `"max_uses":9`},
	} {
		edited := e.write(t, "edited-"+tc.field+".json", strings.Replace(string(pb), tc.from, tc.to, 1))
		if edited == plan || !strings.Contains(string(pb), tc.from) {
			t.Fatalf("%s: the edit changed nothing", tc.field)
		}
		code, out, errb := prepare(edited, trust)
		refused("edited "+tc.field, code, out, errb, tc.field)
	}
	code, out, errb := prepare(plan, otherTrust)
	refused("untrusted signer", code, out, errb, "route")
	code, out, errb = e.run(t, "plan", "init", "--vocab", e.vocab, "--route", note, "--trust", trust, "--expires", "2h", proj)
	refused("lifetime past max_lifetime_s", code, out, errb, "expires")
	if code, _, errb := e.run(t, "plan", "init", "--vocab", e.vocab, "--route", note, "--trust", trust, "--target", "https://x.example/", proj); code != ExitUsage {
		t.Errorf("--target with --route: exit %d, want 2: %s", code, errb)
	}
}
