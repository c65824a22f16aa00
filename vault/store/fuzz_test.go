package store

import (
	"bytes"
	"testing"
	"time"

	"github.com/privacycut/privacycut/lease"
)

// FuzzReadBackup: the backup reader never panics, and every stream it
// accepts holds only leases that pass lease.Check and maps of those leases.
func FuzzReadBackup(f *testing.F) {
	s, err := Open(f.TempDir(), Options{})
	if err != nil {
		f.Fatal(err)
	}
	l, _ := lease.New(lease.Params{ID: lease.FormatID([16]byte{1}), Run: "r", Attempt: 1, Target: "https://t", Purpose: "p",
		Namespace: "abcdefghij", SourceDigest: "hmac-sha256:" + string(bytes.Repeat([]byte("1"), 64)), KeyEpoch: 1,
		Station: "s", Principal: "uid:0", Lifetime: time.Hour}, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC), time.Hour)
	if err := s.Create(l, []byte("ciphertext")); err != nil {
		f.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := s.Backup(&buf); err != nil {
		f.Fatal(err)
	}
	s.Close()
	f.Add(buf.Bytes())
	f.Add([]byte(backupMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		snap, err := ReadBackup(bytes.NewReader(b))
		if err != nil {
			return
		}
		for _, l := range snap.Leases() {
			if err := l.Check(); err != nil {
				t.Errorf("accepted a lease that fails Check: %v", err)
			}
		}
		for id := range snap.maps {
			found := false
			for _, l := range snap.Leases() {
				if k, _ := IDBytes(l.ID); k == id {
					found = true
				}
			}
			if !found {
				t.Errorf("accepted a map without its lease")
			}
		}
	})
}
