package keys

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/crash"
	"github.com/privacycut/privacycut/vault/internal/verr"
	"golang.org/x/crypto/chacha20poly1305"
)

// Sizes of the key material and of the files holding it.
const (
	// KeySize is the size of an epoch key and of a data key.
	KeySize = 32
	// WrapSize is the size of a wrapped data key file: a 24-byte
	// XChaCha20-Poly1305 nonce followed by the sealed key and its tag.
	WrapSize = chacha20poly1305.NonceSizeX + KeySize + chacha20poly1305.Overhead
)

// File names inside the key directory.
const (
	currentName = "current"
	dekDirName  = "dek"
	epochPrefix = "epoch-"
	epochSuffix = ".key"
	maxPointer  = 64
)

// dekAADPrefix starts the associated data of every wrapped data key.
const dekAADPrefix = "privacycut/dek/v1"

// Options configure Open.
type Options struct {
	// Arena holds the current epoch key and every data key the directory
	// generates or unwraps. Without one the directory still recovers its
	// files and destroys keys, but cannot wrap, unwrap or rotate
	// (ErrUnavailable, code VAULT_PROFILE_NOT_PROVEN).
	Arena *arena.Arena
	// FirstEpoch numbers the epoch created in an empty (new or lost)
	// directory; 0 means 1. The vault passes one more than the highest epoch
	// it has seen, so a lost directory never reuses an epoch number.
	FirstEpoch uint64
	// ReadOnly opens the directory without recovery and without writing
	// anything: for proving erasure against a live daemon's key directory.
	ReadOnly bool
	// Logger receives recovery events (epochs and counts only). Nil
	// discards them.
	Logger *slog.Logger
}

// Report says what Open's boot recovery did.
type Report struct {
	Epoch          uint64   // the current epoch after recovery (0: none)
	Created        bool     // a first epoch key was created
	RolledBack     []uint64 // epochs above the pointer destroyed (rotation not switched)
	Finished       []uint64 // epochs below the pointer destroyed (rotation switched)
	Wraps          int      // wrapped data keys of non-current epochs destroyed
	Temps          int      // temporary and free files destroyed
	PointerRebuilt bool     // the current pointer was missing or unreadable and was rewritten
}

// Rotation is the result of Rotate.
type Rotation struct {
	From, To  uint64
	Rewrapped int // data keys re-wrapped under To
	Dropped   int // wrapped data keys that failed authentication and were destroyed
}

// Dir is an open key directory. Its methods are safe for concurrent use;
// Rotate excludes every other operation while it runs.
type Dir struct {
	path, dekDir string
	freeDir      string // free wrap files (free.go)
	a            *arena.Arena
	log          *slog.Logger
	readOnly     bool
	boot         Report

	mu     sync.RWMutex
	epoch  uint64
	kek    *arena.Secret // current epoch key, in the arena; nil when unavailable
	kekErr error         // why kek is nil
	bkey   *arena.Secret // the backup key, in the arena; nil when unavailable
	bkID   [BackupKeyIDSize]byte
	bkErr  error // why bkey is nil

	freeMu sync.Mutex
	free   []string // pooled free wrap files of dekDir (free.go)

	// stop, when set by a test of this package, is asked at every rotation
	// step (a halt value); a non-nil error makes Rotate return at once,
	// leaving the files as a crash there would.
	stop func(step halt) error
}

// Open opens (creating if needed) the key directory at path and runs boot
// recovery: temporary files are destroyed, a half-done rotation is rolled
// back (pointer not yet switched) or finished (switched), so that exactly
// one epoch key remains and every wrapped data key is under it. The current
// epoch key is then read straight into the arena.
func Open(path string, opt Options) (*Dir, error) {
	d := &Dir{
		path:     path,
		dekDir:   filepath.Join(path, dekDirName),
		freeDir:  filepath.Join(path, freeDirName),
		a:        opt.Arena,
		log:      opt.Logger,
		readOnly: opt.ReadOnly,
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if opt.ReadOnly {
		return d, d.openReadOnly()
	}
	for _, dir := range []string{path, d.dekDir, d.freeDir} {
		if err := ensureDir(dir); err != nil {
			if errors.Is(err, ErrPermissions) {
				return nil, newError("open", 0, ErrPermissions, nil)
			}
			return nil, newError("open", 0, ErrIO, err)
		}
	}
	if err := d.recover(opt.FirstEpoch); err != nil {
		return nil, err
	}
	d.loadKEK()
	d.loadBackupKey()
	return d, nil
}

func (d *Dir) openReadOnly() error {
	d.loadBackupKey()
	c, ok := readPointer(d.path)
	if !ok {
		d.kekErr = newError("open", 0, ErrUnavailable, nil)
		return nil
	}
	d.epoch = c
	d.loadKEK()
	return nil
}

// BootReport returns what boot recovery did.
func (d *Dir) BootReport() Report {
	r := d.boot
	r.RolledBack = slices.Clone(r.RolledBack)
	r.Finished = slices.Clone(r.Finished)
	return r
}

// Epoch returns the current epoch number (0 when the directory has none).
func (d *Dir) Epoch() uint64 {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.epoch
}

// Available returns nil when the directory can wrap and unwrap data keys,
// else the reason (ErrUnavailable or ErrCorrupt).
func (d *Dir) Available() error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.kek == nil {
		return d.kekErr
	}
	return nil
}

// recover is boot recovery; see Open.
func (d *Dir) recover(firstEpoch uint64) error {
	const op = "recover"
	// Temporary copies may hold a whole key: destroy them first.
	for _, dir := range []string{d.path, d.dekDir, d.freeDir} {
		names, err := listNames(dir)
		if err != nil {
			return newError(op, 0, ErrIO, err)
		}
		for _, n := range names {
			if strings.HasSuffix(n, tmpSuffix) || dir == d.freeDir {
				if err := destroyFile(dir, n); err != nil {
					return newError(op, 0, ErrIO, err)
				}
				d.boot.Temps++
			}
		}
	}
	epochs, err := d.epochs()
	if err != nil {
		return newError(op, 0, ErrIO, err)
	}
	c, ok := readPointer(d.path)
	switch {
	case len(epochs) == 0:
		if d.a == nil {
			// No arena to create a key in: leave the directory empty; a
			// boot with an arena creates the first epoch.
			d.kekErr = noArena("open", 0)
			return nil
		}
		c = max(firstEpoch, 1)
		if err := d.createEpoch(c); err != nil {
			return newError(op, c, ErrIO, err)
		}
		if err := writePointer(d.path, c); err != nil {
			return newError(op, c, ErrIO, err)
		}
		d.boot.Created = true
		epochs = []uint64{c}
	case !ok || !slices.Contains(epochs, c):
		// The pointer is written by atomic rename, so no crash leaves it
		// unreadable: this is damage. The lowest epoch is the one every
		// crash-reachable state still has complete wraps for.
		c = epochs[0]
		if err := writePointer(d.path, c); err != nil {
			return newError(op, c, ErrIO, err)
		}
		d.boot.PointerRebuilt = true
		d.log.Warn("keys: current epoch pointer unreadable; rebuilt", "epoch", c)
	}
	d.epoch = c
	d.boot.Epoch = c

	// Wraps first, then epoch keys: a crash in between leaves an extra
	// epoch key with no wraps, which the next boot destroys.
	wraps, err := d.wraps()
	if err != nil {
		return newError(op, c, ErrIO, err)
	}
	for _, w := range wraps {
		if w.epoch == c {
			continue
		}
		if err := destroyFile(d.dekDir, w.name); err != nil {
			return newError(op, c, ErrIO, err)
		}
		d.boot.Wraps++
	}
	for _, e := range epochs {
		switch {
		case e < c:
			d.boot.Finished = append(d.boot.Finished, e)
		case e > c:
			d.boot.RolledBack = append(d.boot.RolledBack, e)
		default:
			continue
		}
		if err := destroyFile(d.path, epochName(e)); err != nil {
			return newError(op, e, ErrIO, err)
		}
	}
	if len(d.boot.Finished)+len(d.boot.RolledBack)+d.boot.Wraps+d.boot.Temps > 0 {
		d.log.Info("keys: boot recovery", "epoch", c, "finished", len(d.boot.Finished),
			"rolled_back", len(d.boot.RolledBack), "wraps_destroyed", d.boot.Wraps, "temps_destroyed", d.boot.Temps)
	}
	return nil
}

// loadKEK reads the current epoch key straight into the arena.
func (d *Dir) loadKEK() {
	if d.a == nil {
		d.kekErr = noArena("open", d.epoch)
		return
	}
	if d.epoch == 0 {
		if d.kekErr == nil {
			d.kekErr = newError("open", 0, ErrUnavailable, nil)
		}
		return
	}
	s, err := d.readKey(d.epoch)
	if err != nil {
		d.kekErr = err
		d.log.Error("keys: current epoch key unusable; its leases are unrecoverable", "epoch", d.epoch)
		return
	}
	d.kek = s
}

// readKey reads epoch key e from its file into a new arena secret.
func (d *Dir) readKey(e uint64) (*arena.Secret, error) { return d.readKeyFile(epochName(e), e) }

// createEpoch generates epoch key e in the arena and writes it durably.
func (d *Dir) createEpoch(e uint64) error {
	s, err := d.NewKey()
	if err != nil {
		return err
	}
	defer s.Wipe()
	return d.writeKey(e, s)
}

// writeKey writes the arena secret s as epoch key e (write(2) straight from
// arena memory).
func (d *Dir) writeKey(e uint64, s *arena.Secret) error { return d.writeKeyFile(epochName(e), s) }

// NewKey returns KeySize fresh random bytes in the arena: a data key.
func (d *Dir) NewKey() (*arena.Secret, error) {
	if d.a == nil {
		return nil, noArena("new-key", 0)
	}
	s, err := d.a.Alloc(KeySize)
	if err != nil {
		return nil, err
	}
	if err := s.Fill(func(dst []byte) error {
		rand.Read(dst) // getrandom(2) into arena memory; never fails (Go 1.24+)
		return nil
	}); err != nil {
		s.Wipe()
		return nil, err
	}
	return s, nil
}

// Wrap seals the data key dek of a lease under the current epoch key and
// writes it durably as dek/<lease>.<epoch>: into a pooled free file renamed
// into place when there is one (free.go), else a new file. It refuses to
// replace an existing wrap.
func (d *Dir) Wrap(leaseID string, dek *arena.Secret) error {
	const op = "wrap"
	name, ok := idName(leaseID)
	if !ok {
		return newError(op, 0, ErrInvalid, nil)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if err := d.usable(op); err != nil {
		return err
	}
	b, err := wrapWith(d.kek, d.epoch, leaseID, dek)
	if err != nil {
		return err
	}
	final := wrapName(name, d.epoch)
	if free, ok := d.takeFree(); ok {
		err = d.wrapInto(free, final, b)
	} else {
		err = writeBytes(d.dekDir, final, false, b)
	}
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return newError(op, d.epoch, ErrExists, nil)
		}
		return newError(op, d.epoch, ErrIO, err)
	}
	return nil
}

// Unwrap reads the lease's wrapped data key under the current epoch and
// opens it straight into the arena. A missing wrap is ErrNoKey, one that
// fails authentication ErrCorrupt, both LEASE_UNRECOVERABLE. The caller
// wipes the returned secret.
func (d *Dir) Unwrap(leaseID string) (*arena.Secret, error) {
	const op = "unwrap"
	name, ok := idName(leaseID)
	if !ok {
		return nil, newError(op, 0, ErrInvalid, nil)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.kek == nil && d.kekErr != nil && errors.Is(d.kekErr, ErrCorrupt) {
		return nil, newError(op, d.epoch, ErrCorrupt, nil)
	}
	if err := d.usable(op); err != nil {
		return nil, err
	}
	b, err := readSmall(filepath.Join(d.dekDir, wrapName(name, d.epoch)), WrapSize)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, newError(op, d.epoch, ErrNoKey, nil)
	case errors.Is(err, ErrCorrupt):
		return nil, newError(op, d.epoch, ErrCorrupt, nil)
	case err != nil:
		return nil, newError(op, d.epoch, ErrIO, err)
	}
	return d.unwrapWith(d.kek, d.epoch, leaseID, b)
}

// Has reports whether the lease has a wrapped data key under the current
// epoch. It says nothing about whether the wrap authenticates.
func (d *Dir) Has(leaseID string) bool {
	name, ok := idName(leaseID)
	if !ok {
		return false
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.epoch == 0 {
		return false
	}
	fi, err := os.Lstat(filepath.Join(d.dekDir, wrapName(name, d.epoch)))
	return err == nil && fi.Mode().IsRegular()
}

// Destroy destroys the lease's wrapped data key: overwrite with random
// bytes, fdatasync, then rename it to a pooled free file (free.go), or
// unlink it when the pool is full, and fsync the directory. Destroying a
// missing key is not an error. It works without an arena.
func (d *Dir) Destroy(leaseID string) error {
	const op = "destroy"
	name, ok := idName(leaseID)
	if !ok {
		return newError(op, 0, ErrInvalid, nil)
	}
	if d.readOnly {
		return newError(op, 0, ErrUnavailable, nil)
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.epoch == 0 {
		return nil
	}
	done, err := d.destroyToFree(wrapName(name, d.epoch))
	if !done {
		err = destroyFile(d.dekDir, wrapName(name, d.epoch))
	}
	if err != nil {
		return newError(op, d.epoch, ErrIO, err)
	}
	return nil
}

// Wrapped returns the ids of every lease with a wrapped data key under the
// current epoch, in file-name order.
func (d *Dir) Wrapped() ([]string, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	ws, err := d.wraps()
	if err != nil {
		return nil, newError("list", d.epoch, ErrIO, err)
	}
	var ids []string
	for _, w := range ws {
		if w.epoch == d.epoch {
			ids = append(ids, w.lease)
		}
	}
	return ids, nil
}

// Rotate moves every wrapped data key from epoch e to a new epoch e+1, in
// crash-safe steps: (1) write the new epoch key durably; (2) re-wrap every
// data key under it, each durably, keeping the old wraps; (3) switch the
// current pointer; (4) destroy the old epoch key; (5) destroy the old wraps.
// A crash before (3) is rolled back by the next Open, a crash after it is
// finished. A wrap that fails authentication under the old key is
// unrecoverable and is dropped (destroyed); any other failure before (3)
// rolls the rotation back and returns the error.
func (d *Dir) Rotate() (Rotation, error) {
	const op = "rotate"
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.readOnly {
		return Rotation{}, newError(op, 0, ErrUnavailable, nil)
	}
	if d.a == nil || d.epoch == 0 {
		return Rotation{}, noArena(op, 0)
	}
	from := d.epoch
	to := from + 1
	r := Rotation{From: from, To: to}

	kek, err := d.NewKey()
	if err != nil {
		return r, err
	}
	rollback := func(cause error) (Rotation, error) {
		kek.Wipe()
		if ws, err := d.wraps(); err == nil {
			for _, w := range ws {
				if w.epoch == to {
					_ = destroyFile(d.dekDir, w.name)
				}
			}
		}
		_ = destroyFile(d.path, epochName(to))
		return Rotation{From: from, To: from}, cause
	}
	if err := d.writeKey(to, kek); err != nil {
		return rollback(newError(op, to, ErrIO, err))
	}
	crash.At(crash.RotateKEKWritten)
	if err := d.halt(haltKEKWritten); err != nil {
		return r, err
	}

	ws, err := d.wraps()
	if err != nil {
		return rollback(newError(op, from, ErrIO, err))
	}
	var dropped []string
	for _, w := range ws {
		if w.epoch != from {
			continue
		}
		ok, err := d.rewrap(w, kek, to)
		if err != nil {
			return rollback(err)
		}
		if !ok {
			dropped = append(dropped, w.name)
			continue
		}
		r.Rewrapped++
		crash.At(crash.RotateRewrapped)
		if err := d.halt(haltRewrapped); err != nil {
			return r, err
		}
	}
	crash.At(crash.RotateAllRewrapped)
	if err := d.halt(haltAllRewrapped); err != nil {
		return r, err
	}

	if err := writePointer(d.path, to); err != nil {
		return rollback(newError(op, to, ErrIO, err))
	}
	crash.At(crash.RotateSwitched)
	if err := d.halt(haltSwitched); err != nil {
		return r, err
	}
	old := d.kek
	d.kek, d.kekErr, d.epoch = kek, nil, to
	old.Wipe()

	// From here on failures leave files that the next Open destroys.
	if err := destroyFile(d.path, epochName(from)); err != nil {
		return r, newError(op, from, ErrIO, err)
	}
	crash.At(crash.RotateOldKEKDestroyed)
	if err := d.halt(haltOldKEKDestroyed); err != nil {
		return r, err
	}
	for _, w := range ws {
		if w.epoch != from {
			continue
		}
		if err := destroyFile(d.dekDir, w.name); err != nil {
			return r, newError(op, from, ErrIO, err)
		}
	}
	r.Dropped = len(dropped)
	if r.Dropped > 0 {
		d.log.Warn("keys: rotation dropped unauthenticated wraps", "epoch", to, "dropped", r.Dropped)
	}
	return r, nil
}

// halt names the rotation steps for the in-package tests' stop hook. They
// mirror the crash points, which are passed as constants straight to
// crash.At so that a release build does not contain their names.
type halt int

const (
	haltKEKWritten halt = iota + 1
	haltRewrapped
	haltAllRewrapped
	haltSwitched
	haltOldKEKDestroyed
)

// halt asks the test hook whether to stop at a rotation step.
func (d *Dir) halt(step halt) error {
	if d.stop != nil {
		return d.stop(step)
	}
	return nil
}

// rewrap re-wraps one data key from the current epoch under kek/to. It
// reports false (and no error) when the old wrap does not authenticate.
func (d *Dir) rewrap(w wrapFile, kek *arena.Secret, to uint64) (bool, error) {
	const op = "rotate"
	if d.kek == nil {
		return false, nil // the old epoch key is unusable: nothing authenticates
	}
	b, err := readSmall(filepath.Join(d.dekDir, w.name), WrapSize)
	if errors.Is(err, ErrCorrupt) {
		return false, nil
	}
	if err != nil {
		return false, newError(op, w.epoch, ErrIO, err)
	}
	dek, err := d.unwrapWith(d.kek, w.epoch, w.lease, b)
	if errors.Is(err, ErrCorrupt) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer dek.Wipe()
	nb, err := wrapWith(kek, to, w.lease, dek)
	if err != nil {
		return false, err
	}
	name, _ := idName(w.lease)
	if err := writeBytes(d.dekDir, wrapName(name, to), false, nb); err != nil {
		return false, newError(op, to, ErrIO, err)
	}
	return true, nil
}

// Close wipes the epoch key held in the arena. The directory's files stay.
func (d *Dir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.kek != nil {
		d.kek.Wipe()
		d.kek = nil
	}
	if d.bkey != nil {
		d.bkey.Wipe()
		d.bkey = nil
	}
	d.kekErr = newError("close", d.epoch, ErrUnavailable, nil)
	d.bkErr = d.kekErr
	if err := d.dropFree(); err != nil {
		return newError("close", d.epoch, ErrIO, err)
	}
	return nil
}

// usable checks that the epoch key is loaded. The caller holds mu.
func (d *Dir) usable(op string) error {
	if d.kek != nil {
		return nil
	}
	var e *Error
	if errors.As(d.kekErr, &e) {
		return &Error{Core: verr.Core{Code: e.Code, Op: op, Err: e.Err}, Epoch: d.epoch}
	}
	return newError(op, d.epoch, ErrUnavailable, nil)
}

// DEKAAD returns the associated data binding a wrapped data key to its lease
// and epoch: "privacycut/dek/v1" ‖ lease id ‖ epoch (8 bytes, big-endian).
func DEKAAD(leaseID string, epoch uint64) []byte {
	b := make([]byte, 0, len(dekAADPrefix)+len(leaseID)+8)
	b = append(b, dekAADPrefix...)
	b = append(b, leaseID...)
	return binary.BigEndian.AppendUint64(b, epoch)
}

// wrapWith seals dek under kek for (leaseID, epoch): nonce ‖ ciphertext.
// The AEAD instance (and the copy of kek it holds on the heap) is dropped on
// return.
func wrapWith(kek *arena.Secret, epoch uint64, leaseID string, dek *arena.Secret) ([]byte, error) {
	out := make([]byte, chacha20poly1305.NonceSizeX, WrapSize)
	rand.Read(out)
	aad := DEKAAD(leaseID, epoch)
	err := kek.Reveal(func(k []byte) error {
		aead, err := chacha20poly1305.NewX(k)
		if err != nil {
			return err
		}
		return dek.Reveal(func(p []byte) error {
			if len(p) != KeySize {
				return newError("wrap", epoch, ErrInvalid, nil)
			}
			out = aead.Seal(out, out, p, aad)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// unwrapWith opens a wrap file's bytes under kek straight into the arena.
func (d *Dir) unwrapWith(kek *arena.Secret, epoch uint64, leaseID string, b []byte) (*arena.Secret, error) {
	const op = "unwrap"
	if len(b) != WrapSize {
		return nil, newError(op, epoch, ErrCorrupt, nil)
	}
	var s *arena.Secret
	err := kek.Reveal(func(k []byte) error {
		aead, err := chacha20poly1305.NewX(k)
		if err != nil {
			return err
		}
		s, err = d.a.Open(aead, b[:chacha20poly1305.NonceSizeX], b[chacha20poly1305.NonceSizeX:], DEKAAD(leaseID, epoch))
		return err
	})
	if errors.Is(err, arena.ErrAuth) {
		return nil, newError(op, epoch, ErrCorrupt, nil)
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// wrapFile is one file of the dek directory.
type wrapFile struct {
	name  string
	lease string
	epoch uint64
}

// wraps lists the dek directory's wrap files (other names are ignored).
func (d *Dir) wraps() ([]wrapFile, error) {
	names, err := listNames(d.dekDir)
	if err != nil {
		return nil, err
	}
	var out []wrapFile
	for _, n := range names {
		base, ep, ok := strings.Cut(n, ".")
		if !ok || !validB32(base, 26) {
			continue
		}
		e, ok := parseEpoch(ep)
		if !ok {
			continue
		}
		out = append(out, wrapFile{name: n, lease: "pcl:" + base, epoch: e})
	}
	return out, nil
}

// epochs lists the epoch key files, ascending.
func (d *Dir) epochs() ([]uint64, error) {
	names, err := listNames(d.path)
	if err != nil {
		return nil, err
	}
	var out []uint64
	for _, n := range names {
		if !strings.HasPrefix(n, epochPrefix) || !strings.HasSuffix(n, epochSuffix) {
			continue
		}
		if e, ok := parseEpoch(n[len(epochPrefix) : len(n)-len(epochSuffix)]); ok {
			out = append(out, e)
		}
	}
	slices.Sort(out)
	return out, nil
}

func listNames(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names, nil
}

func readPointer(dir string) (uint64, bool) {
	b, err := readSmall(filepath.Join(dir, currentName), maxPointer)
	if err != nil {
		return 0, false
	}
	return parsePointer(b)
}

// parsePointer parses the content of the current pointer: what
// writePointer writes, the epoch and LF.
func parsePointer(b []byte) (uint64, bool) {
	s, ok := strings.CutSuffix(string(b), "\n")
	if !ok {
		return 0, false
	}
	return parseEpoch(s)
}

func writePointer(dir string, e uint64) error {
	return writeBytes(dir, currentName, true, []byte(strconv.FormatUint(e, 10)+"\n"))
}

// parseEpoch parses a decimal epoch ≥ 1 without sign or leading zeros.
func parseEpoch(s string) (uint64, bool) {
	if s == "" || s[0] == '0' || len(s) > 20 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	e, err := strconv.ParseUint(s, 10, 64)
	return e, err == nil
}

func epochName(e uint64) string { return epochPrefix + strconv.FormatUint(e, 10) + epochSuffix }

func wrapName(idName string, e uint64) string { return idName + "." + strconv.FormatUint(e, 10) }

// idName returns the file-name part of a lease id "pcl:<26 base32>".
func idName(leaseID string) (string, bool) {
	s, ok := strings.CutPrefix(leaseID, "pcl:")
	if !ok || !validB32(s, 26) {
		return "", false
	}
	return s, true
}

func validB32(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}
