// Package service is vaultd's core: the in-process API behind the gRPC
// server (package vault/server) and the tests. It owns the secret arena, the
// key directory (package vault/keys), the Badger store (package
// vault/store) and the lease state machine (package lease), and holds the
// pseudonym maps of reversible cuts.
//
// The request, result, status and report types of its calls, its *Error
// and the sentinels the client also returns are package vaultapi's; the
// service names them too (CreateRequest is vaultapi.CreateRequest, and so
// on), so a client and the daemon share one definition of each.
//
// # Requests
//
// CreateLease receives distinct (category, value) pairs sealed to the
// vault's X25519 key (package vault/seal), opens each value straight into
// the arena, draws a namespace (10 base32 characters) and a 32-byte
// namespace key in the arena, issues tokens
//
//	pcv:<namespace>:<category>:<first 100 bits of HMAC-SHA256(nskey,
//	    "privacycut/token/v1" 0x00 category 0x00 value), 20 base32 chars>
//
// (the same pair gives the same token; a new lease gives a new namespace),
// wipes the namespace key, builds the map in fixed arena slots, seals it
// under a fresh 32-byte data key with XChaCha20-Poly1305 and associated
// data "privacycut/map/v2" and the lease's grant fields (id, run, attempt,
// target, purpose, namespace, source digest, station, principal, epoch,
// grant time, deadline and, when the grant carries one, the plan's output
// schema digest, under "privacycut/map/v3"; mapAAD), so that a lease record
// changed in the store no longer opens its map,
// wraps the data key under the current epoch (durably), and commits the
// lease record and the ciphertext in one Badger transaction; a principal
// holds at most MaxLeasesPerPrincipal live leases (LIMIT_EXCEEDED). Bind
// checks the export's digest and the token at every owner slot (below).
// Issued answers the verifier (below). Claim, Consume,
// Revoke and expiry are compare-and-set transitions (package store); a
// terminal transition is committed first, then the data key is destroyed,
// then the destruction is recorded; boot recovery and the sweeper complete
// any step a crash interrupted. WithMap decrypts a live lease's map into
// the arena for the duration of a callback (for rehydration).
//
// # What Bind proves
//
// Bind reads the export's texts only as far as their owner quotes go (no
// grammar: owner.<category>="<value>" fields, public fields without quotes
// or backslashes; export.go) and accepts the export only when every owner
// slot holds a token this lease issued, of the slot's category, the
// distinct tokens first appear in issuance order, and every issued token
// appears. The censor asks for tokens in the order the distinct values
// first appear in the cut, so two values' tokens swapped everywhere
// reorder the first appearances and are refused; an invented token, an
// altered mac, another lease's token, a token in another category's slot
// and a value left in clear are refused at their slot. All are
// PLAN_MISMATCH; an export the reader cannot read is MALFORMED_RECORD;
// both wrap a receipts.Refusal of kind "export" (part, line, column,
// length, a fixed reason). Bind cannot see a partial swap that keeps every
// first appearance (a later occurrence of a value carrying another's
// token): it binds, and the verifier's token-consistency claim must refuse
// it, for which it may call Issued.
//
// Issued takes (category, value) pairs sealed as a grant's, opens them and
// the map into the arena, and answers for each pair whether the token
// beside it is the one the lease issued for that value (constant-time
// compare of the values), only for the lease's principal and only while
// the lease is ACTIVE or CLAIMED.
//
// # What an erasure proof proves
//
// ProveErasure verifies a backup (the key directory's backup key id and
// the keyed HMAC trailer, package vault/store) and restores it into a
// scratch store. It reports a lease erased only by absence: terminal in
// the vault's own store, its wrapped data key gone from the key directory,
// and its map, which the verified backup holds, failing to open for that
// reason. A map failing authentication, a live lease (whatever its key
// state), a key still present, an edited backup, a backup of another
// backup key or of the earlier unkeyed format are "not proven", with the
// first vaultapi.Reason that applies. A principal runs at most
// MaxScratchPerPrincipal proofs at once (LIMIT_EXCEEDED).
//
// # Rehydration
//
// Rehydrate is the one operation that releases values. In
// order: it checks the request (the claim's return digest is SHA-256 of
// the return, the output schema parses and its digest is the one the lease
// was granted with — PLAN_MISMATCH otherwise, and for a lease granted
// without one —, the receipt fields are well formed, the cut has not
// expired) and opens the cut's evidence key, sealed
// like the values of a grant (category "evidence-key"), into the arena;
// claims the lease (Claim's compare-and-set: the same tuple is idempotent,
// another is LEASE_CLAIM_CONFLICT, a terminal lease LEASE_NOT_ACTIVE);
// opens the map (WithMap) and, inside its Reveal, indexes it by category
// and mac and runs package rehydrate's Validate and Apply over that index;
// builds RehydrationReceipt@1 with purge_at ≤ min(lease deadline, cut
// expiry, now + retention maximum) and final_digest keyed under the
// evidence key, which is then wiped; and only then consumes the lease and
// destroys its key. A refused return (a *receipts.Refusal wrapped in an
// *Error carrying its code: JSON path, line, column, length, never a token
// or a value), a canceled caller or any other failure before the consume
// leaves the lease CLAIMED by the tuple, which may retry. After the
// consume the lease is terminal: a crash or a lost reply loses the
// result, and boot recovery completes the key destruction. The crash
// points CrashRehydrateClaimed, CrashRehydrateApplied,
// CrashRehydrateConsumed and CrashRehydrateFinished mark the boundaries.
//
// Boot recovery never destroys a wrapped key that belongs to no stored
// lease: after a crash between the durable wrap and the commit of a grant
// it protects nothing, but after the loss of the state directory it is
// what makes a restored backup usable. Such keys are counted in the boot
// log.
//
// # Profile gate
//
// Open does not harden the process. cmd/vaultd calls harden.Apply and then
// Prove, which reads the kernel state (harden.Prove). Until the profile is
// accepted, every reversible request — CreateLease, Bind, Issued, Claim,
// Consume, WithMap, Rehydrate, Rotate and ProveErasure — is refused with
// VAULT_PROFILE_NOT_PROVEN; Status, List, Show, Revoke, Backup and Restore
// still work. A vault whose arena could not be created (RLIMIT_MEMLOCK)
// opens anyway and is never accepted.
//
// # Time
//
// The effective time of every operation is the later of the wall clock
// and the highest time the vault has seen, persisted in the store by the
// sweeper (every SweepInterval), at boot and at Close. Deadlines are
// absolute and fixed at grant; boot recovery expires what is past its
// deadline. A restart never extends a lease, and a clock set back neither
// revives a lease nor delays an expiry the vault has already seen the time
// for (a SIGKILL may lose up to one sweep interval of the mark).
//
// # Disk space and storage faults
//
// Options.MinFree is a free-space floor (space.go). While the state or key
// directory's file system has fewer bytes available (statfs f_bavail), or
// fewer than 64 free inodes, CreateLease, Rotate and Restore are refused
// LIMIT_EXCEEDED with vaultapi.ErrStorageLow, Field naming "state_dir" or
// "key_dir"; an ENOSPC or EDQUOT from below, and the store's ErrNoSpace,
// are the same refusal. Claims, consumes, revocations, expiry and
// Rehydrate of existing leases are never gated. Status reports the free
// space against the floor. A state directory that is gone (store.ErrGone)
// or an EIO becomes vaultapi.ErrStorageFailed and is delivered once on
// Fatal; cmd/vaultd then stops. Close abandons the store to crash recovery
// (store.Abandon) instead of closing it when the state directory is gone or
// below the floor, and reports that as an *UnclosedError; Open refuses to
// replay a write-ahead log below the floor. MinFree 0 disables all of this
// but the ENOSPC mapping and the store's own guard.
//
// # Security properties
//
// Guaranteed:
//
//   - Values exist in plaintext only in the arena, with one deliberate
//     exception: the output of Rehydrate, in the heap while the call runs
//     (below). They arrive sealed, are opened
//     into it, copied arena to arena into the map, and every temporary
//     (values, namespace key, data key, map plaintext, HMAC input) is wiped
//     before the request returns. The map is never a Go map or a Go string;
//     Map's values are reachable only through Lookup's callback and the
//     index Rehydrate builds inside Reveal.
//   - Rehydrate releases values at most once per lease, only for a return
//     whose every token passes package rehydrate's rules against this
//     lease's own issued (and, by Bind, disclosed) tokens, and only after
//     the result and its receipt exist; the consume is durable before the
//     result is returned, and a refusal releases nothing.
//   - Badger holds only opaque keys, public lease metadata and ciphertext;
//     data keys and epoch keys live only in the key directory and the
//     arena; a backup holds no key material.
//   - A terminal lease's data key is destroyed before the destruction is
//     recorded, and after the terminal state is durable. Once it is
//     destroyed, no copy of the lease's ciphertext (Badger residue, a
//     backup) can be decrypted with the keys that remain.
//   - A backup carries an HMAC-SHA256 under a key that only the key
//     directory holds: an edited backup is refused by Restore and proves no
//     erasure. ProveErasure reports "proven" only by absence (above).
//   - Bind refuses an export whose owner slots do not carry this lease's
//     issuance as described above; Rehydrate refuses any schema but the
//     one the lease was granted with.
//   - A lost or damaged key directory makes its leases answer
//     LEASE_UNRECOVERABLE to every map operation (Bind, Claim, WithMap);
//     nothing re-derives a map or re-issues a namespace.
//   - Map and Vault redact themselves in every formatter and logger; Map
//     refuses encoding. Errors carry codes, operations and field names, and
//     logs carry lease ids, counts and epochs — never values, tokens or map
//     bytes.
//
// Not guaranteed:
//
//   - The rehydrated output is ordinary Go memory, not the arena: Apply
//     copies each value through a heap scratch buffer (cleared after each
//     value) into the output buffer, and the output's hashes see its last
//     partial block (their state and 4 KiB of the hashing goroutine's
//     stack are overwritten after the sums, best effort). RehydrateResult
//     hands the plaintext output to the caller, who must clear it; package
//     vault/server seals it to the requesting client's ephemeral key piece by
//     piece, clearing each piece once sealed, so that only ciphertext
//     reaches gRPC's buffers. The evidence key is copied into a
//     receipts.EvidenceKey (wiped after the receipt) and its HMAC pads (not
//     wiped). Value lengths sit in the Go map of Rehydrate's index while it
//     runs.
//   - Heap copies of key schedules and hash states: chacha20poly1305,
//     crypto/hmac and crypto/ecdh copy keys (the data key, the namespace
//     key, the epoch key, the per-request seal key, the vault's X25519
//     scalar) into heap objects that are dropped, not wiped; SHA-256 keeps
//     the last partial block of each HMAC input (up to 63 bytes, so the tail
//     of a value) in its state and copies it into a local in Sum. The state
//     and 8 KiB of stack below the caller are overwritten after each MAC,
//     best effort (a stack that grew meanwhile was copied and its old copy
//     freed unwiped). These copies live in RAM that the hardened process
//     keeps out of core dumps; host swap must be off.
//   - A watermark against a disk filled from outside between its check and
//     a grant's write of a map over 64 KiB (Badger's value log is not
//     reserved), or with MinFree 0.
//   - Erasure of Badger residue or of physical blocks: the claim is about
//     ciphertext whose key is destroyed (see package vault/keys).
//   - Protection against root (which can read the heap through
//     /proc/pid/mem), against the kernel, or against a vault binary built
//     with the crashpoints tag.
//   - That an export's slots pair each value with its own token beyond
//     what first appearances show (the verifier's token-consistency
//     claim); that a verified backup is the latest one (an older intact
//     backup verifies too); that Issued takes the same time for values of
//     different lengths (only equal-length compares are constant-time).
//
// Test-only builds: with the build tag faultinject the service can be
// made to misbehave on purpose (VAULTD_FAULT: recovery-keeps-keys,
// log-values, heap-copy) so that the acceptance suites can show they catch
// it; with crashpoints it can SIGKILL itself at named points. Neither is in
// a release build, and tests/ checks that the release binaries hold none of
// their names.
//
// The caller's duties: apply harden.Apply after Open and before Prove;
// pass the plan's output_schema_digest at grant; treat Rehydrate's output
// as carrying the cut's label, never hand it to egress, and clear it;
// authenticate principals (package vault/server uses SO_PEERCRED); never
// retain the Map or the byte slices WithMap and Lookup hand out; Close the
// vault at shutdown so the arena is wiped.
package service
