package store

import (
	"encoding/base32"
	"encoding/binary"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/lease"
)

// Key prefixes. A Badger key is one prefix byte followed, for lease records
// and maps, by the 16 random bytes of the lease id: nothing a key holds is
// derived from a value.
const (
	prefixLease byte = 0x01 // lease record: lease.Lease as JSON
	prefixMap   byte = 0x02 // sealed map: AEAD ciphertext, opaque here
	prefixMeta  byte = 0xf0 // store metadata
)

var (
	keyClock = []byte{prefixMeta, 'c'} // high-water mark of the vault clock, unix ns, 8 bytes BE
	keyEpoch = []byte{prefixMeta, 'e'} // highest key epoch the vault has used, 8 bytes BE
)

// Limits.
const (
	// MaxRecord bounds a stored lease record (JSON) in bytes.
	MaxRecord = 64 << 10
	// MaxMap bounds a sealed map in bytes.
	MaxMap = 8 << 20
	// maxRetries bounds the reruns of a group commit that lost a
	// compare-and-set race (badger.ErrConflict).
	maxRetries = 64
)

// Options configure Open.
type Options struct {
	// Logger receives Badger's warnings and errors, reduced to their
	// constant format strings: the arguments (which may hold keys) are
	// dropped. Nil discards everything.
	Logger *slog.Logger
}

// Store is the vault's Badger database: lease records, sealed maps and two
// clocks. All methods are safe for concurrent use.
type Store struct {
	db   *badger.DB
	disk *disk      // the directory guard (disk.go)
	mu   sync.Mutex // serialises the metadata marks
	once sync.Once
	c    *cache // live leases as last committed (cache.go)
	g    group  // lease writes committed together (group.go)

	counts counts // leases by state (counts.go)
}

// Open opens (creating if needed, mode 0700) the Badger directory dir with
// synchronous writes, compression off, small memory settings and a logger
// that drops every argument.
func Open(dir string, opt Options) (*Store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, newError("open", ErrIO, err)
	}
	if n, err := removeEmptyLogs(dir); err != nil {
		return nil, newError("open", ErrIO, err)
	} else if n > 0 && opt.Logger != nil {
		opt.Logger.Warn("store: removed empty log files left by a crash", "files", n)
	}
	db, err := badger.Open(badgerOptions(dir, opt.Logger))
	if err != nil {
		return nil, newError("open", ErrIO, err)
	}
	d, err := newDisk(dir)
	if err != nil {
		db.Close()
		return nil, newError("open", ErrIO, err)
	}
	s := &Store{db: db, disk: d, c: newCache()}
	// Reserve the write-ahead log now; without room the store still opens
	// (status, lists and reads work) and each write retries the reservation.
	if err := d.reserveLogs("open"); err != nil && opt.Logger != nil {
		opt.Logger.Warn("store: write-ahead log not reserved; writes are refused until it is", "error", err.Error())
	}
	return s, nil
}

// removeEmptyLogs deletes 0-byte memtable (write-ahead log, .mem) and value
// log (.vlog) files. A SIGKILL between Badger's creation of such a file and
// its first truncation or header write leaves one, and Badger v4.9.6 then
// fails to open the directory (dgraph-io/badger#2207; the C3 crash suite
// hit the .vlog case). An empty file holds no entry and nothing can point
// into it, so removing it loses nothing; a non-empty one is left for
// Badger's own replay.
func removeEmptyLogs(dir string) (int, error) {
	mem, err := filepath.Glob(filepath.Join(dir, "*.mem"))
	if err != nil {
		return 0, err
	}
	vlog, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	if err != nil {
		return 0, err
	}
	files := append(mem, vlog...)
	n := 0
	for _, f := range files {
		fi, err := os.Lstat(f)
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != 0 {
			continue
		}
		if err := os.Remove(f); err != nil {
			return n, err
		}
		n++
	}
	if n > 0 {
		d, err := os.Open(dir)
		if err != nil {
			return n, err
		}
		defer d.Close()
		return n, d.Sync()
	}
	return n, nil
}

// badgerOptions are the store's Badger settings. They pass Badger's own
// checks: two compactors (one is refused), compression off so the block
// cache may be 0, ValueThreshold under 15% of MemTableSize.
func badgerOptions(dir string, log *slog.Logger) badger.Options {
	return badger.DefaultOptions(dir).
		WithSyncWrites(true).
		WithLogger(quietLogger{log}).
		WithCompression(options.None).
		WithBlockCacheSize(0).
		WithIndexCacheSize(0).
		WithMemTableSize(memTableSize).
		WithNumMemtables(2).
		WithNumLevelZeroTables(2).
		WithNumLevelZeroTablesStall(4).
		WithBaseTableSize(2 << 20).
		WithBaseLevelSize(8 << 20).
		WithValueLogFileSize(32 << 20).
		WithValueThreshold(valueThreshold).
		WithNumCompactors(2).
		WithNumGoroutines(2).
		WithMetricsEnabled(false).
		WithDetectConflicts(true).
		WithNumVersionsToKeep(1)
}

// Close closes the database. Closing twice is harmless.
func (s *Store) Close() error {
	var err error
	s.once.Do(func() { err = s.db.Close() })
	if err != nil {
		return newError("close", ErrIO, err)
	}
	return nil
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// IDBytes returns the 16 random bytes of a lease id "pcl:<26 base32>".
func IDBytes(id string) ([16]byte, bool) {
	var out [16]byte
	s, ok := strings.CutPrefix(id, "pcl:")
	if !ok || len(s) != 26 {
		return out, false
	}
	b, err := idEncoding.DecodeString(s)
	if err != nil || len(b) != 16 || lease.FormatID([16]byte(b)) != id {
		return out, false
	}
	return [16]byte(b), true
}

func key(prefix byte, id [16]byte) []byte {
	k := make([]byte, 17)
	k[0] = prefix
	copy(k[1:], id[:])
	return k
}

func idKeys(op, id string) (leaseKey, mapKey []byte, err error) {
	b, ok := IDBytes(id)
	if !ok {
		return nil, nil, newError(op, ErrInvalid, nil)
	}
	return key(prefixLease, b), key(prefixMap, b), nil
}

// encodeLease is the stored form of a lease: its JSON, as package lease
// documents it.
func encodeLease(l lease.Lease) ([]byte, error) {
	b, err := json.Marshal(l)
	if err != nil {
		return nil, newError("encode", ErrInvalid, err)
	}
	if len(b) > MaxRecord {
		return nil, newError("encode", ErrTooLarge, nil)
	}
	return b, nil
}

// decodeLease reads a stored lease through the strict decoder and checks
// its invariants; anything else is ErrCorrupt (LEASE_UNRECOVERABLE).
func decodeLease(op string, b []byte, id string) (lease.Lease, error) {
	var l lease.Lease
	if len(b) > MaxRecord {
		return l, newError(op, ErrCorrupt, nil)
	}
	if err := canon.Unmarshal(b, &l, canon.Options{MaxBytes: MaxRecord}); err != nil {
		return lease.Lease{}, newError(op, ErrCorrupt, nil)
	}
	if err := l.Check(); err != nil {
		return lease.Lease{}, newError(op, ErrCorrupt, nil)
	}
	if id != "" && l.ID != id {
		return lease.Lease{}, newError(op, ErrCorrupt, nil)
	}
	return l, nil
}

// Create stores a new lease and its sealed map in one transaction. A lease
// with the same id is ErrExists. sealedMap may be nil (no map).
func (s *Store) Create(l lease.Lease, sealedMap []byte) error {
	const op = "create"
	if err := l.Check(); err != nil {
		return newError(op, ErrInvalid, err)
	}
	if len(sealedMap) > MaxMap {
		return newError(op, ErrTooLarge, nil)
	}
	lk, mk, err := idKeys(op, l.ID)
	if err != nil {
		return err
	}
	rec, err := encodeLease(l)
	if err != nil {
		return err
	}
	id, _ := IDBytes(l.ID)
	defer s.c.lock(id).Unlock()
	s.counts.gate.RLock()
	defer s.counts.gate.RUnlock()
	err = s.commit(op, entryEstimate(len(lk), len(rec))+entryEstimate(len(mk), len(sealedMap)), func(txn *badger.Txn) ([]put, error) {
		if _, err := txn.Get(lk); err == nil {
			return nil, newError(op, ErrExists, nil)
		} else if !errors.Is(err, badger.ErrKeyNotFound) {
			return nil, err
		}
		puts := []put{{key: lk, value: rec}}
		if sealedMap != nil {
			puts = append(puts, put{key: mk, value: sealedMap})
		}
		return puts, nil
	})
	if err != nil {
		if !errors.Is(err, ErrExists) {
			s.c.evict(id)
			s.counts.unknown()
		}
		return err
	}
	s.c.put(id, l, true, sealedMap)
	s.counts.moved(0, false, l.State)
	return nil
}

// Get returns the stored lease. A missing lease is ErrNotFound; a record
// that does not decode or fails lease.Check is ErrCorrupt.
func (s *Store) Get(id string) (lease.Lease, error) {
	const op = "get"
	lk, _, err := idKeys(op, id)
	if err != nil {
		return lease.Lease{}, err
	}
	if l, ok := s.c.get([16]byte(lk[1:])); ok {
		return l, nil
	}
	var l lease.Lease
	err = s.db.View(func(txn *badger.Txn) error {
		var err error
		l, err = getLease(op, txn, lk, id)
		return err
	})
	if err != nil {
		return lease.Lease{}, wrapErr(op, err)
	}
	return l, nil
}

// Map returns a copy of the lease's sealed map. A lease without one
// (missing, or terminal: the map is deleted with the terminal move) is
// ErrNotFound.
func (s *Store) Map(id string) ([]byte, error) {
	const op = "map"
	_, mk, err := idKeys(op, id)
	if err != nil {
		return nil, err
	}
	if m, ok := s.c.getMap([16]byte(mk[1:])); ok {
		return m, nil
	}
	var out []byte
	err = s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(mk)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return newError(op, ErrNotFound, nil)
		}
		if err != nil {
			return err
		}
		out, err = it.ValueCopy(nil)
		return err
	})
	if err != nil {
		return nil, wrapErr(op, err)
	}
	return out, nil
}

func getLease(op string, txn *badger.Txn, lk []byte, id string) (lease.Lease, error) {
	it, err := txn.Get(lk)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return lease.Lease{}, newError(op, ErrNotFound, nil)
	}
	if err != nil {
		return lease.Lease{}, err
	}
	var l lease.Lease
	err = it.Value(func(v []byte) error {
		var err error
		l, err = decodeLease(op, v, id)
		return err
	})
	return l, err
}

// Update is the compare-and-set of a lease transition, in one transaction:
// read the lease, call fn, and if fn returned a lease with another Seq,
// check that it is a forward successor (lease.Forward) and write it; when it
// is terminal, delete the sealed map in the same transaction. fn's error is
// returned with the lease fn returned (a lease that expired instead of
// performing the operation is written and returned with its refusal). A
// transaction that lost a race (badger.ErrConflict) is retried, calling fn
// again on the fresh record, a bounded number of times. fn must be a pure
// function of its argument.
func (s *Store) Update(id string, fn func(lease.Lease) (lease.Lease, error)) (lease.Lease, error) {
	const op = "update"
	lk, mk, err := idKeys(op, id)
	if err != nil {
		return lease.Lease{}, err
	}
	// One writer of the lease at a time: its transactions do not conflict
	// with each other, and the cache is set in commit order.
	bid := [16]byte(lk[1:])
	defer s.c.lock(bid).Unlock()
	var out lease.Lease
	var fnErr error
	wrote := false
	// A cached record is the one this store last committed for the lease,
	// under the lock held here: the transition starts from it without
	// reading (and decoding) the record again.
	cached, isCached := s.c.get(bid)
	var from lease.State
	s.counts.gate.RLock()
	defer s.counts.gate.RUnlock()
	err = s.commit(op, writeEstimate, func(txn *badger.Txn) ([]put, error) {
		wrote = false
		cur := cached
		if !isCached {
			var err error
			if cur, err = getLease(op, txn, lk, id); err != nil {
				return nil, err
			}
		}
		next, ferr := fn(cur)
		out, fnErr = next, ferr
		if next.Seq == cur.Seq {
			out = cur
			return nil, nil
		}
		if err := lease.Forward(cur, next); err != nil {
			out, fnErr = cur, nil
			return nil, newError(op, ErrNotForward, err)
		}
		rec, err := encodeLease(next)
		if err != nil {
			return nil, err
		}
		wrote, from = true, cur.State
		puts := []put{{key: lk, value: rec}}
		if next.State.Terminal() {
			puts = append(puts, put{key: mk, del: true})
		}
		return puts, nil
	})
	switch {
	case err != nil && wrote:
		// The commit failed: what Badger holds is not known here.
		s.c.evict(bid)
		s.counts.unknown()
	case err == nil && wrote:
		s.c.put(bid, out, false, nil)
		s.counts.moved(from, true, out.State)
	}
	if err != nil {
		return out, err
	}
	return out, fnErr
}

// List returns every stored lease in key order (random, since ids are). A
// record that fails to decode is skipped and counted in bad.
func (s *Store) List() (leases []lease.Lease, bad int, err error) {
	err = s.eachLease("list", func(l lease.Lease, ok bool) {
		if !ok {
			bad++
			return
		}
		leases = append(leases, l)
	})
	if err != nil {
		return nil, 0, err
	}
	return leases, bad, nil
}

// eachLease calls fn with every stored lease record, decoded (ok), or the
// zero lease for a record that does not decode, in one read transaction.
func (s *Store) eachLease(op string, fn func(l lease.Lease, ok bool)) error {
	err := s.db.View(func(txn *badger.Txn) error {
		opt := badger.DefaultIteratorOptions
		opt.Prefix = []byte{prefixLease}
		it := txn.NewIterator(opt)
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			err := it.Item().Value(func(v []byte) error {
				l, err := decodeLease(op, v, "")
				fn(l, err == nil)
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return wrapErr(op, err)
	}
	return nil
}

// Clock returns the persisted high-water mark of the vault's clock (the
// zero time when none is stored).
func (s *Store) Clock() (time.Time, error) {
	v, err := s.getMeta(keyClock)
	if err != nil || v == 0 {
		return time.Time{}, err
	}
	return time.Unix(0, int64(v)).UTC(), nil
}

// AdvanceClock persists t as the clock's high-water mark if it is later
// than the stored one. The mark never moves backwards.
func (s *Store) AdvanceClock(t time.Time) error {
	n := t.UnixNano()
	if n <= 0 {
		return nil
	}
	return s.raiseMeta("clock", keyClock, uint64(n))
}

// Epoch returns the highest key epoch recorded (0 when none).
func (s *Store) Epoch() (uint64, error) { return s.getMeta(keyEpoch) }

// RaiseEpoch records e as the highest key epoch used, if it is higher.
func (s *Store) RaiseEpoch(e uint64) error { return s.raiseMeta("epoch", keyEpoch, e) }

func (s *Store) getMeta(k []byte) (uint64, error) {
	var v uint64
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(k)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return it.Value(func(b []byte) error {
			if len(b) != 8 {
				return newError("meta", ErrCorrupt, nil)
			}
			v = binary.BigEndian.Uint64(b)
			return nil
		})
	})
	if err != nil {
		return 0, wrapErr("meta", err)
	}
	return v, nil
}

func (s *Store) raiseMeta(op string, k []byte, v uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commit(op, metaEstimate, func(txn *badger.Txn) ([]put, error) {
		it, err := txn.Get(k)
		switch {
		case err == nil:
			var cur uint64
			if err := it.Value(func(b []byte) error {
				if len(b) == 8 {
					cur = binary.BigEndian.Uint64(b)
				}
				return nil
			}); err != nil {
				return nil, err
			}
			if cur >= v {
				return nil, nil
			}
		case !errors.Is(err, badger.ErrKeyNotFound):
			return nil, err
		}
		return []put{{key: k, value: binary.BigEndian.AppendUint64(nil, v)}}, nil
	})
}
