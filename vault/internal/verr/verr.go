// Package verr is the coded error every vault package builds its Error
// type on: a refusal code, an operation, a sentinel and the system error
// behind it, rendered and unwrapped one way.
//
// Each package embeds Core in its own Error type, adds the position that
// applies to it (an arena offset, a backup byte, a key epoch, a /proc line,
// a value index, a request field) and renders it with Text. The types stay
// distinct, so errors.As still tells a store error from a key error.
//
// # Security properties
//
// Text writes the package name, the operation, the position, the
// sentinel's text, a fixed note, the system error and the code: never a
// value, a key or input bytes, provided the caller puts none in Op, the
// position or the note, and uses a Sys that carries none (a unix.Errno,
// an *os.PathError naming a file of the vault's own directories).
package verr

import (
	"errors"
	"strings"

	"github.com/privacycut/privacycut/receipts"
)

// Core is the part every vault error shares.
type Core struct {
	Code receipts.Code // the refusal code; "" when the failure is no refusal
	Op   string        // the operation (or the hardening step)
	Err  error         // the package's sentinel; nil for a bare refusal
	Sys  error         // the system error behind it; nil when none
}

// Unwrap returns the sentinel and the system error, those that are set.
func (c *Core) Unwrap() []error {
	switch {
	case c.Err != nil && c.Sys != nil:
		return []error{c.Err, c.Sys}
	case c.Err != nil:
		return []error{c.Err}
	case c.Sys != nil:
		return []error{c.Sys}
	}
	return nil
}

// Text renders the error as
//
//	<pkg>: <op><at>: <sentinel>[: <note>][: <sys>][ (<code>)]
//
// where at is the package's position ("" when none applies). A bare
// refusal (no sentinel) renders its code in the sentinel's place and not
// again at the end; an error with neither ends after the position.
func (c *Core) Text(pkg, at, note string) string {
	var b strings.Builder
	b.WriteString(pkg)
	b.WriteString(": ")
	b.WriteString(c.Op)
	b.WriteString(at)
	switch {
	case c.Err != nil:
		b.WriteString(": ")
		b.WriteString(c.Err.Error())
	case c.Code != "":
		b.WriteString(": ")
		b.WriteString(string(c.Code))
	}
	for _, s := range []string{note, sysText(c.Sys)} {
		if s != "" {
			b.WriteString(": ")
			b.WriteString(s)
		}
	}
	if c.Code != "" && c.Err != nil {
		b.WriteString(" (")
		b.WriteString(string(c.Code))
		b.WriteString(")")
	}
	return b.String()
}

func sysText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (c *Core) code() receipts.Code { return c.Code }

// Coded is satisfied by every error type that embeds Core.
type Coded interface {
	error
	code() receipts.Code
}

// CodeOf returns the refusal code of the first E in err's chain, or "".
func CodeOf[E Coded](err error) receipts.Code {
	var e E
	if errors.As(err, &e) {
		return e.code()
	}
	return ""
}
