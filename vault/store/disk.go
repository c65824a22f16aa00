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
}

func newDisk(dir string) (*disk, error) {
	id, err := statDir(dir)
	if err != nil {
		return nil, err
	}
	return &disk{dir: dir, id: id, reserved: map[string]int64{}}, nil
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

// guard runs before every write transaction. It refuses the write when the
// state directory is gone (ErrGone), and it makes sure every memtable
// write-ahead log (.mem) of the directory has its blocks allocated
// (fallocate), refusing the write when they cannot be (ErrNoSpace).
//
// Badger writes its write-ahead log through a shared mapping of a file it
// creates sparse (ftruncate to twice the memtable size). A store into a
// page with no block behind it on a full file system is not an error the
// program can see: the kernel raises SIGBUS, and the Go runtime dies with
// "fatal error: fault" and a traceback. With the blocks allocated first,
// the stores into the log need no new blocks, and a full disk becomes this
// refusal instead.
func (s *Store) guard(op string) error {
	if s.disk == nil {
		return nil
	}
	if s.Gone() {
		return newError(op, ErrGone, nil)
	}
	return s.disk.reserveLogs(op)
}

func (d *disk) reserveLogs(op string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	ents, err := os.ReadDir(d.dir)
	if err != nil {
		return newError(op, ErrIO, err)
	}
	seen := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".mem") || !e.Type().IsRegular() {
			continue
		}
		seen[name] = true
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
	return nil
}

// reserve allocates every block of the log file name (its whole size),
// once per size.
func (d *disk) reserve(name string) error {
	f, err := os.OpenFile(filepath.Join(d.dir, name), os.O_RDWR, 0)
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
