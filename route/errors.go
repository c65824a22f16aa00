package route

import (
	"errors"
	"strconv"
	"strings"

	"github.com/privacycut/privacycut/receipts"
)

// Error is a refusal of a route, a note, a trust list or a plan. Its Code
// is always PLAN_MISMATCH. Every field is public: a field name, a fixed
// reason, and, when known, the file the caller named, the route's name (once
// it has been checked to be one) and key names of the shape keys must have.
// No byte of a route's or a plan's values, of a key or of a signature is
// ever in an Error.
type Error struct {
	Code   receipts.Code // receipts.PlanMismatch
	Field  string        // "route", "trust", or the route or plan field that is wrong
	File   string        // the file read, when the caller gave one
	Name   string        // the route's name, when it is one
	Keys   []string      // key names involved (signers, trusted keys)
	Index  int           // 1-based position of a trusted key in its list, 0 if none
	Reason string        // fixed, content-free
	Err    error         // a content-free *canon.SyntaxError, or nil
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("route: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Name != "" {
		b.WriteString("route ")
		b.WriteString(e.Name)
		b.WriteString(": ")
	}
	b.WriteString(e.Field)
	if e.Index > 0 {
		b.WriteString(" ")
		b.WriteString(strconv.Itoa(e.Index))
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	if len(e.Keys) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(e.Keys, ", "))
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	b.WriteString(" [")
	b.WriteString(string(e.Code))
	b.WriteString("]")
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// refuse returns a PLAN_MISMATCH *Error for field.
func refuse(field, reason string) *Error {
	return &Error{Code: receipts.PlanMismatch, Field: field, Reason: reason}
}

// withFile sets the file of err if it is an *Error, and returns it.
func withFile(err error, file string) error {
	var e *Error
	if errors.As(err, &e) && e.File == "" {
		e.File = file
	}
	return err
}

// ErrKeyFile is wrapped by every refusal of a signer key or trust file as
// a file: not a regular file, open to group or other, owned by another
// user, too large, or (when writing) already there.
var ErrKeyFile = errors.New("route: key file refused")

// ErrKeyWiped is returned by a signer key used after Wipe.
var ErrKeyWiped = errors.New("route: signer key is wiped")

// ErrKeyNotSerializable is returned by every encoder of a signer key.
var ErrKeyNotSerializable = errors.New("route: signer key is not serializable")
