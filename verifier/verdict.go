package verifier

import (
	"github.com/privacycut/privacycut/verifier/internal/attest"
)

// Verdict is a CutVerification@1 made by this verifier: by [Check] in
// process, or by the plugin host from the plugin's answer. It is the only
// form of a verification that the seal authority (package egress) seals: a
// receipts.Verification built by hand, "pass" or not, does not type-check
// there, since a Verdict can be made only inside the verifier's packages.
type Verdict = attest.Verdict

// Check verifies req in this process, as [Verify] does, and returns the
// result as a Verdict.
func Check(req Request) Verdict { return attest.Make(Verify(req)) }
