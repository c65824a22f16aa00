package rehydrate

import (
	"errors"
)

// Caller errors. They are bugs of the caller, not refusals of a return, and
// carry no code.
var (
	// ErrInvalidArgument: a nil schema, plan or Issued.
	ErrInvalidArgument = errors.New("rehydrate: invalid argument")
	// ErrInvalidLease: the lease's namespace is not 10 characters of
	// [a-z2-7] or its purpose is empty.
	ErrInvalidLease = errors.New("rehydrate: invalid lease")
	// ErrInvalidValue: Issued.AppendValue returned an empty value or one
	// that is not valid UTF-8. The output is discarded.
	ErrInvalidValue = errors.New("rehydrate: invalid token value")
	// ErrStalePlan: at Apply, Issued no longer reports a token of the plan
	// as issued under its category, or returns a value of another length
	// than it did a moment before. The output is discarded.
	ErrStalePlan = errors.New("rehydrate: issued tokens changed since validation")
	// ErrUnknownRetention: a retention profile name RetentionMax does not
	// know.
	ErrUnknownRetention = errors.New("rehydrate: unknown retention profile")
	// ErrReceiptInput: a ReceiptInput field is missing or malformed.
	ErrReceiptInput = errors.New("rehydrate: invalid receipt input")
	// ErrPurgeElapsed: the purge time of a result is not after the time of
	// rehydration; such a result must not be released.
	ErrPurgeElapsed = errors.New("rehydrate: purge time already reached")
)

// literalEnd returns the offset just past the JSON string literal whose
// opening quote is at q in data (a document the strict parser accepted).
func literalEnd(data []byte, q int) int {
	for i := q + 1; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(data)
}
