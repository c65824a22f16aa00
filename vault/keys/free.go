package keys

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"

	"github.com/privacycut/privacycut/vault/crash"
	"golang.org/x/sys/unix"
)

// Free wrap files. Destroying a wrapped data key overwrites its file with
// random bytes and syncs that; rather than unlink it, Destroy renames it
// into the directory free/ of the key directory, under a free name ("free-"
// and 16 random hex digits), and keeps the name in a pool; Wrap writes the
// next data key into a free file and renames it into place in dek/. A grant and a destruction then cost a data sync of a block
// the file already owns and a rename made durable by a directory sync
// shared with every concurrent caller (dirSyncer), instead of creating or
// unlinking an inode, which journals each file apart.
//
// A free file never holds a key except between Wrap's write and its
// rename; boot recovery destroys every file of free/ (overwrite, sync,
// unlink), so a crash in that window leaves nothing, and Close unlinks the
// pool (random bytes, already synced). Only dek/ is synced after a rename:
// what must be durable is a wrap's name appearing there (a grant) or going
// (a destruction). A rename is atomic on the file systems the key directory
// is meant for, so no crash leaves a file under both names; a free name
// lost by a crash only leaves an unreferenced inode or a file of free/,
// which boot recovery destroys.
const (
	freeDirName = "free"
	freePrefix  = "free-"
	// maxFree bounds the pool; Destroy unlinks beyond it.
	maxFree = 128
)

func newFreeName() string {
	var b [8]byte
	rand.Read(b[:])
	return freePrefix + hex.EncodeToString(b[:])
}

// takeFree pops a free file name, if the pool has one.
func (d *Dir) takeFree() (string, bool) {
	d.freeMu.Lock()
	defer d.freeMu.Unlock()
	n := len(d.free)
	if n == 0 {
		return "", false
	}
	name := d.free[n-1]
	d.free = d.free[:n-1]
	return name, true
}

// putFree returns a free file name to the pool; false when it is full.
func (d *Dir) putFree(name string) bool {
	d.freeMu.Lock()
	defer d.freeMu.Unlock()
	if len(d.free) >= maxFree {
		return false
	}
	d.free = append(d.free, name)
	return true
}

// errNotReusable: the free file is not a regular file of WrapSize bytes.
var errNotReusable = errors.New("free file not reusable")

// wrapInto writes the wrap b into the free file free, syncs its data and
// renames it to final (never over an existing file: os.ErrExist), then
// makes the rename durable. On any failure the free file is destroyed.
func (d *Dir) wrapInto(free, final string, b []byte) error {
	p := filepath.Join(d.freeDir, free)
	err := func() error {
		f, err := os.OpenFile(p, os.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		fi, err := f.Stat()
		if err == nil && (!fi.Mode().IsRegular() || fi.Size() != int64(len(b))) {
			err = errNotReusable
		}
		if err == nil {
			_, err = f.WriteAt(b, 0)
		}
		if err == nil {
			err = unix.Fdatasync(int(f.Fd()))
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}()
	if err == nil {
		crash.At(crash.KeyTempSynced)
		err = renameNoReplace(p, filepath.Join(d.dekDir, final))
	}
	if err != nil {
		_ = destroyFile(d.freeDir, free)
		return err
	}
	crash.At(crash.KeyRenamed)
	return syncDir(d.dekDir)
}

// destroyToFree destroys the wrap file name like destroyFile (overwrite
// with random bytes, data sync) but renames it to a free name instead of
// unlinking it, and pools it. It reports false, having done nothing, when
// the file is not a regular file of WrapSize bytes or the pool is full:
// the caller then uses destroyFile.
func (d *Dir) destroyToFree(name string) (bool, error) {
	d.freeMu.Lock()
	full := len(d.free) >= maxFree
	d.freeMu.Unlock()
	if full {
		return false, nil
	}
	p := filepath.Join(d.dekDir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, nil
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != WrapSize {
		f.Close()
		return false, nil
	}
	err = overwrite(f, WrapSize)
	if err == nil {
		err = unix.Fdatasync(int(f.Fd()))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return true, err
	}
	crash.At(crash.KeyOverwritten)
	free := newFreeName()
	if err := renameNoReplace(p, filepath.Join(d.freeDir, free)); err != nil {
		return true, err
	}
	if err := syncDir(d.dekDir); err != nil {
		return true, err
	}
	if !d.putFree(free) {
		// The pool filled meanwhile: the file holds random bytes only.
		if err := os.Remove(filepath.Join(d.freeDir, free)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return true, err
		}
	}
	return true, nil
}

// dropFree unlinks every pooled free file (random bytes, already synced)
// and syncs the directory once.
func (d *Dir) dropFree() error {
	d.freeMu.Lock()
	names := d.free
	d.free = nil
	d.freeMu.Unlock()
	if len(names) == 0 {
		return nil
	}
	var first error
	for _, n := range names {
		if err := os.Remove(filepath.Join(d.freeDir, n)); err != nil && !errors.Is(err, os.ErrNotExist) && first == nil {
			first = err
		}
	}
	if err := syncDir(d.freeDir); first == nil {
		first = err
	}
	return first
}

// renameNoReplace renames oldpath to newpath, failing with os.ErrExist if
// newpath exists (renameat2 RENAME_NOREPLACE; where the file system does
// not support it, a check and a plain rename).
func renameNoReplace(oldpath, newpath string) error {
	err := unix.Renameat2(unix.AT_FDCWD, oldpath, unix.AT_FDCWD, newpath, unix.RENAME_NOREPLACE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EEXIST):
		return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: os.ErrExist}
	case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSYS):
		if _, err := os.Lstat(newpath); err == nil {
			return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: os.ErrExist}
		}
		return os.Rename(oldpath, newpath)
	}
	return &os.LinkError{Op: "rename", Old: oldpath, New: newpath, Err: err}
}
