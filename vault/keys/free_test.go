package keys

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

func freeFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(dir, freeDirName))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// A destroyed wrap becomes a free file holding other bytes of the same
// length, and the next grant writes its wrap into that same inode.
func TestDestroyPoolsFileAndWrapReusesIt(t *testing.T) {
	dir := keyDir(t)
	d := open(t, dir, newArena(t), 0)
	a, _ := grant(t, d)
	pa := wrapPath(dir, a, 1)
	before, _ := os.ReadFile(pa)
	ino := inode(t, pa)
	if err := d.Destroy(a); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if _, err := os.Stat(pa); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("wrap still at its name: %v", err)
	}
	free := freeFiles(t, dir)
	if len(free) != 1 {
		t.Fatalf("free files after Destroy: %v, want one", free)
	}
	after, _ := os.ReadFile(filepath.Join(dir, freeDirName, free[0]))
	if len(after) != len(before) || bytes.Equal(after, before) {
		t.Fatalf("the free file still holds the wrap")
	}
	if d.Has(a) {
		t.Errorf("Has = true after Destroy")
	}
	if _, err := d.Unwrap(a); !errors.Is(err, ErrNoKey) {
		t.Errorf("Unwrap after Destroy: %v, want ErrNoKey", err)
	}
	b, kb := grant(t, d)
	if got := inode(t, wrapPath(dir, b, 1)); got != ino {
		t.Errorf("the next wrap is inode %d, want the free file's %d", got, ino)
	}
	if len(freeFiles(t, dir)) != 0 {
		t.Errorf("free file left after its reuse")
	}
	if !bytes.Equal(mustUnwrap(t, d, b), kb) {
		t.Errorf("the wrap written into a free file does not unwrap to its key")
	}
}

// Wrap into a free file refuses, like a new file, to replace a wrap, and
// destroys the free file it had written the refused key into.
func TestWrapIntoFreeRefusesExisting(t *testing.T) {
	dir := keyDir(t)
	d := open(t, dir, newArena(t), 0)
	a, _ := grant(t, d)
	b, kb := grant(t, d)
	if err := d.Destroy(a); err != nil {
		t.Fatal(err)
	}
	dek, err := d.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	defer dek.Wipe()
	if err := d.Wrap(b, dek); !errors.Is(err, ErrExists) {
		t.Fatalf("Wrap over an existing wrap: %v, want ErrExists", err)
	}
	if f := freeFiles(t, dir); len(f) != 0 {
		t.Errorf("free files after the refused Wrap: %v", f)
	}
	if !bytes.Equal(mustUnwrap(t, d, b), kb) {
		t.Errorf("the refused Wrap changed the existing wrap")
	}
}

// Boot recovery destroys free files: one left by a crash between Wrap's
// write into it and the rename holds a whole wrapped key.
func TestRecoveryDestroysFreeFiles(t *testing.T) {
	dir := keyDir(t)
	a := newArena(t)
	d := open(t, dir, a, 0)
	id, k := grant(t, d)
	d.Close()
	wrap, _ := os.ReadFile(wrapPath(dir, id, 1))
	p := filepath.Join(dir, freeDirName, newFreeName())
	if err := os.WriteFile(p, wrap, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Link(p, link); err != nil {
		t.Skipf("hard link across temp dirs not possible here: %v", err)
	}
	d2 := open(t, dir, a, 0)
	if got := d2.BootReport().Temps; got != 1 {
		t.Errorf("temporary and free files destroyed = %d, want 1", got)
	}
	if f := freeFiles(t, dir); len(f) != 0 {
		t.Errorf("free files after recovery: %v", f)
	}
	if after, _ := os.ReadFile(link); bytes.Equal(after, wrap) {
		t.Errorf("recovery unlinked the free file without overwriting it")
	}
	if !bytes.Equal(mustUnwrap(t, d2, id), k) {
		t.Errorf("recovery lost the live wrap")
	}
}

// Close unlinks the pool: a cleanly closed directory holds only keys.
func TestCloseDropsFreeFiles(t *testing.T) {
	dir := keyDir(t)
	d := open(t, dir, newArena(t), 0)
	var ids []string
	for range 3 {
		id, _ := grant(t, d)
		ids = append(ids, id)
	}
	for _, id := range ids {
		if err := d.Destroy(id); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(freeFiles(t, dir)); n != 3 {
		t.Fatalf("%d free files, want 3", n)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if f := freeFiles(t, dir); len(f) != 0 {
		t.Errorf("free files after Close: %v", f)
	}
}

// The pool is bounded: past maxFree, Destroy unlinks.
func TestFreePoolBounded(t *testing.T) {
	dir := keyDir(t)
	d := open(t, dir, newArena(t), 0)
	var ids []string
	for range maxFree + 2 {
		id, _ := grant(t, d)
		ids = append(ids, id)
	}
	for _, id := range ids {
		if err := d.Destroy(id); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(freeFiles(t, dir)); n != maxFree {
		t.Errorf("%d free files, want maxFree (%d)", n, maxFree)
	}
	for _, id := range ids {
		if d.Has(id) {
			t.Errorf("%s still has a wrap", id)
		}
	}
}

// Concurrent callers share fsyncs, yet none returns on an fsync that began
// before its call.
func TestDirSyncerGroups(t *testing.T) {
	var calls atomic.Int64
	var mu sync.Mutex
	var starts []time.Time
	s := &dirSyncer{dir: "d", sync: func(string) error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		calls.Add(1)
		time.Sleep(5 * time.Millisecond)
		return nil
	}}
	s.cond.L = &s.mu
	const n = 32
	var wg sync.WaitGroup
	bad := make(chan string, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			called := time.Now()
			if err := s.Sync(); err != nil {
				bad <- err.Error()
				return
			}
			// Some fsync began at or after the call and ended before now.
			mu.Lock()
			ok := false
			for _, st := range starts {
				if !st.Before(called) && st.Add(5*time.Millisecond).Before(time.Now().Add(time.Microsecond)) {
					ok = true
				}
			}
			mu.Unlock()
			if !ok {
				bad <- "returned without an fsync begun after the call"
			}
		}()
	}
	wg.Wait()
	close(bad)
	for b := range bad {
		t.Error(b)
	}
	if c := calls.Load(); c >= n || c < 1 {
		t.Errorf("%d fsyncs for %d concurrent callers, want fewer, at least one", c, n)
	}
}

// An fsync's failure reaches every caller that waited for it, and only
// those.
func TestDirSyncerError(t *testing.T) {
	fail := errors.New("EIO")
	var failing atomic.Bool
	failing.Store(true)
	s := &dirSyncer{dir: "d", sync: func(string) error {
		if failing.Load() {
			return fail
		}
		return nil
	}}
	s.cond.L = &s.mu
	if err := s.Sync(); !errors.Is(err, fail) {
		t.Fatalf("Sync with a failing fsync: %v", err)
	}
	failing.Store(false)
	if err := s.Sync(); err != nil {
		t.Fatalf("Sync after the failure cleared: %v", err)
	}
}

func TestSyncDirSharesPerDirectory(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	if err := syncDir(a); err != nil {
		t.Fatal(err)
	}
	if err := syncDir(a + "/"); err != nil {
		t.Fatal(err)
	}
	sa, _ := syncers.Load(filepath.Clean(a))
	sa2, _ := syncers.Load(strings.TrimSuffix(a+"/", "/"))
	if sa == nil || sa != sa2 {
		t.Errorf("one directory, two syncers")
	}
	if err := syncDir(b); err != nil {
		t.Fatal(err)
	}
	if sb, _ := syncers.Load(filepath.Clean(b)); sb == sa {
		t.Errorf("two directories share a syncer")
	}
	if err := syncDir(filepath.Join(a, "missing")); err == nil {
		t.Errorf("syncDir of a missing directory succeeded")
	}
}
