// Package verifier is privacycut's independent verifier: given the source
// projection, the export, the plan, the vocabulary and the receipt chain of
// a cut, it re-derives what the export must be and writes a
// CutVerification@1 (SPEC §7), in process ([Verify], [InProcess]) or in its
// own process through hashicorp/go-plugin over gRPC ([Serve], [Start],
// [Run], [Launch]).
//
// Independence is the point. The package imports nothing of the project but
// receipts (strict JSON, canonical form, digests, evidence types) and
// internal/bigbuf (buffers mapped apart from the heap; it reads no input),
// and never censor or grammar: a test runs "go list -deps" and fails
// otherwise. Its
// recognizer of closed-diagnostic@1 is its own, a byte-level state machine
// that reads each record once and looks each vocabulary item up in a hash
// set when the state reading it ends, so the censor and the verifier do not
// share mistakes.
//
// # Claims
//
// Every verification lists these claims, in this order; the verdict is
// "pass" only when every claim holds.
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
//   - owners-replaced: every owner slot holds a token of its category, and the
//     export re-derived from the source with those tokens is byte-equal to
//     the export.
//   - token-consistency: per category, equal value ↔ equal token across the
//     cut; irreversible tokens are redacted:<category>:<n> numbered by first
//     appearance (the whole export is re-derived and compared);
//     reversible tokens are pcv:<ns>:<category>:<mac> with one namespace.
//   - no-residual: no owner value, as written in the source, occurs in an
//     export text except wholly inside one public item, literal or token
//     (one Aho–Corasick pass; only values holding a boundary byte
//     ' ' '@' '=' '"' LF can straddle spans and are searched everywhere).
//   - plan-match: the plan is a strict DisclosurePlan@1 whose consumer,
//     purpose, target (absolute http(s) URL), mode, max_uses, invariants,
//     categories, manifest and vocabulary digests, restricted_ref and expiry
//     hold, a reversible plan binds positive remote_deadline_s and
//     return_window_s, a station and a plain output_schema_digest, and every
//     receipt's plan_digest is the plan's digest. The threat model,
//     retention and policy revision are decoded strictly but not judged here
//     (the censor refuses an unknown retention, and so does rehydration).
//   - receipt-chain: exactly the censor and export receipts of
//     docs/DESIGN.md, in order, every digest recomputed (source, candidate and
//     label keyed under the evidence key), the operations recounted, the
//     terminal receipt binding the export digest.
//
// An input that cannot be decoded fails every claim that depends on it; the
// others are still evaluated and listed.
//
// # Cost
//
// A check reads each text a bounded number of times and builds nothing in
// proportion to it but the decoded texts: owner values and tokens are
// numbered in byte-keyed hash tables, and the export re-derived from the
// source is compared with the export bytes while it is derived. It uses two
// CPUs: the export is decoded while the source is; the source is recognized
// on one while the export is recognized and paired with it on the other;
// the keyed digests are computed meanwhile; the residual search splits the
// texts among the CPUs. The source's long strings and
// the export's texts are decoded into memory mapped at once (on Linux, with
// huge pages where the system allows), not page by page: in a fresh plugin
// process each first write to a 4 KiB page is a fault, and on virtual
// machines faults are expensive. The strict parser of receipts still reads
// every document and decides every refusal; the direct decodings only take
// what it would accept, with the same result, and leave anything else to
// it.
//
// # Plugin protocol
//
// One client-streaming gRPC call: a header (evidence key, claimed export
// digest, clock, declared input sizes), then each input in 1 MiB chunks, in
// order; the reply is the verification. gRPC's message limits are never
// raised. The host checks the reply (every claim, in order) and recomputes
// the verdict from the claims, so a plugin cannot say pass over a missing or
// failed claim.
//
// # Security properties
//
// Guaranteed:
//
//   - No Detail, error or log line written by this package holds input
//     bytes: only counts, codes, claim and field names, and positions (part,
//     line, byte column, length). Errors of the plugin protocol are fixed
//     sentinels, mapped to and from gRPC codes by one table each way.
//   - Verify never panics on any input (and a recovered panic fails every
//     claim). It never modifies the request.
//   - Inputs are bounded: documents by receipts' size and depth limits,
//     part texts by MaxPartTextBytes, records by MaxRecordBytes and
//     MaxOwnersPerRecord, plugin inputs by MaxInputBytes each; limits refuse,
//     never truncate.
//   - The plugin is started pinned (SHA-256 of the executable, checked by
//     go-plugin when it starts it), over gRPC only with AutoMTLS, without the
//     host's environment, and with no broker: it cannot call back into the
//     host. It calls Harden first and exits if it fails. It clears the
//     received inputs and wipes its copy of the evidence key after each call.
//   - No plugin outlives its host's use of it: Close kills it, a start cut
//     short kills it through its command's context, and on Linux the kernel
//     kills it (parent-death signal) if the host itself is killed.
//   - Nothing the plugin holds before Harden gives access to the inputs
//     (Launch): its attachment channel is a socket, which cannot be opened
//     through /proc/<pid>/fd, and the sealed memfd crosses it only after
//     the plugin has started, that is, has hardened itself; cut gives the
//     plugin /dev/null as standard input, not the pipe a projection may
//     arrive on.
//
// Not guaranteed:
//
//   - The verifier cannot know the consumer or target the user meant: a plan
//     substituted together with re-digested receipts is consistent. Binding
//     the plan to the user's intent is the seal authority's job.
//   - Reversible tokens are checked for shape, category, namespace and
//     consistency only; their MACs cannot be recomputed here (the namespace
//     key lives only in vaultd while issuing). So a token source that wrote
//     owner values into its tokens (pcv:aaaaaaaaaa:team:paymentsaaaaaaaaaaaa
//     for "payments") would pass no-residual, which accepts a value wholly
//     inside a well-formed token, and so would any encoding of a value in the
//     20 MAC characters. That tokens carry nothing of their values is
//     vaultd's property (keyed, random namespace; DESIGN "Tokens"), which
//     the verifier takes on trust.
//   - Copies of the evidence key and inputs made by protobuf and gRPC buffers
//     on either side are not wiped; they stay in ordinary process memory
//     until collected. Neither are the texts the verifier decodes (held in
//     anonymous mappings that are unmapped when the check ends, or on the Go
//     heap) nor the copies of owner values and tokens in its hash tables.
//     The plugin's memory is protected only as far as Harden makes it.
//   - Between Start's hashing of the executable and go-plugin's check, the
//     file is trusted to be the same one that runs.
//   - From exec until Harden, the plugin is an ordinary process of the
//     host's uid: without a ptrace restriction (Yama ptrace_scope ≥ 1), a
//     process of that uid could attach to it then and stay attached. So it
//     could to cut itself before cut's own first instruction hardens it.
//
// The caller's duties: give the exact bytes that were or will be sent as
// Export and the bundle's claimed digest as ExportDigest; give the real clock
// as Now (a zero Now fails plan-match); keep the evidence key secret and
// alive during the call; route the plugin's logger only to local logs; set
// Harden before calling Serve in the plugin binary; treat an error from a
// Checker as a failed verification.
package verifier
