package egress

import "github.com/privacycut/privacycut/receipts"

// UnverifiedSeal is a seal request whose verification is a plain
// receipts.Verification, for the tests of the seal's checks, which need
// verifications no verifier would write. It exists only in this package's
// test binary.
type UnverifiedSeal = sealInput

// SealUnverified seals req as Seal seals a request carrying a verdict.
func (a *Authority) SealUnverified(req UnverifiedSeal) (receipts.PrivacyCut, error) {
	return a.seal(req)
}

// Syncs returns how many times the journal has synced its file, and
// whether a line it wrote is not synced yet.
func (j *Journal) Syncs() (int, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.syncs, j.pending
}
