package censor

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// TestBinding: a cut given the Binding of its own document and key is the
// cut made without one; a Binding of another document or key is not used,
// so it cannot make a plan bind a projection it does not: the plan is still
// checked against the document's own digests.
func TestBinding(t *testing.T) {
	d, v := exampleInputs(t)
	k := testKey(t, 1)
	p := plan(t, d, v, k)
	b, err := Bind(d, k)
	if err != nil {
		t.Fatal(err)
	}
	if b.ManifestDigest() != p.ManifestDigest || b.RestrictedRef() != p.RestrictedRef {
		t.Fatal("the binding is not what the plan binds")
	}
	without, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: p, Key: k})
	if err != nil {
		t.Fatal(err)
	}
	with, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: p, Key: k, Binding: b})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(without, with); diff != "" {
		t.Errorf("a cut with its binding differs (-without +with):\n%s", diff)
	}

	// Another projection's binding, or this one's under another key, given
	// with this projection and a plan made to match it: the cut still
	// refuses the plan, from this document's own digests under k.
	other, refs := grammar.LoadProjection([]byte(`{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[{"kind":"block","key":"k","text":"ask triage.rank-by-severity\n","label":{"class":"private","weight":1,"categories":[],"subjects":[],"parents":[],"handling":[]},"lineage":[]}]}`), grammar.LoadOptions{})
	if refs != nil {
		t.Fatal(refs)
	}
	ob, err := Bind(other, k)
	if err != nil {
		t.Fatal(err)
	}
	for name, bb := range map[string]*Binding{"another document's": ob, "another key's": mustBind(t, d, testKey(t, 2))} {
		// A plan made to match the binding, not this document under k.
		forged := *p
		forged.ManifestDigest, forged.RestrictedRef = bb.ManifestDigest(), bb.RestrictedRef()
		_, err := Cut(context.Background(), Input{Doc: d, Vocabulary: v, Plan: &forged, Key: k, Binding: bb})
		var re *RefusedError
		if !errors.As(err, &re) || re.Refusals[0].Code != receipts.PlanMismatch || re.Field != "manifest_digest" {
			t.Errorf("%s binding: %v, want PLAN_MISMATCH on manifest_digest", name, err)
		}
	}
}

func mustBind(t *testing.T, d *grammar.Document, k *receipts.EvidenceKey) *Binding {
	t.Helper()
	b, err := Bind(d, k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
