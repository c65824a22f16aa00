// Package egress is privacycut's in-memory seal authority and egress gate
// (docs/FORMATS.md#seal).
//
// An [Authority] seals a verified cut as a PrivacyCut@1 and then admits, at
// most max_uses times, exactly the sealed export bytes to exactly the
// planned target and consumer, each admission a fresh EgressDecision@1.
// Every seal, admission and refusal is appended to an evidence [Journal].
//
// # Sealing
//
// [Authority.Seal] seals only when every binding holds, and otherwise
// refuses with PLAN_MISMATCH and a fixed reason word:
//
//   - schemas are DisclosurePlan@1, CutVerification@1 and
//     TransformationReceipt@1 (schema);
//   - the verdict is pass and the verification names every claim of
//     docs/DESIGN.md, in order, each holding (verdict);
//   - plan and verification have the same mode, irreversible or reversible
//     (mode), and a lease is given exactly for a reversible cut (lease);
//   - the plan's policy_revision is the authority's (policy-revision);
//   - expires_at parses (expiry) and lies in the future (expired);
//   - max_uses ≥ 1 (max-uses), target and consumer are named (target,
//     consumer);
//   - the verification's export_digest is sha256 of the export bytes
//     (export-digest); the source digest is a keyed hmac-sha256 digest equal
//     to the verification's (source-digest) and to the plan's restricted_ref
//     (restricted-ref);
//   - the verification and every receipt bind sha256 of the plan
//     (plan-digest) and the plan's vocabulary digest (vocabulary-digest);
//   - the receipts form one chain: indexes 0…n-1, each receipt's parents are
//     the digests of all earlier receipts, the first input is the source
//     digest, each later input is the previous output, one label digest
//     (receipt-chain);
//   - exactly the last receipt is terminal and its output and export digests
//     are the export's (terminal), and its digest is the verification's
//     receipts_digest (receipts-digest);
//   - the export is not registered with [Authority.DenyLocal] (local-only)
//     and the same plan and export are not sealed already (sealed).
//
// A seal is a random event id ("evt:" and 26 base32 characters) and a
// private copy of the export digest, target, consumer, expiry and remaining
// uses, held in a map of the Authority. It is never written anywhere except
// as a journal line, and a new Authority — a restarted process — knows no
// seals: restart means prepare again.
//
// # Admission
//
// [Authority.Admit] checks, in this order, and refuses with the first
// failure:
//
//	local-only      PLAN_MISMATCH   sha256(body) was registered with DenyLocal
//	no-seal         PLAN_MISMATCH   no seal with that event id in this Authority
//	body            PLAN_MISMATCH   sha256(body) is not the sealed export digest
//	target          PLAN_MISMATCH   target is not the plan's target, byte for byte
//	consumer        PLAN_MISMATCH   consumer is not the plan's consumer
//	expired         PLAN_MISMATCH   the plan's expires_at has passed
//	uses-exhausted  LIMIT_EXCEEDED  max_uses admissions were already made
//
// Each call, an exact redelivery of the same bytes included, is a new
// decision with its own event id; an admission consumes one use and carries
// its number (Use = 1…max_uses). A refusal consumes none.
//
// # Journal
//
// The journal is a JSON-lines file, one [Entry] per line, created 0600 in a
// 0700 directory. Each line is appended by one write under an exclusive
// flock(2); a write or fsync that fails (disk full, RLIMIT_FSIZE) is
// truncated away, and an entry after a line torn by a crash starts on a new
// line. A worked example, one seal, one admission and one refusal:
//
//	{"event_id":"evt:q7…","time":"2026-01-02T10:00:00Z","kind":"seal","command":"seal","seal":"evt:q7…","digest":"sha256:5f…"}
//	{"event_id":"evt:3m…","time":"2026-01-02T10:00:01Z","kind":"admit","command":"admit","seal":"evt:q7…","digest":"sha256:5f…","use":1}
//	{"event_id":"evt:ha…","time":"2026-01-02T10:00:02Z","kind":"refusal","command":"admit","seal":"evt:q7…","codes":["PLAN_MISMATCH"],"reason":"body","digest":"sha256:5f…"}
//
// digest is always the sealed export's digest, never the digest of a body
// that was refused; a seal refusal carries no digest.
//
// # Security properties
//
// Guaranteed:
//
//   - No bytes are admitted unless their SHA-256 equals the export digest of
//     a seal made by this Authority from a pass verdict whose export, source,
//     plan, vocabulary, receipt-chain and policy bindings all hold.
//   - Target comparison is exact: no URL normalisation, case folding or
//     trailing-slash leniency. Consumer comparison is exact on kind and id.
//   - Under any number of concurrent callers, a seal admits at most max_uses
//     times; use numbers are 1…max_uses without gaps or repeats.
//   - Every decision is journaled before Admit returns it. An admission the
//     journal cannot record is not made (fail closed).
//   - Journal lines and error texts hold event ids, codes, fixed reason
//     words, the sealed export's digest and use numbers only: never body
//     bytes, never a digest of bytes that were not sealed, never plan
//     contents beyond what the seal binds. A refusal decision does not
//     repeat the caller's target or consumer either.
//   - Bytes registered with DenyLocal (a rehydrated result) are never
//     admitted, under any seal.
//
// Not guaranteed:
//
//   - The Authority does not re-verify the cut: it trusts the verification
//     it is given to be the independent verifier's output, and checks only
//     that it binds these exact bytes, this plan and these receipts.
//   - Seals and use counts live in one process's memory. A restarted process
//     that prepares and seals the cut again starts a new use count; the use
//     ceiling bounds redelivery within one Authority.
//   - Admission is a decision, not a transport. Nothing stops a caller from
//     sending other bytes, or sending to another URL, after Admit returns.
//   - The journal is append-only by convention, not tamper-evident; an
//     existing journal file or directory keeps whatever mode it had.
//
// The caller's duties:
//
//   - Call Admit immediately before the remote call, and send exactly the
//     admitted body, to exactly the admitted target, once per admission.
//   - Give Seal the verification produced by the out-of-process verifier for
//     this export, never one built locally.
//   - Register every rehydrated result with DenyLocal(receipts.SHA256(result))
//     before it can reach any code that might send it.
//   - Keep one Authority per process and do not share seal event ids as
//     authorisation: an event id names a seal, it does not prove one.
package egress
