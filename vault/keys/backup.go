package keys

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/privacycut/privacycut/vault/arena"
	"golang.org/x/sys/unix"
)

// The backup key keys the integrity check of the state directory's backups
// (package vault/store's backup stream). It lives here, beside the epoch
// keys, because the key directory is never part of a backup and never
// inside the Badger directory: whoever holds a backup cannot recompute its
// check after editing it.
const (
	backupName = "backup.key"
	// BackupKeyIDSize is the size of a backup key's id.
	BackupKeyIDSize = 16
	// backupIDDomain is the message whose HMAC under the backup key, cut to
	// BackupKeyIDSize bytes, is the key's public id.
	backupIDDomain = "privacycut/backup-key-id/v1"
)

// loadBackupKey reads the backup key straight into the arena, first
// creating it (random, durably) when the directory has none and may be
// written. Without it BackupMAC is ErrUnavailable.
func (d *Dir) loadBackupKey() {
	if d.a == nil {
		d.bkErr = noArena("open", 0)
		return
	}
	s, err := d.readKeyFile(backupName, 0)
	if errors.Is(err, os.ErrNotExist) && !d.readOnly {
		if s, err = d.NewKey(); err == nil {
			err = d.writeKeyFile(backupName, s)
			if err != nil {
				s.Wipe()
				err = newError("open", 0, ErrIO, err)
			}
		}
	}
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			err = newError("open", 0, ErrIO, err)
		}
		d.bkErr = err
		d.log.Error("keys: backup key unusable; backups can be neither written nor verified")
		return
	}
	var id [BackupKeyIDSize]byte
	_ = s.Reveal(func(k []byte) error {
		m := hmac.New(sha256.New, k)
		m.Write([]byte(backupIDDomain))
		copy(id[:], m.Sum(nil))
		return nil
	})
	d.bkey, d.bkID = s, id
}

// BackupMAC returns the backup key's public id and a new HMAC-SHA256 keyed
// with the backup key, for writing or verifying one backup stream. The
// backup key is created once, when the directory is first opened for
// writing, and is not changed by Rotate: a backup stays verifiable across
// rotations, and only the loss of the key directory (which loses the data
// keys too) makes the backups taken before it unverifiable. hmac.New copies
// the key into heap pads that are dropped, not wiped (see the package
// documentation). Without a backup key the error is ErrUnavailable.
func (d *Dir) BackupMAC() ([BackupKeyIDSize]byte, hash.Hash, error) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.bkey == nil {
		var e *Error
		if errors.As(d.bkErr, &e) {
			return [BackupKeyIDSize]byte{}, nil, &Error{Core: e.Core, Epoch: e.Epoch}
		}
		return [BackupKeyIDSize]byte{}, nil, newError("backup-key", 0, ErrUnavailable, nil)
	}
	var h hash.Hash
	err := d.bkey.Reveal(func(k []byte) error {
		h = hmac.New(sha256.New, k)
		return nil
	})
	if err != nil {
		return [BackupKeyIDSize]byte{}, nil, err
	}
	return d.bkID, h, nil
}

// readKeyFile reads a key file of the directory (KeySize bytes, regular,
// not a symlink) with read(2) straight into a new arena secret; epoch only
// positions the error.
func (d *Dir) readKeyFile(name string, epoch uint64) (*arena.Secret, error) {
	f, err := os.OpenFile(filepath.Join(d.path, name), os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, newError("open", epoch, ErrIO, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, newError("open", epoch, ErrIO, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() != KeySize {
		return nil, newError("open", epoch, ErrCorrupt, nil)
	}
	s, err := d.a.Alloc(KeySize)
	if err != nil {
		return nil, err
	}
	// read(2) straight into arena memory: the key never passes a heap buffer.
	err = s.Fill(func(dst []byte) error {
		_, err := io.ReadFull(f, dst)
		return err
	})
	if err != nil {
		s.Wipe()
		return nil, newError("open", epoch, ErrIO, err)
	}
	return s, nil
}

// writeKeyFile writes the arena secret s durably as a new key file of the
// directory (write(2) straight from arena memory).
func (d *Dir) writeKeyFile(name string, s *arena.Secret) error {
	return writeDurable(d.path, name, false, func(f *os.File) error {
		return s.Reveal(func(b []byte) error {
			_, err := f.Write(b)
			return err
		})
	})
}
