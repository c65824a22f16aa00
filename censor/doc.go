// Package censor is privacycut's deterministic applicator: it turns a
// Projection@1 that the closed grammar accepts into a candidate in which every
// owner value is replaced by a token, the canonical Export@1 that may leave the
// host, and the ordered TransformationReceipt@1 chain that binds them.
//
// # Security properties
//
//   - Deterministic: the same projection, plan, vocabulary, evidence key and
//     token assignment give byte-identical candidate, export and receipts.
//   - Closed: nothing is exported unless the grammar accepted every byte of
//     every part; any refusal refuses the whole cut. Keys, labels and lineage
//     never reach the export.
//   - Every owner span is replaced, and nothing else: the export keeps every
//     public item and literal in order and position.
//   - Receipts hold digests, revisions and counts only. Every digest of
//     source-derived material (source, manifest, label, candidate) is keyed
//     (HMAC-SHA256 under the local evidence key) because owner values are
//     guessable; only digests of the export itself are plain SHA-256.
//   - Irreversible tokens are `redacted:<category>:<n>`: no map exists anywhere.
//     Reversible tokens come from a TokenSource (the vault); the censor never
//     keeps the map.
//
// Not guaranteed: that owner values were marked by whoever wrote the
// projection. The censor cuts what the grammar marks; an independent verifier
// re-derives the result.
package censor
