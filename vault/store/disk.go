package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Sentinels of the disk guard (see Store.guard).
var (
	// ErrGone: the state directory's path no longer names the directory
	// the store opened (removed, renamed away or replaced). Nothing is
	// written: an acknowledged write there would be lost.
	ErrGone = errors.New("state directory removed or replaced")
	// ErrNoSpace: the file system has no room to reserve the blocks of
	// Badger's write-ahead log; nothing is written. Sys holds the errno.
	ErrNoSpace = errors.New("no space to reserve the write-ahead log")
)

// Badger sizes the disk guard depends on (badgerOptions sets them).
const (
	memTableSize   = 8 << 20  // a memtable; its log file is twice this
	valueThreshold = 64 << 10 // values from this size go to the value log
)

// Memtable accounting. Badger flushes a memtable into a new table file
// (a mapped write, see guard) once its log or its skiplist reaches
// memTableSize. The store cannot see either, so it counts what it wrote
// since the newest log appeared, generously: twice the key and value bytes
// plus a fixed overhead per entry (the skiplist's node, the log's header,
// the transaction's markers), the value capped at the threshold (a larger
// one leaves a pointer).
const (
	entryOverhead = 256
	writeEstimate = 8 << 10 // a transition: a lease record (a few KiB) and a marker
	metaEstimate  = 512     // a clock or epoch mark
	// flushRoom is the free space a flush and the compaction after it are
	// given: below it, with the memtable half full by the count, writes
	// are refused (ErrNoSpace) rather than bring the flush about.
	flushRoom = 2 * memTableSize
)

func entryEstimate(k, v int) int64 {
	if v == 0 && k == 0 {
		return 0
	}
	return int64(2*(k+min(v, valueThreshold)) + entryOverhead)
}

// dirID identifies a directory across renames of its path.
type dirID struct{ dev, ino uint64 }

func statDir(dir string) (dirID, error) {
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		return dirID{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return dirID{}, unix.ENOTDIR
	}
	return dirID{dev: uint64(st.Dev), ino: st.Ino}, nil
}

// disk is the store's guard over its directory: the identity the directory
// had at Open, and which write-ahead logs are reserved.
type disk struct {
	dir string
	id  dirID

	mu       sync.Mutex
	reserved map[string]int64 // .mem file name → size fully allocated
	newest   string           // the newest .mem file: the mutable memtable's log
	used     int64            // estimated memtable bytes written since newest appeared
	// freeBytes reads the directory's available bytes (a test hook).
	freeBytes func() (int64, error)
}

func newDisk(dir string) (*disk, error) {
	id, err := statDir(dir)
	if err != nil {
		return nil, err
	}
	d := &disk{dir: dir, id: id, reserved: map[string]int64{}}
	d.freeBytes = func() (int64, error) {
		var st unix.Statfs_t
		if err := unix.Statfs(dir, &st); err != nil {
			return 0, err
		}
		return int64(st.Bavail) * int64(st.Bsize), nil
	}
	return d, nil
}

// count adds a committed write's estimate to the memtable's.
func (d *disk) count(est int64) {
	if d == nil {
		return
	}
	d.mu.Lock()
	d.used += est
	d.mu.Unlock()
}

// roomFor refuses a write of est bytes that would take the memtable, by
// the count, past half its size while the file system has less than
// flushRoom available: the flush it brings nearer would fault.
func (d *disk) roomFor(op string, est int64) error {
	d.mu.Lock()
	used := d.used
	d.mu.Unlock()
	if used+est < memTableSize/2 {
		return nil
	}
	free, err := d.freeBytes()
	if err != nil {
		return newError(op, ErrIO, err)
	}
	if free < flushRoom {
		return newError(op, ErrNoSpace, unix.ENOSPC)
	}
	return nil
}

// Gone reports whether the state directory's path no longer names the
// directory the store opened.
func (s *Store) Gone() bool {
	if s.disk == nil {
		return false
	}
	id, err := statDir(s.disk.dir)
	return err != nil || id != s.disk.id
}

// guardDir runs before every write transaction (once for a group commit's
// batch, group.go). It refuses the write when the state directory is gone
// (ErrGone), and it makes sure every memtable write-ahead log (.mem) of the
// directory has its blocks allocated (fallocate), refusing the write when
// they cannot be (ErrNoSpace).
//
// Badger writes its write-ahead log through a shared mapping of a file it
// creates sparse (ftruncate to twice the memtable size). A store into a
// page with no block behind it on a full file system is not an error the
// program can see: the kernel raises SIGBUS, and the Go runtime dies with
// "fatal error: fault" and a traceback. With the blocks allocated first,
// the stores into the log need no new blocks, and a full disk becomes this
// refusal instead.
func (s *Store) guardDir(op string) error {
	if s.disk == nil {
		return nil
	}
	if s.Gone() {
		return newError(op, ErrGone, nil)
	}
	return s.disk.reserveLogs(op)
}

// guardRoom runs after guardDir, for each write. Badger also writes a new
// table file through a mapping when it flushes a full memtable; that file
// cannot be reserved (Badger creates and fills it in one call). So
// guardRoom refuses (ErrNoSpace) a write of est bytes that would take the
// memtable, as counted, past half its size while the file system has less
// than flushRoom free.
func (s *Store) guardRoom(op string, est int64) error {
	if s.disk == nil {
		return nil
	}
	return s.disk.roomFor(op, est)
}

func (d *disk) reserveLogs(op string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return newError(op, ErrIO, err)
	}
	seen := map[string]bool{}
	newest := ""
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".mem") || !e.Type().IsRegular() {
			continue
		}
		seen[name] = true
		if len(name) > len(newest) || len(name) == len(newest) && name > newest {
			newest = name
		}
		if err := d.reserve(name); err != nil {
			if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
				return newError(op, ErrNoSpace, err)
			}
			if errors.Is(err, unix.ENOENT) {
				continue // flushed and deleted meanwhile
			}
			if errors.Is(err, unix.EOPNOTSUPP) {
				// A file system without fallocate: nothing to reserve with.
				d.reserved[name] = -1
				continue
			}
			return newError(op, ErrIO, err)
		}
	}
	for name := range d.reserved {
		if !seen[name] {
			delete(d.reserved, name)
		}
	}
	if newest != d.newest {
		// A new memtable (at Open, or after Badger rotated the full one).
		d.newest, d.used = newest, 0
	}
	return nil
}

// reserve allocates every block of the log file name (its whole size),
// once per size.
func (d *disk) reserve(name string) error {
	path := filepath.Join(d.dir, name)
	if r, ok := d.reserved[name]; ok {
		if r < 0 {
			return nil
		}
		if fi, err := os.Stat(path); err == nil && fi.Size() == r {
			return nil
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if r, ok := d.reserved[name]; ok && (r == size || r < 0) {
		return nil
	}
	if size > 0 {
		if err := unix.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
			return &os.PathError{Op: "fallocate", Path: name, Err: err}
		}
	}
	d.reserved[name] = size
	return nil
}

// Abandon leaves the database to Badger's crash recovery instead of
// closing it: it syncs the write-ahead log and the value log (every
// acknowledged write is already synced: SyncWrites) and releases nothing,
// so that no memtable is flushed into a new table file. vaultd calls it
// when a close would write where it cannot (the state directory is gone,
// or its file system is below the vault's floor), and then exits; the next
// Open replays the log, as after a crash. The Store must not be used
// afterwards, and the process must exit: Badger's goroutines, mappings and
// directory lock stay until it does.
func (s *Store) Abandon() error {
	var err error
	s.once.Do(func() {
		if !s.Gone() {
			err = s.db.Sync()
		}
	})
	if err != nil {
		return newError("abandon", ErrIO, err)
	}
	return nil
}

// PendingLog reports whether dir holds a non-empty memtable write-ahead
// log, which Badger replays, and then flushes into a table file, at Open.
func PendingLog(dir string) (bool, error) {
	mem, err := filepath.Glob(filepath.Join(dir, "*.mem"))
	if err != nil {
		return false, err
	}
	for _, f := range mem {
		fi, err := os.Lstat(f)
		if err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
			return true, nil
		}
	}
	return false, nil
}
