// Package grammar parses closed-diagnostic@1, the closed grammar every model
// input must satisfy before privacycut lets any of it leave the host, and loads
// the two documents it is checked against: Vocabulary@1 and Projection@1.
//
// # The grammar
//
// A part's text is a sequence of records, each ended by one LF:
//
//	finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module="git.corp.example/payments/ledger"
//	ask triage.rank-by-severity owner.team="payments"
//
// The diagnostic, module, version (per module), status, citation and question
// are looked up in the vocabulary; an owner value is anything between quotes
// that the grammar allows (docs/FORMATS.md#grammar). Every byte of accepted text belongs to
// exactly one Span: a grammar literal, a public item or an owner value.
//
// # Security properties
//
//   - Closed: a byte is accepted only as part of a grammar literal, an exact
//     vocabulary item in the position of its class, or an owner value in an
//     `owner.<category>="…"` slot. Prose, unknown items, stray separators,
//     CR, tab, double or trailing spaces and a missing final LF are refused,
//     never skipped or repaired.
//   - Owner values are refused when they could be mistaken for something
//     else: empty, padded with white space, not NFC, equal to any vocabulary
//     item, or containing controls, bidi controls, zero-width or invisible
//     characters or noncharacters.
//   - Refusals carry a code and a position (part, line, byte column, length)
//     and never the refused bytes; receipts.Refusal.Error does not print input.
//   - Limits refuse (LIMIT_EXCEEDED); nothing is truncated.
//   - Vocabulary lookups are O(1) hash-set probes (a seeded hash of each
//     key's length and first, middle and last words, or xxhash of the whole
//     key for a vocabulary that defeats it); a hash match is always confirmed
//     by comparing the bytes. The parser never allocates per item.
//   - One definition of acceptance. Well-formed records take a fast path
//     (fewer calls, word-at-a-time scans, no spans it need not keep), which
//     accepts only what the field-by-field parser accepts, with the same
//     spans and stats, and hands every other record to it: refusals are
//     always decided by the field-by-field parser. The tests keep a frozen,
//     plainly written reference parser and fuzz both paths against it.
//   - The parser reads only the text it is given: its word-at-a-time scans
//     may read past a record, never past the text.
//   - Documents are read with receipts' strict JSON reader: duplicate keys,
//     unknown fields, trailing data, invalid UTF-8 and lone surrogates are
//     refused, so no other JSON reader can see a different document.
//
// Not guaranteed: that the vocabulary is public or that owner values are
// complete. The grammar proves that every byte is either a listed public item
// or marked sensitive; deciding what is listed is the caller's duty.
package grammar
