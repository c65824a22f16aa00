package store

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// allocated is the bytes of blocks a file has allocated.
func allocated(t *testing.T, path string) (size, blocks int64) {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Size, st.Blocks * 512
}

// TestWriteAheadLogReserved: once the store is open, every memtable log
// has all its blocks allocated, so Badger's stores into its mapping need
// no new block.
func TestWriteAheadLogReserved(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if err := s.Create(newLease(t), []byte("ciphertext")); err != nil {
		t.Fatal(err)
	}
	mem, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	if len(mem) == 0 {
		t.Fatal("no memtable log in the state directory")
	}
	for _, m := range mem {
		size, blocks := allocated(t, m)
		if size == 0 || blocks < size {
			t.Errorf("%s: %d bytes, %d allocated: not reserved", filepath.Base(m), size, blocks)
		}
	}
}

// TestGoneRefusesWrites: with the state directory renamed away, a write is
// refused (ErrGone) and nothing reaches the directory; reads still work.
func TestGoneRefusesWrites(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	kept := newLease(t)
	if err := s.Create(kept, nil); err != nil {
		t.Fatal(err)
	}
	if s.Gone() {
		t.Fatal("Gone before anything moved")
	}
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	l := newLease(t)
	err = s.Create(l, nil)
	if !errors.Is(err, ErrGone) || !s.Gone() {
		t.Fatalf("Create with the directory gone: %v (Gone %v), want ErrGone", err, s.Gone())
	}
	if strings.Contains(err.Error(), l.ID) || strings.Contains(err.Error(), base) {
		t.Errorf("error names the lease or the path: %v", err)
	}
	if err := s.AdvanceClock(t0); !errors.Is(err, ErrGone) {
		t.Errorf("AdvanceClock with the directory gone: %v, want ErrGone", err)
	}
	if _, err := s.Get(kept.ID); err != nil {
		t.Errorf("Get with the directory gone: %v", err)
	}
	// A directory made anew at the path is not the store's either.
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if !s.Gone() {
		t.Error("a new directory at the path passes for the store's")
	}
	os.Remove(dir)
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	if s.Gone() {
		t.Error("Gone after the directory came back")
	}
	if _, err := s.Get(l.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused lease was written: %v", err)
	}
}

// TestFullDiskRefusesWrites mounts a tmpfs smaller than a memtable log: the
// log cannot be reserved, so the store opens but refuses every write with
// ErrNoSpace (ENOSPC), and the process does not die of SIGBUS.
func TestFullDiskRefusesWrites(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("store: missing facility \"root\": mounting a tmpfs needs it")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=12m,mode=0700"); err != nil {
		t.Skipf("store: missing facility \"tmpfs\": mount: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
	var logs bytes.Buffer
	s, err := Open(dir, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("Open on a small tmpfs: %v", err)
	}
	defer s.Abandon()
	l := newLease(t)
	err = s.Create(l, []byte("ciphertext"))
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Create without room for the log: %v, want ErrNoSpace (ENOSPC)", err)
	}
	if strings.Contains(err.Error(), l.ID) {
		t.Errorf("error names the lease: %v", err)
	}
	if !strings.Contains(logs.String(), "write-ahead log not reserved") {
		t.Errorf("Open did not warn about the reservation: %s", logs.String())
	}
}

// TestLoggerKeepsErrorClass: a Badger error argument leaves as its errno
// name and operation only, never its text (a path, a key).
func TestLoggerKeepsErrorClass(t *testing.T) {
	canary := "CANARY-9f3e-key"
	for _, tc := range []struct {
		name      string
		arg       any
		errno, op string
	}{
		{"path", fmt.Errorf("while creating table %s: %w", canary, &os.PathError{Op: "write", Path: "/s/" + canary, Err: syscall.ENOSPC}), "ENOSPC", "write"},
		{"syscall", os.NewSyscallError("fallocate", syscall.EIO), "EIO", "fallocate"},
		{"link", &os.LinkError{Op: "rename", Old: canary, New: canary, Err: syscall.ENOENT}, "ENOENT", "rename"},
		{"errno", fmt.Errorf("sync %s: %w", canary, syscall.EROFS), "EROFS", ""},
		{"odd op", &os.PathError{Op: canary, Path: canary, Err: syscall.EIO}, "EIO", "other"},
		{"plain", errors.New("no class " + canary), "", ""},
		{"not an error", canary, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			q := quietLogger{slog.New(slog.NewJSONHandler(&out, nil))}
			q.Errorf("error flushing memtable to disk: %v, retrying", tc.arg)
			line := out.String()
			if strings.Contains(line, canary) || strings.Contains(line, "9f3e") {
				t.Errorf("the logger passed argument text through: %s", line)
			}
			if !strings.Contains(line, "error flushing memtable to disk: %v, retrying") {
				t.Errorf("format string missing: %s", line)
			}
			errno, op := errClass([]any{tc.arg})
			if d := cmp.Diff([2]string{tc.errno, tc.op}, [2]string{errno, op}); d != "" {
				t.Errorf("class (-want +got):\n%s", d)
			}
			if tc.errno != "" && !strings.Contains(line, `"badger_errno":"`+tc.errno+`"`) {
				t.Errorf("errno missing from %s", line)
			}
			if tc.errno == "" && tc.op == "" && strings.Contains(line, "badger_errno") {
				t.Errorf("a class for an error without one: %s", line)
			}
		})
	}
}

// TestFlushRoom: once the memtable is half full by the store's count, a
// write is refused (ErrNoSpace) while the file system has less than a
// flush needs, and passes again once it has room; a new memtable log
// restarts the count.
func TestFlushRoom(t *testing.T) {
	s := openStore(t, t.TempDir())
	if err := s.Create(newLease(t), []byte("ciphertext")); err != nil {
		t.Fatal(err)
	}
	s.disk.mu.Lock()
	counted := s.disk.used
	s.disk.mu.Unlock()
	if counted <= 0 || counted > writeEstimate {
		t.Errorf("a small grant counted %d bytes", counted)
	}
	free := int64(flushRoom - 1)
	s.disk.freeBytes = func() (int64, error) { return free, nil }
	s.disk.count(memTableSize/2 - counted)
	l := newLease(t)
	if err := s.Create(l, nil); !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write with the memtable half full and no room to flush: %v, want ErrNoSpace", err)
	}
	if err := s.AdvanceClock(t0.Add(time.Hour)); !errors.Is(err, ErrNoSpace) {
		t.Errorf("a clock mark with no room to flush: %v", err)
	}
	if _, err := s.Get(l.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("the refused lease was written: %v", err)
	}
	free = flushRoom
	if err := s.Create(l, nil); err != nil {
		t.Errorf("a write with room to flush: %v", err)
	}
	// A new newest log (Badger rotated the memtable) restarts the count.
	s.disk.mu.Lock()
	s.disk.newest = "00000.mem"
	s.disk.mu.Unlock()
	free = 0
	if err := s.Create(newLease(t), nil); err != nil {
		t.Errorf("a write into a fresh memtable: %v", err)
	}
}
