package harden

import (
	"errors"
	"strconv"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/verr"
)

// Sentinel errors, wrapped by every *Error.
var (
	// ErrNotApplied: a hardening setting did not take effect (the call
	// failed, or re-reading the kernel state showed another value).
	ErrNotApplied = errors.New("hardening not applied")

	// ErrNotSupported: the platform has no such control.
	ErrNotSupported = errors.New("not supported on this platform")

	// ErrParse: a /proc file did not have the expected shape.
	ErrParse = errors.New("unexpected /proc format")
)

// Error is the package's error type: the shared core (code
// VAULT_PROFILE_NOT_PROVEN; Op names the hardening item or the /proc file:
// "core_limit", "dumpable", "smaps", "limits", …; a sentinel; the system
// error behind it), the 1-based line of a parse failure (0 when none) and a
// fixed description. It never quotes file content.
type Error struct {
	verr.Core
	Line int
	Msg  string // a fixed description, never input bytes
}

func (e *Error) Error() string {
	at := ""
	if e.Line > 0 {
		at = ":" + strconv.Itoa(e.Line)
	}
	return e.Text("harden", at, e.Msg)
}

func parseError(file string, line int, msg string) *Error {
	return &Error{Core: verr.Core{Code: receipts.VaultProfileNotProven, Op: file, Err: ErrParse}, Line: line, Msg: msg}
}

func applyError(step, msg string, sys error) *Error {
	return &Error{Core: verr.Core{Code: receipts.VaultProfileNotProven, Op: step, Err: ErrNotApplied, Sys: sys}, Msg: msg}
}
