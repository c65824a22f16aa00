//go:build !linux

package harden

import "github.com/privacycut/privacycut/receipts"

// Apply reports that the hardening controls do not exist on this platform;
// the profile there is never accepted.
func Apply() error {
	return &Error{Code: receipts.VaultProfileNotProven, Step: "apply", Err: ErrNotSupported}
}

func getDumpable() (int, error) { return 1, ErrNotSupported }
