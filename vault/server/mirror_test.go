package server

import (
	"testing"

	"github.com/privacycut/privacycut/vault/keys"
	"github.com/privacycut/privacycut/vault/store"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// TestMirrors: the results the client returns for Backup, Restore and
// Rotate are field for field the store's and the key directory's (the
// conversions below compile only then), and the client bounds a lease
// record as the store does.
func TestMirrors(t *testing.T) {
	if got, want := vaultapi.BackupStats(store.BackupStats{Leases: 1, Maps: 2, Bytes: 3}), (vaultapi.BackupStats{Leases: 1, Maps: 2, Bytes: 3}); got != want {
		t.Errorf("BackupStats %+v, want %+v", got, want)
	}
	if got, want := vaultapi.RestoreStats(store.RestoreStats{Restored: 1, Maps: 2, Skipped: 3}), (vaultapi.RestoreStats{Restored: 1, Maps: 2, Skipped: 3}); got != want {
		t.Errorf("RestoreStats %+v, want %+v", got, want)
	}
	if got, want := vaultapi.Rotation(keys.Rotation{From: 1, To: 2, Rewrapped: 3, Dropped: 4}), (vaultapi.Rotation{From: 1, To: 2, Rewrapped: 3, Dropped: 4}); got != want {
		t.Errorf("Rotation %+v, want %+v", got, want)
	}
	if vaultapi.MaxRecord != store.MaxRecord {
		t.Errorf("the client bounds a lease record at %d bytes, the store at %d", vaultapi.MaxRecord, store.MaxRecord)
	}
}
