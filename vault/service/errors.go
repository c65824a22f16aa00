package service

import (
	"errors"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/keys"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/store"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// Sentinel errors for failures that are not policy refusals (their *Error
// has no Code). All but ErrDirsOverlap are package vaultapi's, which the
// client returns too.
var (
	ErrNotFound  = vaultapi.ErrNotFound
	ErrInvalid   = vaultapi.ErrInvalid
	ErrForbidden = vaultapi.ErrForbidden
	ErrStaleKey  = vaultapi.ErrStaleKey
	ErrClosed    = vaultapi.ErrClosed
	ErrInternal  = vaultapi.ErrInternal
	// ErrDirsOverlap: the key directory is the state directory, or one
	// holds the other. Keys must live outside what a copy of the state
	// directory carries.
	ErrDirsOverlap = errors.New("key directory and state directory overlap")
)

// Error is every error the service returns: vaultapi.Error, the error the
// client rebuilds on its side of the socket. Code is the refusal code
// (receipts.Code) when the failure is a policy refusal, else empty and Err
// is one of the sentinels above. Field names a request field. It never
// carries a value, a token or map bytes.
type Error = vaultapi.Error

// CodeOf returns the refusal code carried by err, or "".
func CodeOf(err error) receipts.Code { return vaultapi.CodeOf(err) }

func refusal(op string, code receipts.Code) *Error { return vaultapi.Refuse(op, code) }

func invalid(op, field string) *Error { return vaultapi.Invalid(op, field) }

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
		return refusal(op, code), true
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return vaultapi.Fail(op, ErrNotFound), true
	case errors.Is(err, store.ErrInvalid), errors.Is(err, keys.ErrInvalid), errors.Is(err, lease.ErrInvalid):
		field := ""
		var le *lease.Error
		if errors.As(err, &le) {
			field = le.Field
		}
		return invalid(op, field), true
	case errors.Is(err, seal.ErrKey):
		return vaultapi.Fail(op, ErrStaleKey), true
	}
	return vaultapi.Fail(op, ErrInternal), false
}
