package service

import (
	"errors"
	"strings"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/keys"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/store"
)

// Sentinel errors for failures that are not policy refusals (their *Error
// has no Code).
var (
	// ErrNotFound: no lease with that id.
	ErrNotFound = errors.New("no such lease")
	// ErrInvalid: a malformed request field (named in Field).
	ErrInvalid = errors.New("invalid request")
	// ErrForbidden: the principal may not perform this operation on the
	// lease.
	ErrForbidden = errors.New("principal not authorised for this lease")
	// ErrStaleKey: the values were sealed to another vault public key (an
	// earlier boot); fetch Status again and reseal.
	ErrStaleKey = errors.New("values sealed to another vault key")
	// ErrClosed: the vault is closed.
	ErrClosed = errors.New("vault closed")
	// ErrDirsOverlap: the key directory is the state directory, or one
	// holds the other. Keys must live outside what a copy of the state
	// directory carries.
	ErrDirsOverlap = errors.New("key directory and state directory overlap")
	// ErrInternal: anything else; the cause is logged, not returned.
	ErrInternal = errors.New("internal error")
)

// Error is every error the service returns. Code is the refusal code
// (receipts.Code) when the failure is a policy refusal, else empty and Err
// is one of the sentinels above. Field names a request field. It never
// carries a value, a token or map bytes.
type Error struct {
	Code  receipts.Code
	Op    string
	Field string
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("vault: ")
	b.WriteString(e.Op)
	b.WriteString(": ")
	switch {
	case e.Code != "" && e.Err != nil:
		b.WriteString(string(e.Code))
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	case e.Code != "":
		b.WriteString(string(e.Code))
	case e.Err != nil:
		b.WriteString(e.Err.Error())
	}
	if e.Field != "" {
		b.WriteString(" (field ")
		b.WriteString(e.Field)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the sentinel, if any.
func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the refusal code carried by err, or "".
func CodeOf(err error) receipts.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func refusal(op string, code receipts.Code) *Error { return &Error{Code: code, Op: op} }

func invalid(op, field string) *Error { return &Error{Op: op, Field: field, Err: ErrInvalid} }

// codeOf extracts a refusal code from an error of the packages the service
// builds on.
func codeOf(err error) receipts.Code {
	if c := lease.CodeOf(err); c != "" {
		return c
	}
	if c := keys.CodeOf(err); c != "" {
		return c
	}
	if c := store.CodeOf(err); c != "" {
		return c
	}
	var ae *arena.Error
	if errors.As(err, &ae) && ae.Code != "" {
		return ae.Code
	}
	var se *seal.Error
	if errors.As(err, &se) && se.Code != "" {
		return se.Code
	}
	return ""
}

// classify turns an error from below into an *Error: a refusal keeps its
// code, known classes keep their sentinel, and anything else is logged by
// the caller and becomes ErrInternal.
func classify(op string, err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	if code := codeOf(err); code != "" {
		return &Error{Code: code, Op: op}, true
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &Error{Op: op, Err: ErrNotFound}, true
	case errors.Is(err, store.ErrInvalid), errors.Is(err, keys.ErrInvalid), errors.Is(err, lease.ErrInvalid):
		field := ""
		var le *lease.Error
		if errors.As(err, &le) {
			field = le.Field
		}
		return &Error{Op: op, Field: field, Err: ErrInvalid}, true
	case errors.Is(err, seal.ErrKey):
		return &Error{Op: op, Err: ErrStaleKey}, true
	}
	return &Error{Op: op, Err: ErrInternal}, false
}
