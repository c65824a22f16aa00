package store

import (
	"errors"
	"strconv"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/verr"
)

// Sentinel errors. Every error the package returns is an *Error wrapping
// exactly one of them.
var (
	// ErrNotFound: no such lease (or, for Map, no sealed map).
	ErrNotFound = errors.New("not found")
	// ErrExists: a lease with this id is already stored.
	ErrExists = errors.New("already exists")
	// ErrCorrupt: a stored record does not decode or fails lease.Check.
	// Code LEASE_UNRECOVERABLE.
	ErrCorrupt = errors.New("stored record is corrupt")
	// ErrInvalid: a malformed lease id or lease given by the caller.
	ErrInvalid = errors.New("invalid argument")
	// ErrTooLarge: a record, map or backup over its limit. Code
	// LIMIT_EXCEEDED.
	ErrTooLarge = errors.New("over size limit")
	// ErrNotForward: a transition function returned a lease that is not a
	// forward successor of the stored one; nothing was written.
	ErrNotForward = errors.New("transition is not forward")
	// ErrContention: a compare-and-set lost its race more often than the
	// retry bound.
	ErrContention = errors.New("too much contention")
	// ErrBackup: a backup stream fails its integrity check (its HMAC
	// trailer) or is malformed (bad header, record, length or count). Code
	// MALFORMED_RECORD.
	ErrBackup = errors.New("backup integrity check failed")
	// ErrBackupKey: a backup stream names another backup key than the
	// vault's (a backup of another vault, or of before the key directory
	// was lost): its integrity cannot be checked. Code MALFORMED_RECORD.
	ErrBackupKey = errors.New("backup made under another backup key")
	// ErrBackupVersion: a backup stream of the earlier format, whose
	// trailer was an unkeyed SHA-256 that anyone can recompute after an
	// edit. Code MALFORMED_RECORD.
	ErrBackupVersion = errors.New("backup format without a keyed integrity check")
	// ErrIO: Badger or the file system failed; Sys holds the cause.
	ErrIO = errors.New("storage i/o failed")
)

// Error is the package's error type: the shared core (the operation, a
// sentinel, the cause behind ErrIO, a refusal code where the sentinel
// carries one) and, for a malformed backup, the byte offset. It never
// carries a value, and the Badger keys it might mention are opaque random
// ids.
type Error struct {
	verr.Core
	Offset int64 // byte offset in a backup stream, -1 when none applies
}

func (e *Error) Error() string {
	at := ""
	if e.Offset >= 0 {
		at = " at byte " + strconv.FormatInt(e.Offset, 10)
	}
	return e.Text("store", at, "")
}

// CodeOf returns the refusal code of an *Error in err's chain, or "".
func CodeOf(err error) receipts.Code { return verr.CodeOf[*Error](err) }

func newError(op string, sentinel, sys error) *Error {
	var code receipts.Code
	switch sentinel {
	case ErrCorrupt:
		code = receipts.LeaseUnrecoverable
	case ErrTooLarge:
		code = receipts.LimitExceeded
	case ErrBackup, ErrBackupKey, ErrBackupVersion:
		code = receipts.MalformedRecord
	}
	return &Error{Core: verr.Core{Code: code, Op: op, Err: sentinel, Sys: sys}, Offset: -1}
}

// wrapErr returns err when it is already an *Error, else wraps it as ErrIO.
func wrapErr(op string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return newError(op, ErrIO, err)
}
