package keys

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/privacycut/privacycut/receipts"
)

// macOf returns the id and the HMAC of msg under the directory's backup
// key.
func macOf(t *testing.T, d *Dir, msg string) ([BackupKeyIDSize]byte, []byte) {
	t.Helper()
	id, h, err := d.BackupMAC()
	if err != nil {
		t.Fatalf("BackupMAC: %v", err)
	}
	h.Write([]byte(msg))
	return id, h.Sum(nil)
}

// TestBackupKey: the backup key is created once (0600, 32 random bytes),
// read back by a reopen and a read-only open, kept by a rotation, and its
// id is HMAC-SHA256(key, "privacycut/backup-key-id/v1") cut to 16 bytes. A
// lost directory gets another key; a damaged file is ErrCorrupt; without
// an arena there is none (VAULT_PROFILE_NOT_PROVEN).
func TestBackupKey(t *testing.T) {
	dir := keyDir(t)
	a := newArena(t)
	d := open(t, dir, a, 0)
	id, sum := macOf(t, d, "stream")
	k, err := os.ReadFile(filepath.Join(dir, backupName))
	if err != nil || len(k) != KeySize || bytes.Equal(k, make([]byte, KeySize)) {
		t.Fatalf("backup.key: %d bytes, %v", len(k), err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, backupName)); fi.Mode().Perm() != 0o600 {
		t.Errorf("backup.key mode %v", fi.Mode().Perm())
	}
	want := hmac.New(sha256.New, k)
	want.Write([]byte("stream"))
	idm := hmac.New(sha256.New, k)
	idm.Write([]byte(backupIDDomain))
	if !bytes.Equal(sum, want.Sum(nil)) || !bytes.Equal(id[:], idm.Sum(nil)[:BackupKeyIDSize]) {
		t.Errorf("the MAC or the id is not the documented one")
	}
	if _, err := d.Rotate(); err != nil {
		t.Fatal(err)
	}
	if id2, sum2 := macOf(t, d, "stream"); id2 != id || !bytes.Equal(sum2, sum) {
		t.Errorf("rotation changed the backup key")
	}
	d.Close()
	d2 := open(t, dir, a, 0)
	if id2, sum2 := macOf(t, d2, "stream"); id2 != id || !bytes.Equal(sum2, sum) {
		t.Errorf("a reopen changed the backup key")
	}
	r, err := Open(dir, Options{Arena: a, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if id2, _ := macOf(t, r, "stream"); id2 != id {
		t.Errorf("a read-only open sees another backup key")
	}
	r.Close()
	d2.Close()

	// The directory lost: a new key, another id.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	d3 := open(t, dir, a, 5)
	if id3, _ := macOf(t, d3, "stream"); id3 == id {
		t.Errorf("a new directory reused the backup key id")
	}
	d3.Close()

	// A damaged file is not misread, and not replaced.
	if err := os.WriteFile(filepath.Join(dir, backupName), []byte("short"), 0o600); err != nil {
		t.Fatal(err)
	}
	d4 := open(t, dir, a, 0)
	if _, _, err := d4.BackupMAC(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("damaged backup key: %v, want ErrCorrupt", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, backupName)); string(b) != "short" {
		t.Errorf("the damaged backup key was replaced")
	}
	d4.Close()

	// Without an arena there is no backup key.
	n, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.BackupMAC(); CodeOf(err) != receipts.VaultProfileNotProven {
		t.Errorf("without an arena: %v, want VAULT_PROFILE_NOT_PROVEN", err)
	}
	// After Close neither.
	d5 := open(t, keyDir(t), a, 0)
	d5.Close()
	if _, _, err := d5.BackupMAC(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("after Close: %v, want ErrUnavailable", err)
	}
}
