package receipts

import (
	"crypto/rand"
	"encoding/base32"
	"strconv"
	"strings"
)

// Refusal is one positioned refusal: the one refusal type of every stage
// (grammar, censor, plan, vault, rehydration), and an element of a refusal
// document's reasons. It names where and why, never what: no input bytes.
//
// Part is the 0-based index of the part refused, or -1 for a refusal of no
// part, whose Kind then names what it concerns: "" for the projection
// document (positioned in the file), "plan", "vault", "schema", "return"
// (positioned in the returned answer, with Path). Line and Column are
// 1-based, Column counts bytes; Line 0 means the whole part or subject.
type Refusal struct {
	Code   Code   `json:"code"`
	Part   int    `json:"part"`
	Kind   string `json:"kind"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Length int    `json:"length"`
	// Path is the JSON path of a refused value in a returned answer
	// (rehydration refusals only), e.g. `$.findings[2].owner`, made of
	// property names the schema declares and array indices.
	Path string `json:"path,omitempty"`
	// Offset is the byte offset of the refused span in the text or
	// document the refusal was found in (not printed).
	Offset int `json:"-"`
	// Reason is a fixed, content-free description (not printed in a
	// refusal document; it is in Error).
	Reason string `json:"-"`
}

// Error formats the refusal as `CODE at WHERE`, and `: REASON` when it has
// one, WHERE as [Refusal.Where] writes it.
func (r *Refusal) Error() string {
	s := string(r.Code) + " at " + r.Where()
	if r.Reason != "" {
		s += ": " + r.Reason
	}
	return s
}

// Where formats the position: `part 1 (block) line 3 col 15 len 8` (or
// `part 1` for the whole part); for a refusal of no part, `$.path (line 2
// col 7)` in a returned answer, `document line 1 col 12 len 5` in the
// projection document, or, without a line, what it concerns ("plan",
// "vault"…).
func (r *Refusal) Where() string {
	if r.Part < 0 {
		switch {
		case r.Path != "":
			return r.Path + " (line " + strconv.Itoa(r.Line) + " col " + strconv.Itoa(r.Column) + ")"
		case r.Line == 0 && r.Kind != "":
			return r.Kind
		case r.Kind != "":
			return r.Kind + " line " + strconv.Itoa(r.Line) + " col " + strconv.Itoa(r.Column) + " len " + strconv.Itoa(r.Length)
		}
		return "document line " + strconv.Itoa(r.Line) + " col " + strconv.Itoa(r.Column) + " len " + strconv.Itoa(r.Length)
	}
	where := "part " + strconv.Itoa(r.Part)
	if r.Kind != "" {
		where += " (" + r.Kind + ")"
	}
	if r.Line == 0 {
		return where
	}
	return where + " line " + strconv.Itoa(r.Line) + " col " + strconv.Itoa(r.Column) + " len " + strconv.Itoa(r.Length)
}

// RefusalDocument is what a refused command prints (docs/FORMATS.md).
type RefusalDocument struct {
	Refused bool      `json:"refused"`
	EventID string    `json:"event_id"`
	Reasons []Refusal `json:"reasons"`
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
