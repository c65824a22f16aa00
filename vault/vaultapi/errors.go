package vaultapi

import (
	"errors"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/verr"
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
	// ErrInternal: anything else; the cause is logged, not returned.
	ErrInternal = errors.New("internal error")
	// ErrUnavailable: the vault could not be reached, or the connection
	// broke.
	ErrUnavailable = errors.New("vault unavailable")
	// ErrPeerRejected: the caller's uid is not on the vault's allow-list.
	ErrPeerRejected = errors.New("peer uid not on the allow-list")
	// ErrServerUntrusted: the process listening on the vault's socket runs
	// as a uid the client does not trust.
	ErrServerUntrusted = errors.New("the vault's socket is served by an untrusted uid")
)

// Error is every error of a vault call, in the daemon and across the
// socket: the shared core (Code, the refusal code when the failure is a
// policy refusal, else empty and Err one of the sentinels above; Op, the
// call; Sys, never set) and Field, the request field at fault. Its text is
// "vault: <op>[ (field <f>)]: <sentinel or code>[ (<code>)]". It never
// carries a value, a token or map bytes.
type Error struct {
	verr.Core
	Field string
}

func (e *Error) Error() string {
	at := ""
	if e.Field != "" {
		at = " (field " + e.Field + ")"
	}
	return e.Text("vault", at, "")
}

// New returns the error of op with every part given.
func New(code receipts.Code, op, field string, err error) *Error {
	return &Error{Core: verr.Core{Code: code, Op: op, Err: err}, Field: field}
}

// Fail returns op's failure with sentinel err.
func Fail(op string, err error) *Error { return New("", op, "", err) }

// Refuse returns op's refusal with code.
func Refuse(op string, code receipts.Code) *Error { return New(code, op, "", nil) }

// Invalid returns ErrInvalid of op, naming the field.
func Invalid(op, field string) *Error { return New("", op, field, ErrInvalid) }

// CodeOf returns the refusal code carried by err, or "".
func CodeOf(err error) receipts.Code { return verr.CodeOf[*Error](err) }
