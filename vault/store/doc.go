// Package store is vaultd's Badger database: lease records, sealed maps and
// the vault's persisted clock marks. It sees no key and no plaintext.
//
// # Keys and values
//
// Every Badger key is one prefix byte followed by the 16 random bytes of a
// lease id ("pcl:" + base32 of them), so no key is derived from a value:
//
//	0x01 ‖ id   the lease record: lease.Lease as JSON (encoding/json), read
//	            back through canon.Unmarshal and lease.Check
//	0x02 ‖ id   the sealed map: AEAD ciphertext the vault produced under the
//	            lease's data key, opaque here
//	0xf0 'c'    the high-water mark of the vault clock (unix ns, 8 bytes BE)
//	0xf0 'e'    the highest key epoch used (8 bytes BE)
//
// Lease records are stored in clear, as is: they hold only public metadata
// (ids, run, station, principal, digests, states and times; the digests of
// source material are keyed HMACs) and never a value, a token, a key or map
// bytes. Keeping them readable lets the vault list, show, revoke and expire
// leases without any key, and lets an operator inspect a backup.
//
// The database runs with SyncWrites (an acknowledged transition survives
// power loss, not just a process crash), compression off, small memory
// settings (8 MiB memtables, two of them, two compactors, no block cache)
// and a logger that drops every argument of Badger's messages. Nothing in
// the vault calls mlockall: Badger's mappings are never locked.
//
// # Disk guard
//
// Before every write transaction (disk.go) the store checks that the state
// directory's path still names the directory it opened (device and
// inode), refusing with ErrGone otherwise, and allocates every block of
// Badger's memtable logs (fallocate over each .mem file, once per file and
// size), refusing with ErrNoSpace when it cannot. Badger writes those logs,
// and new table files, through shared mappings of files it creates sparse;
// a store into an unbacked page on a full file system is a SIGBUS, which
// the Go runtime cannot turn into an error. Table files cannot be reserved,
// so the store counts (generously) what it wrote into the current memtable
// and, past half of it, refuses a write with ErrNoSpace while the file
// system has less than two memtables (16 MiB) free: the flush it would
// bring about could fault. Abandon syncs and leaves the database to crash
// recovery, for a process about to exit when a close would flush onto a
// full disk or into a directory that is gone.
//
// # Transitions
//
// Update is the compare-and-set of a lease transition in one transaction:
// read, apply a pure lease function, check lease.Forward, write; a
// terminal move deletes the sealed map in the same transaction. A lost race
// (badger.ErrConflict) is retried on the fresh record, at most 64 times.
// Every write of the store is a group commit (group.go): the writes of every
// writer queued behind a commit go into the next one, a single Badger
// transaction and log sync, and each writer returns once the commit holding
// its write is durable. A transition refused by its function adds nothing
// to the batch and undoes nothing of the others'.
//
// # Backup stream
//
//	"privacycut-vault-backup/2\n"
//	key id:   the backup key's public id (16)
//	record*:  kind (1: 'L' lease | 'M' map) ‖ id (16) ‖ length (4, BE) ‖ value
//	end:      'E' ‖ record count (8, BE)
//	trailer:  HMAC-SHA256 under the backup key of every preceding byte (32)
//
// Lease records come first, then maps, from one snapshot. The backup key
// lives in the vault's key directory (package vault/keys), never in the
// Badger directory and never in a backup, so the trailer detects an edit
// as well as damage: whoever holds a backup without the key directory
// cannot recompute it. ReadBackup checks the key id (another key's is
// ErrBackupKey) and then the trailer in constant time before it parses a
// single record; a stream of the earlier format ("…/1", with a plain
// SHA-256 trailer) is ErrBackupVersion. All three are MALFORMED_RECORD.
// For example, an 'M' record of one lease, its bytes flipped and the
// trailer replaced by the SHA-256 of the edited stream (what sufficed
// before), is ErrBackup at the trailer's offset (testdata/backup/).
// Restore merges: a lease already in the store is kept as it is, so a
// restore never moves a lease backwards.
//
// # Security properties
//
// Guaranteed:
//
//   - Badger only ever receives opaque keys, public lease metadata and the
//     ciphertext the vault gives it; a backup holds exactly those and
//     nothing of the key directory.
//   - A terminal transition and the deletion of the sealed map are one
//     transaction, committed with SyncWrites before Update returns.
//   - No stored lease moves backwards: every write is checked with
//     lease.Forward against the record it replaces, and Restore never
//     overwrites a stored lease.
//   - Records that do not decode strictly or fail lease.Check are reported
//     as ErrCorrupt (LEASE_UNRECOVERABLE), never repaired.
//   - Errors and log lines carry operations, offsets and Badger's constant
//     format strings with the errno name and operation of the error they
//     print, never values or the error's text.
//   - Badger's memtable logs have their blocks allocated before any write
//     reaches them; no write goes to a state directory that is gone.
//
// Not guaranteed:
//
//   - Erasure. Badger's delete writes a tombstone; old versions of records
//     and sealed maps stay in .mem, .sst and .vlog files until compaction
//     rewrites them, and even then the file system may keep the blocks.
//     That residue is ciphertext whose data key the vault destroys (and,
//     after a rotation, whose epoch key is gone): erasure rests on the key
//     directory, not on this package.
//   - Confidentiality of lease metadata. A backup's trailer proves that
//     the stream is one this vault wrote (or another holder of its key
//     directory), not which backup it is: an older, intact backup of the
//     same vault verifies too.
//   - That no mapped write faults: the value log (values over 64 KiB) and
//     table files written while the file system has room but fills before
//     Badger is done are not reserved. The vault's floor keeps grants, the
//     only large writes, off a nearly full disk.
//
// The caller's duties: give Create and Update only ciphertext; destroy the
// data key of a lease after Update has committed its terminal state; run
// one process per directory (Badger holds a directory lock).
package store
