// Package crash names the points at which a crash-test build of vaultd kills
// itself, so that crash suites can stop the daemon exactly at a boundary of
// a key rotation or a lease transition.
//
// The points exist only in a binary built with the build tag crashpoints.
// Without the tag, At is an empty function the compiler inlines away: the
// point names and the environment variable are absent from the binary (a
// test in cmd/vaultd checks this). With the tag, the environment variable
//
//	VAULTD_CRASHPOINT=<name>:<n>[:panic]
//
// makes the process SIGKILL itself (or, with ":panic", panic) at the n-th
// pass (n ≥ 1) of the named point. Only one point is armed per process.
// The same build also honours two test hooks: VAULTD_TEST_ARENA_FALLBACK=1
// (use the mlock arena even where memfd_secret exists) and
// VAULTD_TEST_CLOCK_OFFSET=<duration> (shift the daemon's wall clock).
//
// # Security properties
//
// Guaranteed: a release build (no tag) contains no crash point, no test hook
// and does not read VAULTD_CRASHPOINT. Not guaranteed: anything about a
// crashpoints build, which is for tests only and must never be deployed.
// The caller's duty: place At only where a crash leaves persisted state that
// boot recovery is designed to handle.
package crash

// The named points. Key-file points fire on every durable write or
// destruction of a key-directory file; rotation points fire once per
// rotation, except RotateRewrapped, which fires once per re-wrapped data
// key; lease points fire once per transition.
const (
	// KeyTempSynced: a key file's temporary copy is written and fsynced, not
	// yet renamed.
	KeyTempSynced = "keyfile.temp-synced"
	// KeyRenamed: the temporary copy is renamed into place; the directory is
	// not yet fsynced.
	KeyRenamed = "keyfile.renamed"
	// KeyOverwritten: a file being destroyed is overwritten with random bytes
	// and fdatasynced, not yet unlinked.
	KeyOverwritten = "keyfile.overwritten"

	// RotateKEKWritten: the new epoch key is durable; no data key is
	// re-wrapped yet.
	RotateKEKWritten = "rotate.kek-written"
	// RotateRewrapped: one more data key is re-wrapped under the new epoch.
	RotateRewrapped = "rotate.rewrapped-one"
	// RotateAllRewrapped: every live data key is re-wrapped; the current
	// pointer still names the old epoch.
	RotateAllRewrapped = "rotate.rewrapped-all"
	// RotateSwitched: the current pointer names the new epoch; the old epoch
	// key still exists.
	RotateSwitched = "rotate.switched"
	// RotateOldKEKDestroyed: the old epoch key is destroyed; the old wraps
	// still exist.
	RotateOldKEKDestroyed = "rotate.old-kek-destroyed"

	// GrantMapBuilt: a new lease's map is built in the arena, nothing is
	// persisted yet (used with ":panic" for the traceback test).
	GrantMapBuilt = "grant.map-built"
	// GrantWrapped: the new lease's wrapped data key is durable; the lease
	// record and map ciphertext are not yet committed.
	GrantWrapped = "grant.dek-wrapped"
	// GrantCommitted: the lease record and map ciphertext are committed; the
	// reply is not yet sent.
	GrantCommitted = "grant.committed"
	// BindCommitted: the binding is committed; the reply is not yet sent.
	BindCommitted = "bind.committed"
	// ClaimCommitted: the claim is committed; the reply is not yet sent.
	ClaimCommitted = "claim.committed"

	// ConsumeCommitted, RevokeCommitted, ExpireCommitted: the terminal state
	// is committed; the data key is not yet destroyed.
	ConsumeCommitted = "consume.committed"
	RevokeCommitted  = "revoke.committed"
	ExpireCommitted  = "expire.committed"
	// ConsumeKeyDestroyed, RevokeKeyDestroyed, ExpireKeyDestroyed: the data
	// key is destroyed; its destruction is not yet recorded in the lease.
	ConsumeKeyDestroyed = "consume.key-destroyed"
	RevokeKeyDestroyed  = "revoke.key-destroyed"
	ExpireKeyDestroyed  = "expire.key-destroyed"
)
