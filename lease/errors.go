package lease

import (
	"errors"
	"strings"

	"github.com/privacycut/privacycut/receipts"
)

// Sentinel causes for errors that are not policy refusals. An *Error unwraps
// to one of them when its Code is empty.
var (
	// ErrInvalid: an argument (or a lease field given to New) is malformed.
	// It is a caller bug, never a refusal of policy.
	ErrInvalid = errors.New("invalid argument")
	// ErrIllegal: the move is not a transition of the state machine in the
	// lease's state (expiry before the deadline, key destruction of a live
	// lease). It is a caller bug.
	ErrIllegal = errors.New("illegal transition")
	// ErrNotForward: Forward found a later record that is not reachable from
	// the earlier one (a lost or reordered transition).
	ErrNotForward = errors.New("not a forward transition")
)

// Error is every error this package returns. It carries only public facts:
// the refusal code, the operation, the lease's state and the name of a field.
// It never carries a field's value: no run id, principal, digest or time.
type Error struct {
	// Code is the refusal code (LEASE_NOT_ACTIVE, LEASE_CLAIM_CONFLICT,
	// LEASE_DURABILITY_INSUFFICIENT, LEASE_UNRECOVERABLE), or empty when the
	// error is a caller bug described by Err.
	Code receipts.Code
	// Op is the operation: "new", "need", "bind", "claim", "consume",
	// "revoke", "expire", "apply", "destroy-key", "recover", "check",
	// "forward", "parse-state" or "marshal-state".
	Op string
	// State is the lease's state when the operation was refused, or
	// StateUnknown when there was no lease or its state is illegal.
	State State
	// Field names the field at fault (its JSON name, "claim.run" for a claim
	// tuple member), for invalid arguments and broken invariants.
	Field string
	// Err is ErrInvalid, ErrIllegal or ErrNotForward, or nil for a refusal.
	Err error
}

var _ error = (*Error)(nil)

// Error renders "lease: <op>: <code or cause>[ (field <f>)][ in state <s>]".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("lease: ")
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
	default:
		b.WriteString("error")
	}
	if e.Field != "" {
		b.WriteString(" (field ")
		b.WriteString(e.Field)
		b.WriteString(")")
	}
	if e.State.Valid() {
		b.WriteString(" in state ")
		b.WriteString(e.State.String())
	}
	return b.String()
}

// Unwrap returns the sentinel cause, if any.
func (e *Error) Unwrap() error { return e.Err }

// CodeOf returns the refusal code carried by err, or "" when err is nil, is
// not from this package, or is a caller bug.
func CodeOf(err error) receipts.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func refuse(op string, code receipts.Code, s State) *Error {
	return &Error{Code: code, Op: op, State: s}
}

func invalid(op, field string) *Error {
	return &Error{Op: op, Field: field, Err: ErrInvalid}
}

func corrupt(op, field string, s State) *Error {
	if !s.Valid() {
		s = StateUnknown
	}
	return &Error{Code: receipts.LeaseUnrecoverable, Op: op, State: s, Field: field}
}
