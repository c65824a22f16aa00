// Package attest holds the one form of a CutVerification@1 that the seal
// authority accepts. Being internal to the verifier, it can be made only by
// the verifier's packages: in process by running the checks, or by the
// plugin host from the plugin's answer.
package attest

import "github.com/privacycut/privacycut/receipts"

// Verdict is a verification made by the verifier. Its zero value holds no
// verification (and a zero receipts.Verification never passes).
type Verdict struct{ v receipts.Verification }

// Make wraps v, which the calling verifier package made.
func Make(v receipts.Verification) Verdict { return Verdict{v: v} }

// Verification returns a copy of the verification.
func (d Verdict) Verification() receipts.Verification {
	v := d.v
	v.Claims = append([]receipts.Claim(nil), d.v.Claims...)
	return v
}
