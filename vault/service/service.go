package service

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/keys"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/store"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// Defaults for Options.
const (
	DefaultMaxLease      = 24 * time.Hour
	DefaultArenaSize     = 4 << 20
	DefaultStation       = "local"
	DefaultSweepInterval = time.Second
)

// Options configure Open.
type Options struct {
	StateDir string // Badger directory (leases and ciphertext); created 0700
	KeyDir   string // key directory (epoch keys, wrapped data keys); created 0700
	Station  string // this vault's station name; default "local"
	MaxLease time.Duration
	// ArenaSize is the arena's size in bytes (default 4 MiB). It must fit
	// RLIMIT_MEMLOCK unless the process has CAP_IPC_LOCK; if the arena
	// cannot be created the vault still opens, without an arena, and its
	// profile is not proven.
	ArenaSize int
	// Now is the wall clock (test hook); nil means time.Now.
	Now func() time.Time
	// ForceArenaFallback makes the arena use mmap+mlock even where
	// memfd_secret exists (test hook).
	ForceArenaFallback bool
	// SweepInterval is how often the sweeper expires leases and persists
	// the clock mark (default 1s); a negative value disables the sweeper
	// (tests call Sweep).
	SweepInterval time.Duration
	// Logger receives events without values; nil discards them.
	Logger *slog.Logger
	// MaxLeasesPerPrincipal bounds the live (ACTIVE or CLAIMED) leases of
	// one principal, grants in progress included: a grant past it is
	// LIMIT_EXCEEDED. 0 means DefaultMaxLeasesPerPrincipal.
	MaxLeasesPerPrincipal int
	// MaxScratchPerPrincipal bounds the erasure proofs one principal runs
	// at once, each holding a backup in memory and a scratch store on
	// disk: one more is LIMIT_EXCEEDED. 0 means
	// DefaultMaxScratchPerPrincipal.
	MaxScratchPerPrincipal int
	// MinFree is the free-space floor in bytes (space.go): while the state
	// or key directory's file system has less available, grants,
	// rotations and restores are refused (LIMIT_EXCEEDED, ErrStorageLow),
	// and Close leaves the store to crash recovery rather than flush it.
	// 0 disables the watermark; vaultd's default is DefaultMinFree.
	MinFree int64
}

// Vault is the daemon core: the in-process API that the gRPC server and
// tests call. All methods are safe for concurrent use.
type Vault struct {
	opt      Options
	log      *slog.Logger
	arena    *arena.Arena // nil when it could not be created
	arenaErr error
	keys     *keys.Dir
	store    *store.Store
	seal     *seal.KeyPair // nil without an arena

	mu      sync.Mutex
	profile harden.Profile
	live    map[string]time.Time // deadlines of live leases, for the sweeper
	owner   map[string]string    // principal of each live lease
	held    map[string]int       // live leases and grants in progress per principal
	scratch map[string]int       // erasure proofs running per principal
	pending map[string]bool      // terminal leases whose key destruction is not yet recorded
	closed  bool

	clockMu sync.Mutex
	mark    time.Time // highest effective time seen (persisted by the sweeper)

	stop chan struct{}
	wg   sync.WaitGroup

	fatal     chan error // the first storage failure (space.go)
	fatalOnce sync.Once
	closing   atomic.Value // the step Close is in (a string)
}

// Open opens the vault: it creates the arena, opens the store and the key
// directory, runs boot recovery (key rotation, then lease expiry and
// pending key destruction) and starts the sweeper. It does not harden the
// process: cmd/vaultd calls harden.Apply and then Prove. Until Prove
// reports an accepted profile every reversible request is refused with
// VAULT_PROFILE_NOT_PROVEN.
func Open(opt Options) (*Vault, error) {
	if opt.StateDir == "" || opt.KeyDir == "" {
		return nil, invalid("open", "state_dir/key_dir")
	}
	if err := separateDirs(opt.StateDir, opt.KeyDir); err != nil {
		return nil, err
	}
	if opt.Station == "" {
		opt.Station = DefaultStation
	}
	if !validStation(opt.Station) {
		return nil, invalid("open", "station")
	}
	if opt.MaxLease <= 0 {
		opt.MaxLease = DefaultMaxLease
	}
	if opt.ArenaSize <= 0 {
		opt.ArenaSize = DefaultArenaSize
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.SweepInterval == 0 {
		opt.SweepInterval = DefaultSweepInterval
	}
	if opt.MaxLeasesPerPrincipal < 0 || opt.MaxScratchPerPrincipal < 0 {
		return nil, invalid("open", "limits")
	}
	if opt.MaxLeasesPerPrincipal == 0 {
		opt.MaxLeasesPerPrincipal = DefaultMaxLeasesPerPrincipal
	}
	if opt.MaxScratchPerPrincipal == 0 {
		opt.MaxScratchPerPrincipal = DefaultMaxScratchPerPrincipal
	}
	v := &Vault{opt: opt, log: opt.Logger, live: map[string]time.Time{}, owner: map[string]string{},
		held: map[string]int{}, scratch: map[string]int{}, pending: map[string]bool{}, stop: make(chan struct{}),
		fatal: make(chan error, 1)}
	if v.log == nil {
		v.log = slog.New(slog.DiscardHandler)
	}

	a, err := arena.New(opt.ArenaSize, arena.Options{ForceFallback: opt.ForceArenaFallback})
	if err != nil {
		v.arenaErr = err
		v.log.Warn("vault: no arena; reversible requests will be refused", "error", err.Error())
	} else {
		v.arena = a
	}
	fail := func(err error) (*Vault, error) {
		v.closeAll()
		return nil, err
	}

	if err := openGate(opt); err != nil {
		return fail(err)
	}
	st, err := store.Open(opt.StateDir, store.Options{Logger: v.log})
	if err != nil {
		return fail(err)
	}
	v.store = st
	mark, err := st.Clock()
	if err != nil {
		return fail(err)
	}
	v.mark = mark
	leases, bad, err := st.List()
	if err != nil {
		return fail(err)
	}
	if bad > 0 {
		v.log.Error("vault: unreadable lease records", "count", bad)
	}
	first, err := st.Epoch()
	if err != nil {
		return fail(err)
	}
	for _, l := range leases {
		first = max(first, l.KeyEpoch)
	}
	kd, err := keys.Open(opt.KeyDir, keys.Options{Arena: v.arena, FirstEpoch: first + 1, Logger: v.log})
	if err != nil {
		return fail(err)
	}
	v.keys = kd
	if e := kd.Epoch(); e != 0 {
		if err := st.RaiseEpoch(e); err != nil {
			return fail(err)
		}
	}
	if v.arena != nil {
		kp, err := seal.NewKeyPair(v.arena)
		if err != nil {
			return fail(err)
		}
		v.seal = kp
	}
	if err := v.recover(leases); err != nil {
		return fail(err)
	}
	v.profile = harden.Prove(v.arena)
	if opt.SweepInterval > 0 {
		v.wg.Add(1)
		go v.sweeper(opt.SweepInterval)
	}
	return v, nil
}

func validStation(s string) bool {
	if len(s) == 0 || len(s) > lease.MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// recover is boot recovery of the leases: expire every live lease past its
// deadline (lease.Recover), destroy the key of every terminal lease whose
// destruction is not recorded, destroy wrapped keys that belong to no live
// lease, and persist the clock mark. A restart never extends a deadline:
// Recover never touches it.
func (v *Vault) recover(leases []lease.Lease) error {
	now := v.now()
	if err := v.store.AdvanceClock(now); err != nil {
		return err
	}
	known := map[string]lease.Lease{}
	expired, destroyed, unrecoverable := 0, 0, 0
	for _, l := range leases {
		r, changed, err := lease.Recover(l, now)
		if err != nil {
			v.log.Error("vault: lease fails its invariants", "lease", l.ID)
			continue
		}
		if changed {
			r, err = v.store.Update(l.ID, func(cur lease.Lease) (lease.Lease, error) {
				n, _, err := lease.Recover(cur, now)
				return n, err
			})
			if err != nil {
				return err
			}
			expired++
		}
		if !r.Live() && faultKeepKeys() {
			known[r.ID] = r // the defect of a faultinject build (fault_on.go)
			continue
		}
		if r.NeedsKeyDestruction() {
			if r, err = v.destroyKey(r, false); err != nil {
				return err
			}
			destroyed++
		} else if !r.Live() && v.keys.Has(r.ID) {
			// Recorded as destroyed, yet a wrap exists (a key directory
			// restored from elsewhere): destroy it again.
			if err := v.keys.Destroy(r.ID); err != nil {
				return err
			}
			destroyed++
		}
		known[r.ID] = r
		if r.Live() {
			v.track(r.ID, r.Principal, r.Deadline)
			if !v.keys.Has(r.ID) {
				unrecoverable++
			}
		}
	}
	// Wrapped keys of leases the store does not hold are kept: after a
	// crash between the durable wrap and the commit of a grant they protect
	// nothing, but after the loss of the state directory they are what
	// makes a restored backup usable again. They are counted, not destroyed.
	wrapped, err := v.keys.Wrapped()
	if err != nil {
		return err
	}
	orphans := 0
	for _, id := range wrapped {
		if _, ok := known[id]; !ok {
			orphans++
		}
	}
	if expired+destroyed+orphans+unrecoverable > 0 {
		v.log.Info("vault: boot recovery", "expired", expired, "keys_destroyed", destroyed,
			"keys_without_lease", orphans, "live_without_key", unrecoverable)
	}
	return nil
}

// now is the vault's effective clock: the later of the wall clock and the
// highest time the vault has seen (persisted across restarts), so that a
// clock set back never revives or extends anything.
func (v *Vault) now() time.Time {
	t := v.opt.Now().Round(0).UTC()
	v.clockMu.Lock()
	defer v.clockMu.Unlock()
	if t.Before(v.mark) {
		return v.mark
	}
	v.mark = t
	return t
}

func (v *Vault) persistClock() {
	m := v.now()
	if err := v.store.AdvanceClock(m); err != nil {
		v.log.Error("vault: cannot persist the clock mark", "error", err.Error())
	}
}

// Prove reads the process's kernel state (harden.Prove) and records the
// profile that gates reversible requests. cmd/vaultd calls it once, after
// harden.Apply; it returns the profile.
func (v *Vault) Prove() harden.Profile {
	p := harden.Prove(v.arena)
	v.mu.Lock()
	v.profile = p
	v.mu.Unlock()
	if !p.Accepted() {
		v.log.Warn("vault: profile not proven; reversible requests will be refused", "reasons", p.Reasons)
	}
	return p
}

// gate refuses a reversible request unless the profile is accepted.
func (v *Vault) gate(op string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return vaultapi.Fail(op, ErrClosed)
	}
	if !v.profile.Accepted() || v.arena == nil || v.seal == nil {
		return refusal(op, receipts.VaultProfileNotProven)
	}
	return nil
}

// Status is what Status reports (package vaultapi's type).
type Status = vaultapi.Status

// Status returns the profile proven at start-up, the sealing key and lease
// counts. It works whatever the profile.
func (v *Vault) Status() (Status, error) {
	v.mu.Lock()
	p := v.profile
	closed := v.closed
	v.mu.Unlock()
	if closed {
		return Status{}, vaultapi.Fail("status", ErrClosed)
	}
	st := Status{Profile: p, Station: v.opt.Station, Epoch: v.keys.Epoch(), MaxLease: v.opt.MaxLease, Leases: map[string]int{}}
	if v.seal != nil {
		st.SealKey = v.seal.Public()
	}
	if v.arenaErr != nil {
		st.ArenaError = v.arenaErr.Error()
	}
	st.Storage = v.Storage()
	n, err := v.store.Counts()
	if err != nil {
		return st, v.fail("status", err)
	}
	for state, k := range n {
		st.Leases[state.String()] = k
	}
	return st, nil
}

// Sweep expires every live lease whose deadline has passed, completes any
// pending key destruction, and persists the clock mark. The sweeper calls
// it every SweepInterval; it returns the number of leases expired.
func (v *Vault) Sweep() (int, error) {
	now := v.now()
	v.mu.Lock()
	var due, pend []string
	for id, dl := range v.live {
		if !now.Before(dl) {
			due = append(due, id)
		}
	}
	for id := range v.pending {
		pend = append(pend, id)
	}
	v.mu.Unlock()
	n := 0
	var first error
	for _, id := range due {
		l, err := v.store.Update(id, destroying(now, func(cur lease.Lease) (lease.Lease, error) {
			if !cur.Live() {
				return cur, nil
			}
			return cur.Expire(now)
		}))
		if err != nil {
			first = cmpErr(first, err)
			continue
		}
		if l.State == lease.Expired {
			n++
		}
		if v.mustDestroy(l) {
			if _, err := v.finishTerminal(l); err != nil {
				first = cmpErr(first, err)
			}
		} else if !l.Live() {
			v.forget(id)
		}
	}
	for _, id := range pend {
		l, err := v.store.Get(id)
		if err == nil && v.mustDestroy(l) {
			_, err = v.destroyKey(l, false)
		}
		if err == nil {
			v.mu.Lock()
			delete(v.pending, id)
			v.mu.Unlock()
		}
		first = cmpErr(first, err)
	}
	v.persistClock()
	return n, first
}

func cmpErr(first, err error) error {
	if first == nil {
		return err
	}
	return first
}

func (v *Vault) sweeper(every time.Duration) {
	defer v.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-v.stop:
			return
		case <-t.C:
			v.checkStorage()
			if _, err := v.Sweep(); err != nil {
				v.storageClass("sweep", err) // a storage failure stops vaultd (Fatal)
				v.log.Error("vault: sweep", "error", err.Error())
			}
		}
	}
}

// Close stops the sweeper, persists the clock mark, closes the store and
// the key directory, and wipes and unmaps the arena.
func (v *Vault) Close() error {
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil
	}
	v.closed = true
	v.mu.Unlock()
	v.closing.Store("sweeper")
	close(v.stop)
	v.wg.Wait()
	if v.store != nil && !v.store.Gone() {
		v.closing.Store("clock mark")
		v.persistClock()
	}
	err := v.closeAll()
	v.closing.Store("closed")
	return err
}

// closeAll closes what Open opened; the store through closeStore, which
// may leave it to crash recovery (an *UnclosedError in the result).
func (v *Vault) closeAll() error {
	var errs []error
	if v.seal != nil {
		v.seal.Close()
	}
	if v.keys != nil {
		v.closing.Store("key directory")
		errs = append(errs, v.keys.Close())
	}
	if v.store != nil {
		errs = append(errs, v.closeStore())
	}
	if v.arena != nil {
		v.closing.Store("arena")
		errs = append(errs, v.arena.Close())
	}
	return errors.Join(errs...)
}

// fail converts an error from below into an *Error, logging the ones that
// become ErrInternal (the log line carries the error, which holds no value).
func (v *Vault) fail(op string, err error) error {
	if err == nil {
		return nil
	}
	if e, ok := v.storageClass(op, err); ok {
		v.log.Error("vault: storage", "op", op, "error", err.Error())
		return e
	}
	e, known := classify(op, err)
	if !known {
		v.log.Error("vault: internal error", "op", op, "error", err.Error())
	}
	return e
}

// String summarises the vault without secrets.
func (v *Vault) String() string {
	return fmt.Sprintf("vault(station %s, epoch %d, arena %s)", v.opt.Station, v.keys.Epoch(), v.arena)
}
