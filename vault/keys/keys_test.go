package keys

import (
	"bytes"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/crash"
)

func newArena(t *testing.T) *arena.Arena {
	t.Helper()
	a, err := arena.New(256<<10, arena.Options{})
	if err != nil {
		t.Fatalf("arena: %v", err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// keyDir returns a path for a new key directory (t.TempDir itself may be
// wider than 0700, which Open refuses).
func keyDir(t *testing.T) string { return filepath.Join(t.TempDir(), "keys") }

func newID(t *testing.T) string {
	t.Helper()
	var b [16]byte
	rand.Read(b[:])
	return lease.FormatID(b)
}

func open(t *testing.T, dir string, a *arena.Arena, first uint64) *Dir {
	t.Helper()
	d, err := Open(dir, Options{Arena: a, FirstEpoch: first})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// reveal copies a secret out for comparison (test only).
func reveal(t *testing.T, s *arena.Secret) []byte {
	t.Helper()
	var out []byte
	if err := s.Reveal(func(b []byte) error { out = bytes.Clone(b); return nil }); err != nil {
		t.Fatalf("Reveal: %v", err)
	}
	return out
}

// grant creates a data key, wraps it for a new lease and returns the id and
// a copy of the key.
func grant(t *testing.T, d *Dir) (string, []byte) {
	t.Helper()
	id := newID(t)
	dek, err := d.NewKey()
	if err != nil {
		t.Fatalf("NewKey: %v", err)
	}
	defer dek.Wipe()
	if err := d.Wrap(id, dek); err != nil {
		t.Fatalf("Wrap: %v", err)
	}
	return id, reveal(t, dek)
}

func mustUnwrap(t *testing.T, d *Dir, id string) []byte {
	t.Helper()
	s, err := d.Unwrap(id)
	if err != nil {
		t.Fatalf("Unwrap: %v", err)
	}
	defer s.Wipe()
	return reveal(t, s)
}

// files lists the key directory relative to its root, with modes.
func files(t *testing.T, dir string) map[string]os.FileMode {
	t.Helper()
	out := map[string]os.FileMode{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = fi.Mode()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpenCreatesFirstEpoch(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	d := open(t, dir, newArena(t), 7)
	if d.Epoch() != 7 {
		t.Fatalf("epoch = %d, want 7", d.Epoch())
	}
	if !d.BootReport().Created {
		t.Errorf("report does not say the epoch was created")
	}
	want := map[string]os.FileMode{
		".":           os.ModeDir | 0o700,
		"dek":         os.ModeDir | 0o700,
		"free":        os.ModeDir | 0o700,
		"current":     0o600,
		"epoch-7.key": 0o600,
		"backup.key":  0o600,
	}
	if diff := cmp.Diff(want, files(t, dir)); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "current"))
	if string(b) != "7\n" {
		t.Errorf("current = %q, want %q", b, "7\n")
	}
	k, _ := os.ReadFile(filepath.Join(dir, "epoch-7.key"))
	if len(k) != KeySize || bytes.Equal(k, make([]byte, KeySize)) {
		t.Errorf("epoch key is %d bytes or all zero", len(k))
	}
}

func TestOpenRefusesWideDirectory(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, Options{Arena: newArena(t)})
	if !errors.Is(err, ErrPermissions) {
		t.Fatalf("Open of a 0750 directory: %v, want ErrPermissions", err)
	}
}

func TestWrapUnwrap(t *testing.T) {
	dir := keyDir(t)
	d := open(t, dir, newArena(t), 0)
	id, dek := grant(t, d)
	if got := mustUnwrap(t, d, id); !bytes.Equal(got, dek) {
		t.Fatalf("unwrapped key differs from the wrapped one")
	}
	name := strings.TrimPrefix(id, "pcl:") + ".1"
	fi, err := os.Stat(filepath.Join(dir, "dek", name))
	if err != nil {
		t.Fatalf("wrap file: %v", err)
	}
	if fi.Size() != WrapSize || fi.Mode().Perm() != 0o600 {
		t.Errorf("wrap file size %d mode %v, want %d 0600", fi.Size(), fi.Mode().Perm(), WrapSize)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, "dek", name))
	if bytes.Contains(raw, dek) {
		t.Errorf("wrap file holds the data key in clear")
	}
	if !d.Has(id) {
		t.Errorf("Has = false after Wrap")
	}
	// A second wrap for the same lease is refused.
	s, _ := d.NewKey()
	defer s.Wipe()
	if err := d.Wrap(id, s); !errors.Is(err, ErrExists) {
		t.Errorf("second Wrap: %v, want ErrExists", err)
	}
	ids, err := d.Wrapped()
	if err != nil || !slices.Equal(ids, []string{id}) {
		t.Errorf("Wrapped = %v, %v", ids, err)
	}
	// Two keys of two leases differ.
	id2, dek2 := grant(t, d)
	if bytes.Equal(dek, dek2) || id == id2 {
		t.Errorf("two grants produced the same key or id")
	}
}

func TestUnwrapRefusals(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, dir, id, other string)
		reopen bool
		want   error
	}{
		{"missing wrap", func(t *testing.T, dir, id, _ string) {
			os.Remove(wrapPath(dir, id, 1))
		}, false, ErrNoKey},
		{"flipped bit in wrap", func(t *testing.T, dir, id, _ string) {
			flip(t, wrapPath(dir, id, 1), WrapSize-1)
		}, false, ErrCorrupt},
		{"flipped bit in nonce", func(t *testing.T, dir, id, _ string) {
			flip(t, wrapPath(dir, id, 1), 0)
		}, false, ErrCorrupt},
		{"truncated wrap", func(t *testing.T, dir, id, _ string) {
			os.Truncate(wrapPath(dir, id, 1), WrapSize-1)
		}, false, ErrCorrupt},
		{"oversized wrap", func(t *testing.T, dir, id, _ string) {
			f, _ := os.OpenFile(wrapPath(dir, id, 1), os.O_APPEND|os.O_WRONLY, 0)
			f.Write([]byte{0})
			f.Close()
		}, false, ErrCorrupt},
		{"wrap of another lease", func(t *testing.T, dir, id, other string) {
			b, _ := os.ReadFile(wrapPath(dir, other, 1))
			os.WriteFile(wrapPath(dir, id, 1), b, 0o600)
		}, false, ErrCorrupt},
		{"flipped bit in epoch key", func(t *testing.T, dir, _, _ string) {
			flip(t, filepath.Join(dir, "epoch-1.key"), 5)
		}, true, ErrCorrupt},
		{"epoch key of wrong size", func(t *testing.T, dir, _, _ string) {
			os.Truncate(filepath.Join(dir, "epoch-1.key"), 31)
		}, true, ErrCorrupt},
		{"epoch key replaced", func(t *testing.T, dir, _, _ string) {
			k := make([]byte, KeySize)
			rand.Read(k)
			os.WriteFile(filepath.Join(dir, "epoch-1.key"), k, 0o600)
		}, true, ErrCorrupt},
		{"key directory lost", func(t *testing.T, dir, _, _ string) {
			os.RemoveAll(dir)
		}, true, ErrNoKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newArena(t)
			dir := filepath.Join(t.TempDir(), "k")
			d := open(t, dir, a, 0)
			id, _ := grant(t, d)
			other, otherKey := grant(t, d)
			tc.damage(t, dir, id, other)
			if tc.reopen {
				d.Close()
				d = open(t, dir, a, 2)
			}
			_, err := d.Unwrap(id)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Unwrap: %v, want %v", err, tc.want)
			}
			if CodeOf(err) != receipts.LeaseUnrecoverable {
				t.Errorf("code %q, want LEASE_UNRECOVERABLE", CodeOf(err))
			}
			if !tc.reopen {
				// The damage is confined to the one lease.
				if got := mustUnwrap(t, d, other); !bytes.Equal(got, otherKey) {
					t.Errorf("the undamaged lease no longer unwraps to its key")
				}
			}
		})
	}
}

func wrapPath(dir, id string, epoch uint64) string {
	return filepath.Join(dir, "dek", wrapName(strings.TrimPrefix(id, "pcl:"), epoch))
}

func flip(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x01
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func TestDestroyOverwritesBeforeUnlink(t *testing.T) {
	dir := keyDir(t)
	d := open(t, dir, newArena(t), 0)
	id, _ := grant(t, d)
	p := wrapPath(dir, id, 1)
	before, _ := os.ReadFile(p)
	// A hard link keeps the inode reachable after the unlink, so the test
	// can see what Destroy did to the file's blocks.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Link(p, link); err != nil {
		t.Skipf("hard link across temp dirs not possible here: %v", err)
	}
	if err := d.Destroy(id); err != nil {
		t.Fatalf("Destroy: %v", err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("wrap file still present: %v", err)
	}
	after, _ := os.ReadFile(link)
	if len(after) != len(before) || bytes.Equal(after, before) {
		t.Errorf("the destroyed file's content was not overwritten in place")
	}
	if d.Has(id) {
		t.Errorf("Has = true after Destroy")
	}
	if _, err := d.Unwrap(id); !errors.Is(err, ErrNoKey) {
		t.Errorf("Unwrap after Destroy: %v, want ErrNoKey", err)
	}
	if err := d.Destroy(id); err != nil {
		t.Errorf("second Destroy: %v", err)
	}
}

func TestRotate(t *testing.T) {
	dir := keyDir(t)
	a := newArena(t)
	d := open(t, dir, a, 0)
	keys := map[string][]byte{}
	for range 5 {
		id, k := grant(t, d)
		keys[id] = k
	}
	oldKEK, _ := os.ReadFile(filepath.Join(dir, "epoch-1.key"))
	oldWraps := map[string][]byte{}
	for id := range keys {
		oldWraps[id], _ = os.ReadFile(wrapPath(dir, id, 1))
	}
	r, err := d.Rotate()
	if err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	if diff := cmp.Diff(Rotation{From: 1, To: 2, Rewrapped: 5}, r); diff != "" {
		t.Errorf("rotation (-want +got):\n%s", diff)
	}
	if d.Epoch() != 2 {
		t.Errorf("epoch %d, want 2", d.Epoch())
	}
	for id, k := range keys {
		if got := mustUnwrap(t, d, id); !bytes.Equal(got, k) {
			t.Errorf("lease key changed across rotation")
		}
	}
	// Only epoch 2 remains, and only wraps under it.
	var names []string
	for n := range files(t, dir) {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if strings.HasSuffix(n, ".1") || n == "epoch-1.key" {
			t.Errorf("old-epoch file %s survived the rotation", n)
		}
	}
	newKEK, _ := os.ReadFile(filepath.Join(dir, "epoch-2.key"))
	if bytes.Equal(newKEK, oldKEK) {
		t.Fatalf("the new epoch key equals the old one")
	}
	// K3: old key-store bytes captured before the rotation fail to unwrap
	// under the current key, whether named for their own epoch or the new one.
	for id, b := range oldWraps {
		for _, e := range []uint64{1, 2} {
			if _, err := d.unwrapWith(d.kek, e, id, b); !errors.Is(err, ErrCorrupt) {
				t.Errorf("old wrap under the current key (epoch %d): %v, want ErrCorrupt", e, err)
			}
		}
		// And planted back into the directory it is refused, not misread.
		if err := os.WriteFile(wrapPath(dir, id, 2), b, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Unwrap(id); !errors.Is(err, ErrCorrupt) {
			t.Errorf("planted old wrap: %v, want ErrCorrupt", err)
		}
	}
}

func TestRotateConcurrentWithWraps(t *testing.T) {
	d := open(t, keyDir(t), newArena(t), 0)
	var mu sync.Mutex
	keys := map[string][]byte{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				id, k := grant(t, d)
				mu.Lock()
				keys[id] = k
				mu.Unlock()
			}
		})
	}
	wg.Go(func() {
		for range 3 {
			if _, err := d.Rotate(); err != nil {
				t.Errorf("Rotate: %v", err)
			}
		}
	})
	wg.Wait()
	if d.Epoch() != 4 {
		t.Errorf("epoch %d, want 4", d.Epoch())
	}
	for id, k := range keys {
		if got := mustUnwrap(t, d, id); !bytes.Equal(got, k) {
			t.Errorf("a key wrapped during rotations does not unwrap")
		}
	}
}

// TestRecoveryAtEveryRotationPoint stops a rotation at each crash point (as
// a SIGKILL there would) and checks that the next Open leaves exactly one
// epoch, the expected one, with every key unwrapping to its value.
func TestRecoveryAtEveryRotationPoint(t *testing.T) {
	tests := []struct {
		point     string
		step      halt
		pass      int
		wantEpoch uint64
	}{
		{crash.RotateKEKWritten, haltKEKWritten, 1, 1},
		{crash.RotateRewrapped, haltRewrapped, 1, 1},
		{crash.RotateRewrapped, haltRewrapped, 2, 1},
		{crash.RotateAllRewrapped, haltAllRewrapped, 1, 1},
		{crash.RotateSwitched, haltSwitched, 1, 2},
		{crash.RotateOldKEKDestroyed, haltOldKEKDestroyed, 1, 2},
	}
	for _, tc := range tests {
		t.Run(tc.point+"/"+string(rune('0'+tc.pass)), func(t *testing.T) {
			dir := keyDir(t)
			a := newArena(t)
			d, err := Open(dir, Options{Arena: a})
			if err != nil {
				t.Fatal(err)
			}
			keys := map[string][]byte{}
			for range 3 {
				id, k := grant(t, d)
				keys[id] = k
			}
			n := 0
			errStop := errors.New("simulated crash")
			d.stop = func(p halt) error {
				if p == tc.step {
					n++
					if n == tc.pass {
						return errStop
					}
				}
				return nil
			}
			if _, err := d.Rotate(); !errors.Is(err, errStop) {
				t.Fatalf("Rotate did not stop at %s: %v", tc.point, err)
			}
			d.kek.Wipe() // the crashed process's memory is gone

			d2 := open(t, dir, a, 0)
			if d2.Epoch() != tc.wantEpoch {
				t.Fatalf("epoch after recovery %d, want %d", d2.Epoch(), tc.wantEpoch)
			}
			eps, _ := d2.epochs()
			if !slices.Equal(eps, []uint64{tc.wantEpoch}) {
				t.Errorf("epoch keys after recovery %v, want only %d", eps, tc.wantEpoch)
			}
			ws, _ := d2.wraps()
			for _, w := range ws {
				if w.epoch != tc.wantEpoch {
					t.Errorf("wrap %s of epoch %d survived recovery", w.name, w.epoch)
				}
			}
			if len(ws) != len(keys) {
				t.Errorf("%d wraps after recovery, want %d", len(ws), len(keys))
			}
			for id, k := range keys {
				if got := mustUnwrap(t, d2, id); !bytes.Equal(got, k) {
					t.Errorf("key of a live lease lost in recovery")
				}
			}
			rep := d2.BootReport()
			if tc.wantEpoch == 1 && !slices.Equal(rep.RolledBack, []uint64{2}) {
				t.Errorf("report RolledBack = %v, want [2]", rep.RolledBack)
			}
			if tc.wantEpoch == 2 && tc.point == crash.RotateSwitched && !slices.Equal(rep.Finished, []uint64{1}) {
				t.Errorf("report Finished = %v, want [1]", rep.Finished)
			}
			// A rotation after recovery works.
			if _, err := d2.Rotate(); err != nil {
				t.Errorf("Rotate after recovery: %v", err)
			}
		})
	}
}

func TestRecoveryDestroysTempFiles(t *testing.T) {
	dir := keyDir(t)
	a := newArena(t)
	d := open(t, dir, a, 0)
	id, k := grant(t, d)
	d.Close()
	// A crash between the temp write and the rename leaves these behind.
	secret := bytes.Repeat([]byte{0x5a}, KeySize)
	os.WriteFile(filepath.Join(dir, "epoch-2.key"+tmpSuffix), secret, 0o600)
	os.WriteFile(filepath.Join(dir, "dek", strings.TrimPrefix(id, "pcl:")+".2"+tmpSuffix), secret, 0o600)
	os.WriteFile(filepath.Join(dir, "current"+tmpSuffix), []byte("2\n"), 0o600)
	d2 := open(t, dir, a, 0)
	if got := d2.BootReport().Temps; got != 3 {
		t.Errorf("temps destroyed = %d, want 3", got)
	}
	for n := range files(t, dir) {
		if strings.HasSuffix(n, tmpSuffix) {
			t.Errorf("temp file %s survived", n)
		}
	}
	if d2.Epoch() != 1 || !bytes.Equal(mustUnwrap(t, d2, id), k) {
		t.Errorf("recovery from temp files changed the epoch or lost the key")
	}
}

func TestRecoveryRebuildsDamagedPointer(t *testing.T) {
	for _, content := range []string{"", "x\n", "01\n", "2", "99\n"} {
		t.Run(content, func(t *testing.T) {
			dir := keyDir(t)
			a := newArena(t)
			d := open(t, dir, a, 0)
			id, k := grant(t, d)
			d.Close()
			os.WriteFile(filepath.Join(dir, "current"), []byte(content), 0o600)
			d2 := open(t, dir, a, 0)
			if !d2.BootReport().PointerRebuilt || d2.Epoch() != 1 {
				t.Fatalf("pointer %q not rebuilt to epoch 1: %+v", content, d2.BootReport())
			}
			if !bytes.Equal(mustUnwrap(t, d2, id), k) {
				t.Errorf("key lost after pointer rebuild")
			}
			b, _ := os.ReadFile(filepath.Join(dir, "current"))
			if string(b) != "1\n" {
				t.Errorf("pointer rewritten as %q", b)
			}
		})
	}
}

func TestWithoutArena(t *testing.T) {
	dir := keyDir(t)
	a := newArena(t)
	d := open(t, dir, a, 0)
	id, _ := grant(t, d)
	d.Close()
	// Leave an interrupted rotation behind; recovery works without an arena.
	os.WriteFile(filepath.Join(dir, "epoch-2.key"), make([]byte, KeySize), 0o600)

	n, err := Open(dir, Options{})
	if err != nil {
		t.Fatalf("Open without arena: %v", err)
	}
	if n.Epoch() != 1 || !slices.Equal(n.BootReport().RolledBack, []uint64{2}) {
		t.Errorf("recovery without arena: epoch %d report %+v", n.Epoch(), n.BootReport())
	}
	if code := CodeOf(n.Available()); code != receipts.VaultProfileNotProven {
		t.Errorf("Available code %q, want VAULT_PROFILE_NOT_PROVEN", code)
	}
	for _, err := range []error{
		func() error { _, err := n.Unwrap(id); return err }(),
		func() error { _, err := n.NewKey(); return err }(),
		func() error { _, err := n.Rotate(); return err }(),
	} {
		if CodeOf(err) != receipts.VaultProfileNotProven {
			t.Errorf("%v: want VAULT_PROFILE_NOT_PROVEN", err)
		}
	}
	if !n.Has(id) {
		t.Errorf("Has = false without arena")
	}
	if err := n.Destroy(id); err != nil || n.Has(id) {
		t.Errorf("Destroy without arena: %v, still has %v", err, n.Has(id))
	}
	// An empty directory without an arena gets no epoch.
	e, err := Open(filepath.Join(t.TempDir(), "new"), Options{})
	if err != nil || e.Epoch() != 0 {
		t.Errorf("empty dir without arena: epoch %d err %v", e.Epoch(), err)
	}
}

func TestReadOnly(t *testing.T) {
	dir := keyDir(t)
	a := newArena(t)
	d := open(t, dir, a, 0)
	id, k := grant(t, d)
	tmp := filepath.Join(dir, "epoch-9.key"+tmpSuffix)
	os.WriteFile(tmp, make([]byte, KeySize), 0o600)
	r, err := Open(dir, Options{Arena: a, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if !bytes.Equal(mustUnwrap(t, r, id), k) {
		t.Errorf("read-only open cannot unwrap")
	}
	if _, err := os.Stat(tmp); err != nil {
		t.Errorf("read-only open touched the directory: %v", err)
	}
	if err := r.Destroy(id); !errors.Is(err, ErrUnavailable) || !d.Has(id) {
		t.Errorf("read-only Destroy: %v", err)
	}
	if _, err := r.Rotate(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("read-only Rotate: %v", err)
	}
}

func TestRotateDropsUnauthenticatedWraps(t *testing.T) {
	dir := keyDir(t)
	d := open(t, dir, newArena(t), 0)
	good, k := grant(t, d)
	bad, _ := grant(t, d)
	flip(t, wrapPath(dir, bad, 1), 30)
	r, err := d.Rotate()
	if err != nil {
		t.Fatalf("Rotate: %v", err)
	}
	if r.Rewrapped != 1 || r.Dropped != 1 {
		t.Errorf("rotation %+v, want 1 re-wrapped and 1 dropped", r)
	}
	if !bytes.Equal(mustUnwrap(t, d, good), k) {
		t.Errorf("good lease lost")
	}
	if _, err := d.Unwrap(bad); !errors.Is(err, ErrNoKey) {
		t.Errorf("dropped lease: %v, want ErrNoKey", err)
	}
}

func TestInvalidLeaseIDs(t *testing.T) {
	d := open(t, keyDir(t), newArena(t), 0)
	s, _ := d.NewKey()
	defer s.Wipe()
	for _, id := range []string{"", "pcl:", "pcl:../../etc/passwd", "pcl:AAAAAAAAAAAAAAAAAAAAAAAAAA", "x:aaaaaaaaaaaaaaaaaaaaaaaaaa", "pcl:aaaaaaaaaaaaaaaaaaaaaaaaa1"} {
		if err := d.Wrap(id, s); !errors.Is(err, ErrInvalid) {
			t.Errorf("Wrap(%q): %v, want ErrInvalid", id, err)
		}
		if _, err := d.Unwrap(id); !errors.Is(err, ErrInvalid) {
			t.Errorf("Unwrap(%q): %v, want ErrInvalid", id, err)
		}
		if err := d.Destroy(id); !errors.Is(err, ErrInvalid) {
			t.Errorf("Destroy(%q): %v, want ErrInvalid", id, err)
		}
	}
}

func TestErrorsCarryNoKeyBytes(t *testing.T) {
	dir := keyDir(t)
	d := open(t, dir, newArena(t), 0)
	id, k := grant(t, d)
	flip(t, wrapPath(dir, id, 1), 40)
	_, err := d.Unwrap(id)
	kek, _ := os.ReadFile(filepath.Join(dir, "epoch-1.key"))
	msg := []byte(err.Error())
	for _, secret := range [][]byte{k, kek} {
		if bytes.Contains(msg, secret) || bytes.Contains(msg, []byte(string(secret[:8]))) {
			t.Errorf("error message holds key bytes")
		}
	}
	if !strings.HasPrefix(err.Error(), "keys: unwrap") {
		t.Errorf("error %q lacks the package prefix", err)
	}
}
