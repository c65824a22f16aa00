// Package keys is vaultd's key directory: the epoch keys (KEKs) and the
// wrapped per-lease data keys (DEKs). It lives outside the Badger directory
// and is never part of a backup.
//
// # Layout
//
//	<key dir>/              0700
//	  current               the current epoch, decimal, one line ("3\n")
//	  epoch-<n>.key         32 random bytes, 0600: the key of epoch n
//	  backup.key            32 random bytes, 0600: the backup key
//	  dek/                  0700
//	    <lease>.<n>         72 bytes, 0600: lease's data key wrapped under epoch n
//
// <lease> is the 26 base32 characters of the lease id "pcl:<26>". A wrap is
// XChaCha20-Poly1305 under the epoch key: a 24-byte random nonce followed
// by the sealed 32-byte data key and its 16-byte tag, with associated data
//
//	"privacycut/dek/v1" ‖ lease id ("pcl:…", 30 bytes) ‖ n (8 bytes, big-endian)
//
// so a wrap authenticates only for its own lease and epoch. The backup key
// keys the integrity check of backups of the state directory (package
// vault/store): HMAC-SHA256 under it, and its public id, the first 16
// bytes of HMAC-SHA256(backup key, "privacycut/backup-key-id/v1"), which a
// backup names. It is created when the directory is first opened for
// writing and is not rotated: backups stay verifiable across rotations.
// Losing the key directory loses it too; a backup taken before then can no
// longer be verified (nor, its data keys being gone, decrypted), and is
// refused by Restore and proves no erasure. Every write is
// temp file (O_EXCL, 0600) → write → fsync → rename → fsync(dir); every
// destruction is overwrite with random bytes → fdatasync → unlink →
// fsync(dir).
//
// # Rotation and recovery
//
// Rotate moves from epoch e to e+1: (1) write epoch-(e+1).key durably;
// (2) re-wrap every data key under e+1 (each durably; the old wraps stay);
// (3) switch current to e+1; (4) destroy epoch-e.key; (5) destroy the wraps
// under e. Open runs boot recovery: it destroys temporary files, then, if
// current still names e, rolls the rotation back (destroys epoch e+1 and its
// wraps), and if it names e+1, finishes it (destroys epoch e and its wraps).
// Either way exactly one epoch key remains and every wrap is under it. A
// crash at any step therefore leaves every live data key usable under one
// epoch. The build tag crashpoints (package vault/crash) names a
// point after each step and inside each file write.
//
// # Security properties
//
// Guaranteed:
//
//   - Key bytes never pass through an ordinary heap buffer on their way in
//     or out: epoch keys are read with read(2) straight into the arena and
//     written with write(2) straight from it; data keys are generated in the
//     arena and unwrapped into it with arena.Open.
//   - A wrap authenticates only under its epoch key and for its lease and
//     epoch; a flipped bit in a wrap, or a wrong or damaged epoch key, is
//     ErrCorrupt (LEASE_UNRECOVERABLE). A missing wrap is ErrNoKey
//     (LEASE_UNRECOVERABLE). Nothing is ever guessed, repaired or derived
//     again: the loss of the key directory makes its leases unrecoverable.
//   - After a rotation (and after boot recovery of an interrupted one) the
//     old epoch key file is destroyed, so any copy of an old wrap (old
//     files, disk residue, a copied key directory without the new key)
//     fails to authenticate under the keys that remain.
//   - Errors carry epochs, operations and file names (lease ids and epochs
//     are public), never key bytes.
//
// Not guaranteed:
//
//   - Physical erasure. Overwriting before unlinking is best effort:
//     journaling and copy-on-write file systems, SSD flash translation,
//     RAID, snapshots and backups of the key directory may keep old blocks.
//     The erasure claim is about backups of the state directory (which
//     never contain key material) and about residue encrypted under a
//     destroyed epoch key — not about every physical byte.
//   - Key schedules on the heap. chacha20poly1305.NewX copies the epoch key
//     into a heap object for the duration of one wrap or unwrap; the object
//     is dropped, not wiped. Host swap must be off (or the cgroup's
//     memory.swap.max 0) and the process non-dumpable (package harden) for
//     those copies to stay in RAM and out of cores.
//   - Protection against a reader of the key directory: anyone who can read
//     it can unwrap every live data key. Keep it 0700 (Open refuses a
//     directory that grants group or other access) on local storage.
//   - Atomicity against a concurrent process: one vaultd per key directory.
//     ReadOnly opens skip recovery and may see a rotation in progress.
//
// The caller's duties: hold the data keys it gets from NewKey and Unwrap only
// as *arena.Secret and Wipe them when done; persist a lease's terminal state
// before calling Destroy; pass FirstEpoch above every epoch it has seen;
// Close the directory before closing the arena.
package keys
