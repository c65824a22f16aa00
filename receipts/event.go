package receipts

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

// Reason is one positioned refusal as printed in a refusal document
// (SPEC §12). It names where, never what: no input bytes.
type Reason struct {
	Code   Code   `json:"code"`
	Part   int    `json:"part"`
	Kind   string `json:"kind"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Length int    `json:"length"`
	// Path is the JSON path of a refused value in a returned answer
	// (rehydration refusals only), e.g. `$.findings[2].owner`.
	Path string `json:"path,omitempty"`
}

// Refusal is the refusal document of SPEC §12.
type Refusal struct {
	Refused bool     `json:"refused"`
	EventID string   `json:"event_id"`
	Reasons []Reason `json:"reasons"`
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// RandomID returns prefix followed by n random bytes in lower-case base32.
func RandomID(prefix string, n int) string {
	b := make([]byte, n)
	rand.Read(b) // crypto/rand.Read never fails (Go 1.24+); it aborts the process instead
	return prefix + strings.ToLower(b32.EncodeToString(b))
}

// NewEventID returns a fresh random event id, "evt:" and 26 base32
// characters (128 bits). Event ids are the only identifiers that broadly
// visible evidence carries.
func NewEventID() string { return RandomID("evt:", 16) }
