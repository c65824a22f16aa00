package route_test

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	"github.com/privacycut/privacycut/route"
)

// A reviewer makes a key and approves a route once; every disclosure then
// gets its own plan, made from the route for its projection and checked
// against it before anything is sent.
func Example() {
	// cut route keygen --name security-review -o review.key
	signer, err := route.GenerateKey(rand.Reader, "security-review")
	if err != nil {
		panic(err)
	}
	defer signer.Wipe()
	trust, err := route.NewTrust(signer.VerifierKey()) // what --trust names
	if err != nil {
		panic(err)
	}

	// cut route approve --key review.key -o payments.note payments.json
	doc := []byte(`{
	  "schema": "DisclosureRoute@1",
	  "name": "payments-triage",
	  "consumer": {"kind": "model", "id": "triage-bot"},
	  "purpose": "dependency-triage",
	  "target": "https://model.example/v1/answer",
	  "mode": "irreversible",
	  "categories": {"allowed": ["module", "package", "function", "file", "team", "person", "host"],
	                 "prohibited": ["credential"]},
	  "vocabulary_digest": "sha256:` + strings.Repeat("1", 64) + `",
	  "max_uses": 2,
	  "max_lifetime_s": 3600,
	  "threat_model": "remote-model-honest-but-curious",
	  "retention": "no-retention",
	  "max_parents": 64
	}`)
	note, err := route.Approve(signer, doc)
	if err != nil {
		panic(err)
	}

	// cut plan init --route payments.note --trust review.vkey PROJ
	approved, err := route.Open(note, trust)
	if err != nil {
		panic(err)
	}
	fmt.Println("approved:", approved.Route.Name, "by", approved.Signers)
	now := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	plan, err := route.Instantiate(approved.Route, approved.Digest, route.Instance{
		// censor.ManifestDigest and the keyed source digest of the projection.
		ManifestDigest:   "hmac-sha256:" + strings.Repeat("a", 64),
		RestrictedRef:    "hmac-sha256:" + strings.Repeat("b", 64),
		VocabularyDigest: "sha256:" + strings.Repeat("1", 64),
		Now:              now,
		Lifetime:         15 * time.Minute,
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("plan expires:", plan.ExpiresAt, "uses:", plan.MaxUses)

	// cut prepare/send --route payments.note --trust review.vkey --plan P
	fmt.Println("check:", route.Check(plan, approved.Route, approved.Digest, now))
	plan.MaxUses = 50
	fmt.Println("edited:", route.Check(plan, approved.Route, approved.Digest, now))
	plan.MaxUses = 2
	_, err = route.Instantiate(approved.Route, approved.Digest, route.Instance{
		ManifestDigest: plan.ManifestDigest, RestrictedRef: plan.RestrictedRef,
		VocabularyDigest: plan.VocabularyDigest, Now: now, Lifetime: 2 * time.Hour})
	fmt.Println("too long:", err)
	// Output:
	// approved: payments-triage by [security-review]
	// plan expires: 2026-12-01T09:45:00Z uses: 2
	// check: <nil>
	// edited: route: route payments-triage: max_uses: departs from the route [PLAN_MISMATCH]
	// too long: route: route payments-triage: expires_at: lifetime past the route's max_lifetime_s [PLAN_MISMATCH]
}
