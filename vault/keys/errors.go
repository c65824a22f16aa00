package keys

import (
	"errors"
	"strconv"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/verr"
)

// Sentinel errors. Every error the package returns is an *Error wrapping
// exactly one of them.
var (
	// ErrNoKey: the lease has no wrapped data key under the current epoch
	// (destroyed, never written, or the key directory was lost). Code
	// LEASE_UNRECOVERABLE.
	ErrNoKey = errors.New("no wrapped data key")

	// ErrCorrupt: a wrapped data key failed authentication under the current
	// epoch key, or a key file has the wrong size. Code LEASE_UNRECOVERABLE
	// for unwrapping; key material is never guessed or repaired.
	ErrCorrupt = errors.New("key material failed authentication")

	// ErrUnavailable: the directory has no usable epoch key, because there is
	// no arena to hold it or the current epoch key file is unreadable. Code
	// VAULT_PROFILE_NOT_PROVEN when there is no arena.
	ErrUnavailable = errors.New("no usable epoch key")

	// ErrExists: a wrapped data key for the lease already exists.
	ErrExists = errors.New("wrapped data key already exists")

	// ErrInvalid: a malformed lease id or a data key of the wrong length.
	ErrInvalid = errors.New("invalid argument")

	// ErrPermissions: the key directory is accessible to other users.
	ErrPermissions = errors.New("key directory permissions wider than 0700")

	// ErrIO: a file operation failed; Sys holds the system error.
	ErrIO = errors.New("key file i/o failed")
)

// Error is the package's error type: the shared core (refusal code
// LEASE_UNRECOVERABLE, VAULT_PROFILE_NOT_PROVEN or empty; the operation:
// "open", "wrap", "unwrap", "destroy", "rotate", "recover"; a sentinel; the
// system error behind it) and, where one applies, the epoch. It never
// carries key bytes. Sys may be an *os.PathError naming a file of the key
// directory (lease ids and epochs are public).
type Error struct {
	verr.Core
	Epoch uint64 // 0 when none applies
}

func (e *Error) Error() string {
	at := ""
	if e.Epoch != 0 {
		at = " (epoch " + strconv.FormatUint(e.Epoch, 10) + ")"
	}
	return e.Text("keys", at, "")
}

// CodeOf returns the refusal code of an *Error in err's chain, or "".
func CodeOf(err error) receipts.Code { return verr.CodeOf[*Error](err) }

func newError(op string, epoch uint64, sentinel, sys error) *Error {
	var code receipts.Code
	switch sentinel {
	case ErrNoKey, ErrCorrupt:
		code = receipts.LeaseUnrecoverable
	}
	return &Error{Core: verr.Core{Code: code, Op: op, Err: sentinel, Sys: sys}, Epoch: epoch}
}

// noArena is ErrUnavailable for want of an arena to hold the epoch key:
// code VAULT_PROFILE_NOT_PROVEN.
func noArena(op string, epoch uint64) *Error {
	return &Error{Core: verr.Core{Code: receipts.VaultProfileNotProven, Op: op, Err: ErrUnavailable}, Epoch: epoch}
}
