package plugin

import (
	"context"

	"github.com/privacycut/privacycut/verifier"
	"github.com/privacycut/privacycut/verifier/internal/attest"
)

// Check verifies req in the plugin process, as Verify does, and returns the
// result as a verifier.Verdict: the form the seal authority accepts.
func (p *Pending) Check(ctx context.Context, req verifier.Request) (verifier.Verdict, error) {
	v, err := p.Verify(ctx, req)
	if err != nil {
		return verifier.Verdict{}, err
	}
	return attest.Make(v), nil
}
