// Package verifier is privacycut's independent verifier: given the source
// projection, the export, the plan, the vocabulary and the receipt chain of
// a cut, it re-derives what the export must be and writes a
// CutVerification@1 ([Verify]); given the wire body the cut is sent as, it
// renders that body itself and requires it byte for byte. Package
// verifier/plugin runs it in a process of its own; this package links
// neither gRPC nor go-plugin.
//
// Independence is the point. The package imports nothing of the project but
// canon (strict JSON, canonical form), receipts (digests, evidence types)
// and internal/bigbuf (buffers mapped apart from the heap; it reads no
// input), and never censor or grammar: a test runs "go list -deps" and
// fails otherwise. Its recognizer of closed-diagnostic@1 is its own, a
// byte-level state machine, so the censor and the verifier do not share
// mistakes.
//
// # Claims
//
// Every verification lists these claims, in this order; the verdict is
// "pass" only when every claim holds. Each is concluded in its own file
// (claim_*.go); verify lists the run.
//
//   - export-canonical: the export is strict JSON, byte-equal to its RFC 8785
//     form, shaped {"parts":[{"kind","text"}…],"profile":"closed-diagnostic@1"},
//     and the bundle's export digest is the SHA-256 of its bytes.
//   - coverage: the source is a strict Projection@1; every part has a known
//     kind, a label and a lineage without "unknown"; the join stays within
//     the plan's max_parents; every byte of every text is recognized under
//     the vocabulary; every owner category is allowed (credential never).
//   - public-preserved: the export has the source's parts, kinds and
//     records, and in each record the same literals and public items at the
//     same places relative to the owner slots.
//   - owners-replaced: every owner slot holds a token of its category, and
//     the export is the source with each owner value replaced by the token
//     at its slot.
//   - token-consistency: per category, equal value ↔ equal token across the
//     cut; irreversible tokens are redacted:<category>:<n>, n numbering the
//     category's values by first appearance; reversible tokens are
//     pcv:<ns>:<category>:<mac> with one namespace, and each is the token
//     the vault issued under the request's lease for its slot's (category,
//     value), as the request's Issuer answers (see Reversible tokens).
//   - no-residual: no owner value, as written in the source or as it reads
//     unescaped, occurs in an export text except wholly inside one public
//     item, literal or token, nor anywhere in the wire body's other strings
//     (model, instruction, output schema; keys included), decoded.
//   - plan-match: the plan is a strict DisclosurePlan@1 whose consumer,
//     purpose, target (absolute http(s) URL), mode, max_uses, invariants,
//     categories, manifest and vocabulary digests, restricted_ref, policy
//     revision and expiry hold; a reversible plan binds positive
//     remote_deadline_s and return_window_s, a station, a plain
//     output_schema_digest and a known retention; every receipt's
//     plan_digest is the plan's digest. The threat model is required but
//     not judged here.
//   - receipt-chain: exactly the censor and export receipts of
//     docs/DESIGN.md, in order, every digest recomputed (source, candidate
//     and label keyed under the evidence key), the operations recounted,
//     the terminal receipt binding the export digest.
//   - wire-match: the wire body is the one the plan's wire profile makes of
//     the export, byte for byte: the export itself for export@1 (a plan
//     without wire); for openai-chat@1 and anthropic-messages@1 the RFC 8785
//     request this package renders from the plan's model, instruction and
//     max_output_tokens, the export's part texts in order and S′, the output
//     schema without its x-privacycut-* members, whose document's digest is
//     the plan's output_schema_digest. The request's strict flag is true
//     exactly when every object schema of S′ has additionalProperties false
//     and requires each of its properties. A plan with a provider profile
//     also binds a model, a positive max_output_tokens and that digest
//     (plan-match). The verification's wire_digest is S(wire body).
//
// An input that cannot be decoded fails every claim that depends on it; the
// others are still evaluated and listed.
//
// A process keeps the last vocabulary it decoded, with a copy of its exact
// bytes, and reuses it for the next verification given the same bytes,
// compared in full (a long-lived plugin is given its gateway's vocabulary
// with every request); any other bytes are decoded anew. Decoded
// vocabularies are read only. It keeps, the same way, the index of the
// last rendered wire body's own strings (model, instruction, output schema
// strings) in which none of the verification's owner values occurred;
// strings that held one are never kept.
//
// # Reversible tokens
//
// A reversible token is keyed under a per-lease key only the vault holds,
// so the verifier cannot compute it; it asks. Once every record pairs and
// the tokens are consistent, of one namespace and of their slots'
// categories, it gives the request's [Issuer] the lease and the source's
// distinct (category, value) pairs in order of first appearance, each value
// as it reads and the token the export holds for it, and requires "issued"
// for every pair. Without an Issuer or a lease, when the Issuer cannot
// answer (an [IssuerError] code such as LEASE_NOT_ACTIVE, or
// [ErrIssuerUnavailable]), or when it answers for another number of pairs,
// token-consistency fails naming why. So a token swapped between two
// values, an altered MAC, an invented token and a token of another lease
// fail, though consistent and with every digest rebound.
//
// What is checked: that the Issuer says so. What is taken on trust: the
// Issuer's answer. An Issuer that asks the vault (values sealed to it) is
// as good as the vault; [Granted], which answers from the grant reply a
// program holds right after its cut, is as good as that program: it
// catches a censor that wrote a token at another value's slot, not a
// program that lies about its grant. Irreversible cuts need no Issuer.
//
// # Security properties
//
// Guaranteed:
//
//   - No Detail or error written by this package holds input bytes: only
//     counts, codes, claim, field and category names, and positions (part,
//     line, byte column, length).
//   - Verify never panics on any input (a recovered panic fails every
//     claim). It never modifies the request, and no goroutine it started
//     reads the request after it returns.
//   - Inputs are bounded: documents by canon's size and depth limits, part
//     texts by MaxPartTextBytes, records by MaxRecordBytes and
//     MaxOwnersPerRecord, parts by MaxParts; limits refuse, never truncate.
//   - Every document is read by canon's strict parser, once; nothing is
//     decoded by a second JSON decoder.
//
// Not guaranteed:
//
//   - The verifier cannot know the consumer or target the user meant: a plan
//     substituted together with re-digested receipts is consistent. Binding
//     the plan to the user's intent is the seal authority's job.
//   - The verifier takes the Issuer's answer on trust: it cannot recompute
//     a MAC (the namespace key lives only in vaultd). So a token source that
//     wrote owner values into its tokens (pcv:aaaaaaaaaa:team:paymentsaaaaaaaaaaaa
//     for "payments") would pass no-residual, which accepts a value wholly
//     inside a well-formed token, if its Issuer vouched for it; that tokens
//     carry nothing of their values is vaultd's property.
//   - The texts the verifier decodes (in anonymous mappings unmapped when the
//     check ends, or on the Go heap) and the copies of owner values and
//     tokens in its hash tables are not wiped. The values given to an Issuer
//     are cleared when it returns; what the Issuer copied is its own.
//
// The caller's duties: give the exact bytes that were or will be sent as
// Wire (or none, for export@1: the export is then the body), the export as
// Export and the bundle's claimed digest as ExportDigest, and the output
// schema document as OutputSchema; give the real
// clock as Now (a zero Now fails plan-match); keep the evidence key secret
// and alive during the call; for a reversible cut, give the lease and an
// Issuer that answers from the vault (or, for the plugin, VaultSocket).
package verifier
