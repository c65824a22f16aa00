package service

import (
	"errors"
	"syscall"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/keys"
	"github.com/privacycut/privacycut/vault/store"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"golang.org/x/sys/unix"
)

// DefaultMinFree is vaultd's default free-space floor: room for Badger to
// flush a memtable (8 MiB) and compact level 0 into level 1, for the
// largest sealed map (8 MiB), and for the key directory's rewrites, with a
// margin.
const DefaultMinFree = 128 << 20

// minFreeInodes is the inode floor that comes with a byte floor: a grant
// writes a key file, a rotation a key file per epoch and a key store.
const minFreeInodes = 64

// Storage and DirSpace are package vaultapi's.
type (
	Storage  = vaultapi.Storage
	DirSpace = vaultapi.DirSpace
)

// dirSpace reads one directory's file system. A statfs failure counts as
// below the floor (when there is one): the vault cannot tell it has room.
func dirSpace(dir string, floor int64) DirSpace {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		d := DirSpace{FreeInodes: -1, Low: floor > 0, Error: "statfs"}
		var en unix.Errno
		if errors.As(err, &en) && unix.ErrnoName(en) != "" {
			d.Error = unix.ErrnoName(en)
		}
		return d
	}
	bs := int64(st.Bsize)
	d := DirSpace{FreeBytes: int64(st.Bavail) * bs, TotalBytes: int64(st.Blocks) * bs, FreeInodes: -1}
	if st.Files > 0 {
		d.FreeInodes = int64(st.Ffree)
	}
	d.Low = floor > 0 && (d.FreeBytes < floor || d.FreeInodes >= 0 && d.FreeInodes < minFreeInodes)
	return d
}

// Storage reads the free space of the state and key directories against
// the floor (Options.MinFree).
func (v *Vault) Storage() Storage {
	floor := v.opt.MinFree
	s := Storage{Floor: floor, State: dirSpace(v.opt.StateDir, floor), Key: dirSpace(v.opt.KeyDir, floor)}
	s.Low = s.State.Low || s.Key.Low
	return s
}

// spaceGate refuses what would write new data (a grant, a rotation, a
// restore) while a directory is below the floor: LIMIT_EXCEEDED with
// ErrStorageLow, naming the directory. Claims, consumes, revocations,
// expiry and rehydration of existing leases never pass through it.
func (v *Vault) spaceGate(op string) error {
	if v.opt.MinFree <= 0 {
		return nil
	}
	s := v.Storage()
	switch {
	case s.State.Low:
		return v.storageLow(op, "state_dir")
	case s.Key.Low:
		return v.storageLow(op, "key_dir")
	}
	return nil
}

func (v *Vault) storageLow(op, dir string) error {
	v.log.Warn("vault: refused: free space below the floor", "op", op, "dir", dir, "floor_bytes", v.opt.MinFree)
	return vaultapi.New(receipts.LimitExceeded, op, dir, vaultapi.ErrStorageLow)
}

// storageClass classifies an error from the store or the key directory
// that is about the disk: a full file system (ENOSPC, EDQUOT, or the
// store's unreservable log) is the storage refusal, naming the directory
// when it is known; a vanished state directory or an I/O error is
// ErrStorageFailed, and makes vaultd stop (Fatal).
func (v *Vault) storageClass(op string, err error) (*Error, bool) {
	dir := ""
	var se *store.Error
	if errors.As(err, &se) {
		dir = "state_dir"
	} else if ke := (*keys.Error)(nil); errors.As(err, &ke) {
		dir = "key_dir"
	}
	switch {
	case errors.Is(err, store.ErrNoSpace), errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return vaultapi.New(receipts.LimitExceeded, op, dir, vaultapi.ErrStorageLow), true
	case errors.Is(err, store.ErrGone), errors.Is(err, syscall.EIO):
		v.fault(err)
		return vaultapi.New("", op, dir, vaultapi.ErrStorageFailed), true
	}
	return nil, false
}

// Fatal is closed-over by vaultd: it delivers (once) the first storage
// failure after which the vault cannot keep its word — the state directory
// removed or replaced, or an I/O error from either directory. The vault
// refuses every write from then on; vaultd stops.
func (v *Vault) Fatal() <-chan error { return v.fatal }

// fault records a storage failure and reports it on Fatal, once.
func (v *Vault) fault(err error) {
	v.fatalOnce.Do(func() {
		v.log.Error("vault: storage failed; stopping", "error", err.Error())
		v.fatal <- err
	})
}

// checkStorage is the sweeper's look at the disk: a state directory that is
// gone is a fault even when nothing writes.
func (v *Vault) checkStorage() {
	if v.store != nil && v.store.Gone() {
		v.fault(store.ErrGone)
	}
}

// closeStore closes the store, or abandons it to crash recovery when a
// close would have to write where it cannot: the state directory is gone,
// or its file system is below the floor (Badger flushes the memtable into
// a new table file, a mapped write that a full disk turns into SIGBUS).
// Nothing acknowledged is lost either way (SyncWrites): the next start
// replays the write-ahead log. It returns an *UnclosedError in the second
// case.
func (v *Vault) closeStore() error {
	var why string
	switch {
	case v.store.Gone():
		why = "state directory removed or replaced"
	case v.opt.MinFree > 0 && dirSpace(v.opt.StateDir, v.opt.MinFree).Low:
		why = "free space below the floor; the write-ahead log is replayed at the next start"
	default:
		v.closing.Store("store")
		return v.store.Close()
	}
	v.closing.Store("store (abandon)")
	if err := v.store.Abandon(); err != nil {
		return errors.Join(&UnclosedError{Part: "store", Reason: why}, err)
	}
	return &UnclosedError{Part: "store", Reason: why}
}

// UnclosedError: Close left a part of the vault to crash recovery instead
// of closing it. Its text names the part and a fixed reason.
type UnclosedError struct {
	Part, Reason string
}

func (e *UnclosedError) Error() string { return "vault: not closed: " + e.Part + ": " + e.Reason }

// Closing names the step Close is in ("" before Close): vaultd reports it
// when a stop runs out of time.
func (v *Vault) Closing() string {
	s, _ := v.closing.Load().(string)
	return s
}

// openGate refuses to open a store whose write-ahead log Badger would
// replay and flush into a new table file while the state directory is
// below the floor.
func openGate(opt Options) error {
	if opt.MinFree <= 0 {
		return nil
	}
	pending, err := store.PendingLog(opt.StateDir)
	if err != nil || !pending || !dirSpace(opt.StateDir, opt.MinFree).Low {
		return nil
	}
	return vaultapi.New(receipts.LimitExceeded, "open", "state_dir", vaultapi.ErrStorageLow)
}
