package receipts

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// Plaintext is bytes that hold owner values in the clear: a decoded owner
// value on its way to a token source, a rehydrated output. It redacts itself
// in every fmt verb, in log/slog and in go-cmp-style printers that call
// String or GoString, and refuses every encoder (JSON, text, binary, gob).
// The bytes are reached only by code that indexes or converts them on
// purpose; the holder clears them when done.
//
// It is a byte slice, so that code that must read the bytes does so without
// a copy. The price: fmt cannot call a method of an unexported struct field,
// and prints such a field's bytes. Hold Plaintext in exported fields (every
// field of the project that carries one is), or behind a pointer.
type Plaintext []byte

// ErrPlaintext is returned by every encoder of a Plaintext.
var ErrPlaintext = errors.New("receipts: plaintext is never encoded")

const plaintextRedacted = "Plaintext(REDACTED)"

// String returns a redaction.
func (Plaintext) String() string { return plaintextRedacted }

// GoString returns a redaction.
func (Plaintext) GoString() string { return plaintextRedacted }

// Format writes a redaction for every verb and flag.
func (Plaintext) Format(f fmt.State, _ rune) { io.WriteString(f, plaintextRedacted) }

// LogValue makes log/slog print "REDACTED".
func (Plaintext) LogValue() slog.Value { return slog.StringValue("REDACTED") }

// MarshalJSON fails.
func (Plaintext) MarshalJSON() ([]byte, error) { return nil, ErrPlaintext }

// MarshalText fails.
func (Plaintext) MarshalText() ([]byte, error) { return nil, ErrPlaintext }

// MarshalBinary fails (and with it gob).
func (Plaintext) MarshalBinary() ([]byte, error) { return nil, ErrPlaintext }

// GobEncode fails.
func (Plaintext) GobEncode() ([]byte, error) { return nil, ErrPlaintext }
