package keys

import (
	"errors"
	"strconv"
	"strings"

	"github.com/privacycut/privacycut/receipts"
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

// Error is the package's error type. It names the operation and, where one
// applies, the epoch; it never carries key bytes. Sys may be an *os.PathError
// naming a file of the key directory (lease ids and epochs are public).
type Error struct {
	Code  receipts.Code // LEASE_UNRECOVERABLE, VAULT_PROFILE_NOT_PROVEN, or empty
	Op    string        // "open", "wrap", "unwrap", "destroy", "rotate", "recover"
	Epoch uint64        // 0 when none applies
	Err   error         // a sentinel
	Sys   error         // the system error behind it, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("keys: ")
	b.WriteString(e.Op)
	if e.Epoch != 0 {
		b.WriteString(" (epoch ")
		b.WriteString(strconv.FormatUint(e.Epoch, 10))
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.Err.Error())
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

// CodeOf returns the refusal code of an *Error in err's chain, or "".
func CodeOf(err error) receipts.Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func newError(op string, epoch uint64, sentinel, sys error) *Error {
	var code receipts.Code
	switch sentinel {
	case ErrNoKey, ErrCorrupt:
		code = receipts.LeaseUnrecoverable
	}
	return &Error{Code: code, Op: op, Epoch: epoch, Err: sentinel, Sys: sys}
}
