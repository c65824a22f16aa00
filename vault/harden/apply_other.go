//go:build !linux

package harden

import (
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/verr"
)

// Apply reports that the hardening controls do not exist on this platform;
// the profile there is never accepted.
func Apply() error {
	return &Error{Core: verr.Core{Code: receipts.VaultProfileNotProven, Op: "apply", Err: ErrNotSupported}}
}

func getDumpable() (int, error) { return 1, ErrNotSupported }
