// Package egress is privacycut's in-memory seal authority, egress gate and
// sender (docs/FORMATS.md#seal).
//
// An [Authority] seals a verified cut as a PrivacyCut@1 and then admits, at
// most max_uses times per plan, exactly the sealed wire body — the export
// for export@1, the provider request for openai-chat@1 and
// anthropic-messages@1 — to exactly the planned target and consumer, each
// admission a fresh EgressDecision@1. A [Sender] delivers the admitted body
// over HTTP, redelivering within the same ceiling. Every seal, admission,
// delivery and refusal is appended to an evidence [Journal].
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
//     (export-digest);
//   - the plan's wire profile is export@1, openai-chat@1 or
//     anthropic-messages@1 (wire-profile); for export@1 the wire body is
//     the export (a nil Wire stands for it) and the verification's
//     wire_digest is the export digest; for the others the wire
//     body is given, is not the export, and its sha256 is the
//     verification's wire_digest (wire-digest);
//   - the source digest is a keyed hmac-sha256 digest equal
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
//   - neither the export nor the wire body is registered with
//     [Authority.DenyLocal] (local-only) and the same plan and export are
//     not sealed already (sealed).
//
// A seal is a random event id ("evt:" and 26 base32 characters) and a
// private copy of the export, wire and plan digests, target, consumer,
// expiry and use ceiling, held in a map of the Authority. It is never written anywhere except
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
//	body            PLAN_MISMATCH   sha256(body) is not the sealed wire digest
//	target          PLAN_MISMATCH   target is not the plan's target, byte for byte
//	consumer        PLAN_MISMATCH   consumer is not the plan's consumer
//	expired         PLAN_MISMATCH   the plan's expires_at has passed
//	uses-exhausted  LIMIT_EXCEEDED  max_uses admissions of the plan were already made
//
// Each call, an exact redelivery of the same bytes included, is a new
// decision with its own event id; an admission consumes one use and carries
// its number (Use = 1…max_uses). A refusal consumes none.
//
// Uses are counted per plan digest, over every seal of the plan. With a
// journal the count is the journal's: under its exclusive flock, Admit
// counts the admit lines naming the plan (and, erring high, every line
// naming it that does not read as an entry), and appends the admission only
// below max_uses. Processes that each prepare and seal the same plan
// therefore admit at most max_uses times in all, and a restarted process
// cannot start the count again. A Journal keeps the counts it has read and
// reads only the lines appended since (a file replaced under its path, or
// truncated, is counted anew); a journal line over 64 KiB, an unreadable
// journal or a file system without flock admit nothing. Without a journal (a nil
// Journal) the count is the Authority's own: the ceiling then holds within
// one process only.
//
// # Journal
//
// The journal is a JSON-lines file, one [Entry] per line, created 0600 in a
// 0700 directory. Each line is appended by one write under an exclusive
// flock(2) and synced, except a seal's line, which the seal's first
// admission, synced after it, makes durable with it (or Journal.Sync); a
// write or fsync that fails (disk full, RLIMIT_FSIZE) is truncated away,
// and an entry after a line torn by a crash starts on a new line. A worked example, one seal, one admission and one refusal:
//
//	{"event_id":"evt:q7…","time":"2026-01-02T10:00:00Z","kind":"seal","command":"seal","seal":"evt:q7…","digest":"sha256:5f…","wire":"sha256:e7…","plan":"sha256:b4…"}
//	{"event_id":"evt:3m…","time":"2026-01-02T10:00:01Z","kind":"admit","command":"admit","seal":"evt:q7…","digest":"sha256:5f…","wire":"sha256:e7…","plan":"sha256:b4…","use":1}
//	{"event_id":"evt:k2…","time":"2026-01-02T10:00:02Z","kind":"delivery","command":"send","seal":"evt:q7…","reason":"rate-limited","use":1,"decision":"evt:3m…","status":429}
//	{"event_id":"evt:ha…","time":"2026-01-02T10:00:03Z","kind":"refusal","command":"admit","seal":"evt:q7…","codes":["PLAN_MISMATCH"],"reason":"body","digest":"sha256:5f…","wire":"sha256:e7…","plan":"sha256:b4…"}
//
// digest is always the sealed export's digest and wire the sealed wire
// body's (absent for export@1, where it is the export's), never the digest
// of a body that was refused; a seal refusal carries no digest. A delivery
// line names the admission it was made under, the HTTP status (absent when
// no response came) and the outcome word of [Try]; a failed delivery ends
// with a refusal line of command "send", code UPSTREAM_FAILED and reason
// "outcome" or "outcome/stop".
//
// # Delivery
//
// [Sender.Send] makes each try under a fresh admission and POSTs exactly
// the admitted body to exactly the plan's target. The request carries
// Content-Type: application/json, User-Agent: privacycut/1 and the
// profile's credential header — openai-chat@1: Authorization: Bearer;
// anthropic-messages@1: x-api-key and anthropic-version: 2023-06-01;
// export@1: Authorization: Bearer only when a credential file is given —
// and nothing else net/http adds but Host and Content-Length. No proxy is
// taken from the environment, no redirect is followed (a 3xx is an
// unusable answer), compression is not negotiated, and the server's
// certificate is verified (a test may give its own roots, never skip
// verification). A target must be https, or http to a loopback address.
//
// 429, 5xx and a try that got no whole response are redelivered: the
// same bytes, a fresh admission, after a wait of InitialBackoff doubling
// to MaxBackoff, or longer when Retry-After (delay-seconds or an HTTP
// date) asks it. Redelivery stops — UPSTREAM_FAILED, with the reason — when
// the plan's uses are spent, the wait would end past the seal's expiry or
// the context's deadline, or it is longer than MaxWait. Every other
// response ends the delivery: a 2xx is returned for the caller to read
// (wire.ReadAnswer), anything else is UPSTREAM_FAILED. The clock is the
// Authority's and the wait is the Sender's Sleep, so tests never sleep.
//
// The credential is read from its file once per Send, before the first
// admission (a bad file consumes no use): a regular file, not a symbolic
// link (O_NOFOLLOW), owned by the effective user, without group or other
// permissions, one line of at most 64 KiB of printable ASCII. It is held
// in a [Credential], which redacts itself in every fmt verb and slog
// handler, refuses JSON and text encoding, and is wiped when Send returns.
//
// # Security properties
//
// Guaranteed:
//
//   - No bytes are admitted unless their SHA-256 equals the wire digest of
//     a seal made by this Authority from a pass verdict whose export, wire,
//     source, plan, vocabulary, receipt-chain and policy bindings all hold.
//   - Target comparison is exact: no URL normalisation, case folding or
//     trailing-slash leniency. Consumer comparison is exact on kind and id.
//   - Under any number of concurrent callers, and, with a journal, of
//     processes sharing it, a plan is admitted at most max_uses times; use
//     numbers are 1…max_uses without gaps or repeats.
//   - Every decision is journaled before Admit returns it. An admission the
//     journal cannot record is not made (fail closed).
//   - Journal lines and error texts hold event ids, codes, fixed reason
//     words, the sealed export's digest and use numbers only: never body
//     bytes, never a digest of bytes that were not sealed, never plan
//     contents beyond what the seal binds. A refusal decision does not
//     repeat the caller's target or consumer either.
//   - Bytes registered with DenyLocal (a rehydrated result) are never
//     admitted, under any seal.
//   - A Sender sends only admitted bytes, only to the admitted target, one
//     try per admission. The credential never appears in a Result, an
//     error, a journal line or a log; it crosses only in its header.
//
// Not guaranteed:
//
//   - The Authority does not re-verify the cut: it trusts the verification
//     it is given to be the independent verifier's output, and checks only
//     that it binds these exact bytes, this plan and these receipts.
//   - Seals live in one process's memory. Without a journal the use count
//     does too: a restarted process that seals the plan again starts a new
//     count. Journals at different paths do not share counts.
//   - Admit is a decision, not a transport. Nothing stops a caller from
//     sending other bytes, or sending to another URL, after Admit returns;
//     the Sender is the transport that does not.
//   - The credential's header value is a Go string inside net/http: it
//     cannot be wiped and lives until the collector reclaims it. TLS trusts
//     the system roots (or the given pool); it does not pin the provider.
//   - A try that timed out or lost its connection after the request was
//     written may have reached the provider: redelivery can make it see the
//     same bytes more than once (never more than max_uses times).
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
