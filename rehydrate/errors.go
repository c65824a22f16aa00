package rehydrate

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/privacycut/privacycut/receipts"
)

// Refusal is the one error Validate and Rehydrate return for a return they
// refuse. It names where and why, never what: Path is built from property
// names declared in the schema and array indices, never from keys or values
// read from the return, and Reason is a fixed text. On a Refusal nothing has
// been substituted and no value has been read.
type Refusal struct {
	// Code is the refusal code: MalformedRecord, InvalidUTF8 or
	// LimitExceeded for a return that is not strict JSON or does not
	// validate against the schema; one of the TOKEN_* codes otherwise.
	Code receipts.Code
	// Path is the JSON path of the refused value, e.g.
	// "$.findings[2].owner_module", or "" when the return is not JSON.
	// For an undeclared member it is the path of the object holding it.
	Path string
	// Line and Column (1-based, Column in bytes) locate the refused value's
	// first byte in the return: the opening quote of a string, the key of
	// an undeclared member. Length is its length in bytes.
	Line, Column, Length int
	// Reason is a fixed, content-free description.
	Reason string
}

func (r *Refusal) Error() string {
	b := make([]byte, 0, 64+len(r.Path)+len(r.Reason))
	b = append(b, "rehydrate: "...)
	b = append(b, r.Code...)
	if r.Path != "" {
		b = append(b, " at "...)
		b = append(b, r.Path...)
		b = append(b, " (line "...)
	} else {
		b = append(b, " at line "...)
	}
	b = strconv.AppendInt(b, int64(r.Line), 10)
	b = append(b, " col "...)
	b = strconv.AppendInt(b, int64(r.Column), 10)
	if r.Path != "" {
		b = append(b, ')')
	}
	if r.Reason != "" {
		b = append(b, ": "...)
		b = append(b, r.Reason...)
	}
	return string(b)
}

// AsReason returns the refusal as printed in a refusal document (SPEC §12):
// a refusal about the returned document has part -1 and kind "return".
func (r *Refusal) AsReason() receipts.Reason {
	return receipts.Reason{Code: r.Code, Part: -1, Kind: "return", Line: r.Line, Column: r.Column, Length: r.Length, Path: r.Path}
}

// SchemaError is the one error ParseSchema returns for a schema it refuses.
// It locates the refusal in the schema document and never quotes it.
type SchemaError struct {
	// Code is MalformedRecord for anything outside the schema subset,
	// UnknownCategory or ProhibitedCategory for a marking's category,
	// InvalidUTF8 or LimitExceeded from strict JSON parsing.
	Code receipts.Code
	// Line and Column (1-based, Column in bytes) and Length (bytes) locate
	// the refused key or value.
	Line, Column, Length int
	// Reason is a fixed, content-free description.
	Reason string
}

func (e *SchemaError) Error() string {
	b := make([]byte, 0, 64+len(e.Reason))
	b = append(b, "rehydrate: schema: "...)
	b = append(b, e.Code...)
	b = append(b, " at line "...)
	b = strconv.AppendInt(b, int64(e.Line), 10)
	b = append(b, " col "...)
	b = strconv.AppendInt(b, int64(e.Column), 10)
	b = append(b, ": "...)
	b = append(b, e.Reason...)
	return string(b)
}

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

// lineCol returns the 1-based line and byte column of off in data.
func lineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

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
