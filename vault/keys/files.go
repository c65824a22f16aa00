package keys

import (
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/privacycut/privacycut/internal/durable"
	"github.com/privacycut/privacycut/vault/crash"
	"golang.org/x/sys/unix"
)

// tmpSuffix marks a temporary copy being written. Boot recovery destroys
// every file with this suffix: it may hold a whole key.
const tmpSuffix = ".tmp"

// writeDurable writes a file of the key directory so that, after any crash,
// either the old file (or none) or the complete new file is in place:
// temp file (O_EXCL, 0600) → write → fsync → close → rename → fsync(dir).
// fill writes the content to the open file; it is called once. An existing
// file of the same name is replaced only when replace is set.
func writeDurable(dir, name string, replace bool, fill func(f *os.File) error) error {
	final := filepath.Join(dir, name)
	if !replace {
		if _, err := os.Lstat(final); err == nil {
			return os.ErrExist
		} else if !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	tmp := final + tmpSuffix
	if _, err := os.Lstat(tmp); err == nil {
		// A stale temp copy (a crash before recovery ran): destroy it.
		if err := destroyFile(dir, name+tmpSuffix); err != nil {
			return err
		}
	}
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return err
	}
	if err := fill(f); err != nil {
		f.Close()
		_ = destroyFile(dir, name+tmpSuffix)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		_ = destroyFile(dir, name+tmpSuffix)
		return err
	}
	if err := f.Close(); err != nil {
		_ = destroyFile(dir, name+tmpSuffix)
		return err
	}
	crash.At(crash.KeyTempSynced)
	if err := os.Rename(tmp, final); err != nil {
		_ = destroyFile(dir, name+tmpSuffix)
		return err
	}
	crash.At(crash.KeyRenamed)
	return syncDir(dir)
}

// writeBytes is writeDurable for public bytes (ciphertext, the pointer).
func writeBytes(dir, name string, replace bool, b []byte) error {
	return writeDurable(dir, name, replace, func(f *os.File) error {
		_, err := f.Write(b)
		return err
	})
}

// destroyFile overwrites a file with random bytes of its own length,
// fdatasyncs it, unlinks it and fsyncs the directory. A missing file is not
// an error. This is best effort: journaling, copy-on-write and flash storage
// may keep the old blocks (see the package documentation).
func destroyFile(dir, name string) error {
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		// Not openable for writing (a symlink, a directory): unlink anyway.
		if rmErr := os.Remove(p); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
			return rmErr
		}
		return syncDir(dir)
	}
	fi, err := f.Stat()
	if err == nil && fi.Mode().IsRegular() && fi.Size() > 0 {
		err = overwrite(f, fi.Size())
		if err == nil {
			err = unix.Fdatasync(int(f.Fd()))
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	crash.At(crash.KeyOverwritten)
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return syncDir(dir)
}

// overwrite writes n random bytes from the start of f.
func overwrite(f *os.File, n int64) error {
	buf := make([]byte, min(n, 64<<10))
	var off int64
	for off < n {
		chunk := buf[:min(int64(len(buf)), n-off)]
		rand.Read(chunk)
		if _, err := f.WriteAt(chunk, off); err != nil {
			return err
		}
		off += int64(len(chunk))
	}
	return nil
}

// readSmall reads a regular file of at most max bytes. A larger file, or
// one that is not regular, is ErrCorrupt.
func readSmall(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, ErrCorrupt
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, ErrCorrupt
	}
	return b, nil
}

// ensureDir creates dir with mode 0700 if missing (and fsyncs its parent),
// and refuses an existing directory whose mode grants anything to group or
// others, or that is not a directory.
func ensureDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := os.Chmod(dir, 0o700); err != nil { // umask may have narrowed it; never widened
			return err
		}
		return durable.SyncDir(filepath.Dir(strings.TrimRight(dir, "/")))
	}
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return &os.PathError{Op: "open", Path: dir, Err: unix.ENOTDIR}
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return ErrPermissions
	}
	return nil
}
