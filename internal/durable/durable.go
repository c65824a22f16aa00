// Package durable makes directory entries durable: a file created or renamed
// in a directory survives a crash only once the directory itself is synced.
// It reads and writes no file content. (receipts, which may import nothing
// of the project, keeps its own copy for the evidence key.)
package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// SyncDir fsyncs the directory dir, so that an entry created, renamed or
// removed in it is durable.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// MkdirAll creates dir and its missing parents with mode 0700, syncing each
// new directory entry into its parent. An existing directory keeps its mode;
// an existing non-directory is ENOTDIR.
func MkdirAll(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: syscall.ENOTDIR}
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return SyncDir(parent)
}
