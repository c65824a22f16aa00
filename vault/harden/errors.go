package harden

import (
	"errors"
	"strconv"
	"strings"

	"github.com/privacycut/privacycut/receipts"
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

// Error is the package's error type. Step names the hardening item or the
// /proc file, Line the 1-based line of a parse failure (0 when none). It never
// quotes file content.
type Error struct {
	Code receipts.Code // VAULT_PROFILE_NOT_PROVEN
	Step string        // "core_limit", "dumpable", "smaps", "limits", …
	Line int
	Msg  string // a fixed description, never input bytes
	Err  error  // a sentinel
	Sys  error  // the system error behind it, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("harden: ")
	b.WriteString(e.Step)
	if e.Line > 0 {
		b.WriteString(":")
		b.WriteString(strconv.Itoa(e.Line))
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Sys != nil {
		b.WriteString(": ")
		b.WriteString(e.Sys.Error())
	}
	if e.Code != "" {
		b.WriteString(" (")
		b.WriteString(string(e.Code))
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the sentinel and, if present, the system error.
func (e *Error) Unwrap() []error {
	if e.Sys != nil {
		return []error{e.Err, e.Sys}
	}
	return []error{e.Err}
}

func parseError(file string, line int, msg string) *Error {
	return &Error{Code: receipts.VaultProfileNotProven, Step: file, Line: line, Msg: msg, Err: ErrParse}
}

func applyError(step, msg string, sys error) *Error {
	return &Error{Code: receipts.VaultProfileNotProven, Step: step, Msg: msg, Err: ErrNotApplied, Sys: sys}
}
