package arena

import (
	"errors"
	"strconv"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/internal/verr"
)

// Sentinel errors. Every error returned by this package is an *Error that wraps
// exactly one of them, so callers test the class with errors.Is and read the
// refusal code with errors.As.
var (
	// ErrExhausted: the arena has no run of free slots long enough for the
	// request. Code LIMIT_EXCEEDED. The arena never spills to ordinary memory.
	ErrExhausted = errors.New("arena exhausted")

	// ErrLockLimit: the kernel refused to lock the arena's pages
	// (RLIMIT_MEMLOCK without CAP_IPC_LOCK). Code LIMIT_EXCEEDED.
	ErrLockLimit = errors.New("memory lock limit reached")

	// ErrTooLarge: the requested arena size is above MaxSize. Code LIMIT_EXCEEDED.
	ErrTooLarge = errors.New("size above limit")

	// ErrUnavailable: no protected memory could be obtained for another reason
	// (platform not supported, mapping or advice refused). Code
	// VAULT_PROFILE_NOT_PROVEN: a vault without an arena cannot prove its profile.
	ErrUnavailable = errors.New("protected memory unavailable")

	// ErrInvalid: a length, slot size or nonce size out of range. No code: this
	// is a programming error, not a refusal.
	ErrInvalid = errors.New("invalid argument")

	// ErrWiped: the secret was wiped. No code.
	ErrWiped = errors.New("secret wiped")

	// ErrClosed: the arena was closed. No code.
	ErrClosed = errors.New("arena closed")

	// ErrAuth: AEAD authentication failed while opening a ciphertext into the
	// arena. No code here; the vault maps it to LEASE_UNRECOVERABLE.
	ErrAuth = errors.New("message authentication failed")

	// ErrRealloc: an AEAD did not decrypt into the destination it was given, so
	// plaintext reached ordinary memory. The copy is cleared (best effort) and
	// the operation refused. No code: a broken AEAD is a programming error.
	ErrRealloc = errors.New("aead did not decrypt in place")

	// ErrEncode: a secret or an arena was asked to encode itself (JSON, text,
	// binary). Secrets never encode.
	ErrEncode = errors.New("secret material refuses encoding")
)

// Error is the one error type of the package: the shared core (refusal
// code where one applies: LIMIT_EXCEEDED, VAULT_PROFILE_NOT_PROVEN, or
// empty for misuse; the operation: "new", "alloc", "open", "fill",
// "reveal", "equal", "zero", "close", "encode"; one of the sentinels
// above; the system error behind it, a unix.Errno) and a length or offset
// where one applies. It never carries secret bytes: only sizes and
// positions.
type Error struct {
	verr.Core
	Off int // byte offset in the arena, -1 when none applies
	Len int // requested length in bytes, -1 when none applies
}

func (e *Error) Error() string {
	at := ""
	if e.Off >= 0 {
		at += " at offset " + strconv.Itoa(e.Off)
	}
	if e.Len >= 0 {
		at += " of " + strconv.Itoa(e.Len) + " bytes"
	}
	return e.Text("arena", at, "")
}

// codeOf is the refusal code a sentinel carries.
func codeOf(sentinel error) receipts.Code {
	switch sentinel {
	case ErrExhausted, ErrLockLimit, ErrTooLarge:
		return receipts.LimitExceeded
	case ErrUnavailable:
		return receipts.VaultProfileNotProven
	}
	return ""
}

func newError(op string, off, n int, sentinel, sys error) *Error {
	return &Error{Core: verr.Core{Code: codeOf(sentinel), Op: op, Err: sentinel, Sys: sys}, Off: off, Len: n}
}
