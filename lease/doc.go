// Package lease is PseudonymMapLease@1 (docs/FORMATS.md#lease) as a pure state machine:
// the public record that licenses, at most once, the rehydration of one
// reversible cut.
//
// The package does no I/O, starts no goroutine and never reads the clock:
// every operation takes the time as an argument and returns a new Lease. The
// vault persists what it returns and holds the map and keys; a Lease holds
// neither.
//
// # States and events
//
//	          Claim           Consume
//	ACTIVE ───────────▶ CLAIMED ───────────▶ CONSUMED
//	  │  ╲                 │  ╲
//	  │   ╲ Revoke         │   ╲ Revoke
//	  │    ▶ REVOKED ◀─────┼────╯
//	  │ Expire             │ Expire
//	  ╰──────▶ EXPIRED ◀───╯
//
// Next is the state-level table; the methods Claim, Consume, Revoke and
// Expire (and Apply, which dispatches an Event to them) add the rules on
// claim tuples, binding and time. Bind and DestroyKey change the record but
// not the state. Any move not in the table is refused: a terminal lease
// refuses every operation with LEASE_NOT_ACTIVE.
//
// Rules shared by every operation:
//
//   - Expiry wins. An operation on a live lease at or after its deadline is
//     not performed; it returns the lease EXPIRED with LEASE_NOT_ACTIVE, and
//     the caller persists it.
//   - Time never moves backwards. The effective time of an operation is the
//     later of the given time and the lease's updated_at, and the deadline is
//     fixed at grant: a restart never extends it and no clock set back can
//     revive an EXPIRED lease, which is terminal.
//   - Seq is logical time: it grows by one on every change of the record
//     (binding, claim, terminal move, key destruction) and never otherwise, so
//     an idempotent repeat returns the identical lease. Check verifies seq
//     against the record; Forward verifies that one record can follow another.
//   - Claim is a compare-and-set over the tuple (principal, run, attempt,
//     station, return digest). The first valid claim of an ACTIVE, bound lease
//     wins; the same tuple again returns the same lease with
//     OutcomeAlreadyClaimed; any other tuple is LEASE_CLAIM_CONFLICT. Consume
//     is single-use.
//   - New refuses with LEASE_DURABILITY_INSUFFICIENT a lease whose lifetime,
//     capped by the vault's maximum, cannot cover the plan's
//     remote_deadline_s + return_window_s.
//
// Errors are *Error values: a refusal code from package receipts, the
// operation, the state and at most the name of a field; a caller bug has no
// code and unwraps to ErrInvalid or ErrIllegal. CodeOf extracts the code.
//
// # Format
//
// A lease is stored as JSON through encoding/json (the vault should read it
// back through the strict decoder, canon.Unmarshal, and then call Check).
// Times are RFC 3339 in UTC; state is its wire name. A consumed lease whose
// key has been destroyed:
//
//	{
//	  "schema": "PseudonymMapLease@1",
//	  "id": "pcl:aebagbafaydqqcikbmga2dqpca",
//	  "cut_event": "seal:01j9zq7k2m",
//	  "run": "run-7",
//	  "attempt": 1,
//	  "target": "https://model.example/v1/answer",
//	  "purpose": "dependency-triage",
//	  "namespace": "abcdefghij",
//	  "source_digest": "hmac-sha256:1111…",
//	  "candidate_digest": "hmac-sha256:2222…",
//	  "export_digest": "sha256:3333…",
//	  "key_epoch": 3,
//	  "station": "station-a",
//	  "principal": "uid:1000",
//	  "created_at": "2030-01-02T03:04:05Z",
//	  "deadline": "2030-01-02T04:04:05Z",
//	  "state": "CONSUMED",
//	  "claim": {"principal": "uid:1000", "run": "run-7", "attempt": 1,
//	            "station": "station-a", "return_digest": "sha256:aaaa…"},
//	  "seq": 4,
//	  "updated_at": "2030-01-02T03:08:05Z",
//	  "key_destroyed": true,
//	  "output_schema_digest": "sha256:4444…"
//	}
//
// seq is 4: bound, claimed, consumed, key destroyed. The full vector is
// testdata/lease.golden.json. The claim of a lease that is later revoked or
// expired is kept, so the record shows who held it. key_epoch is the epoch the
// lease was granted under; a rotation re-wraps the data key in the key store
// and does not change it. output_schema_digest is the plan's, bound at grant
// (absent from a lease granted without one): the one output schema its
// rehydration may use.
//
// # Security properties
//
// Guaranteed, for every sequence of calls and every time argument:
//
//   - No move outside the table above: a terminal lease never becomes live
//     again, CONSUMED is reached only through a claim by the exact tuple, and
//     the deadline written at grant is never changed.
//   - Of concurrent claims applied through one Cell, exactly one tuple wins;
//     repeats of the winning tuple are idempotent and never advance seq.
//   - Every lease a method returns passes Check, and every lease it returns
//     after a change is a Forward successor of its input.
//   - Every terminal lease reports NeedsKeyDestruction until DestroyKey
//     records the destruction, and DestroyKey refuses a live lease.
//   - A Lease holds no map material, key or raw value, and errors name only
//     codes, operations, states and field names, never field values.
//
// Not guaranteed:
//
//   - Durability and cross-process atomicity: the vault persists each returned
//     lease in one transaction (compare on seq) before acknowledging.
//   - Key destruction itself: the package only records it. The vault persists
//     the terminal state first, then destroys the key, then calls DestroyKey.
//   - Wall-clock truth: time comes from the caller. A clock set forward
//     expires leases early; a clock set back cannot revive or extend one, but
//     can delay the expiry of a live lease unless the caller passes a
//     high-water-mark clock.
//   - Secrecy of the record: ids, principals, stations and digests are public
//     metadata (source and candidate digests are keyed for that reason).
//
// The caller's duties: draw ID (FormatID) and namespace from a cryptographic
// source; pass a monotonic, high-water-marked clock; run Recover on every
// stored lease at boot and complete the key destruction of every lease for
// which NeedsKeyDestruction holds; persist every returned lease whose seq
// changed, including the EXPIRED lease returned with LEASE_NOT_ACTIVE; never
// reconstruct a map, or resend under a new namespace, for a lease that is
// missing, terminal or unrecoverable.
package lease
