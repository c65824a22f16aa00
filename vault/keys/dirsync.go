package keys

import (
	"path/filepath"
	"sync"

	"github.com/privacycut/privacycut/internal/durable"
)

// dirSyncer is the group commit of one directory's entries. A file
// created, renamed or removed is durable once an fsync of its directory
// that began after the change has returned; concurrent callers share one
// such fsync instead of issuing one each. On ext4 each directory fsync
// after a rename or unlink is a journal commit, and the journal commits
// one transaction at a time: thirty-two concurrent grants, each renaming a
// wrap into place and syncing the directory, wait on thirty-two commits in
// a row, while one fsync after all thirty-two renames makes every one of
// them durable.
type dirSyncer struct {
	dir string

	mu      sync.Mutex
	cond    sync.Cond
	running bool
	started uint64 // generations of fsyncs begun
	done    uint64 // the generation of the last fsync that returned
	errGen  uint64 // the generation of the last fsync that failed
	err     error  // its error
	// sync is the fsync itself (a test hook).
	sync func(dir string) error
}

// Sync returns once an fsync of the directory that began after the call
// has returned: every change made in the directory before the call is then
// durable. It returns that fsync's error (or the error of a later one that
// the caller waited for).
func (s *dirSyncer) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Any fsync running now began before this call: the one this caller
	// needs is the next one.
	want := s.started + 1
	for s.done < want {
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		s.started++
		gen := s.started
		s.mu.Unlock()
		err := s.sync(s.dir)
		s.mu.Lock()
		s.running = false
		s.done = gen
		if err != nil {
			s.errGen, s.err = gen, err
		}
		s.cond.Broadcast()
	}
	if s.errGen >= want {
		return s.err
	}
	return nil
}

var syncers sync.Map // cleaned directory path → *dirSyncer

// syncDir makes the entries of dir durable (dirSyncer.Sync), sharing the
// fsync with every concurrent caller on the same directory.
func syncDir(dir string) error {
	dir = filepath.Clean(dir)
	s, ok := syncers.Load(dir)
	if !ok {
		n := &dirSyncer{dir: dir, sync: durable.SyncDir}
		n.cond.L = &n.mu
		s, _ = syncers.LoadOrStore(dir, n)
	}
	return s.(*dirSyncer).Sync()
}
