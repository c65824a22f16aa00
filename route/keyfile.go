package route

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Limits on the files this package reads.
const (
	maxSignerKeyFile = maxSignerKeyText + 1 // the text and its newline
	// MaxTrustFileBytes bounds a trust file.
	MaxTrustFileBytes = 64 << 10
)

// WriteSignerKey writes k's text and a newline to a new file at path, mode
// 0600. It never replaces a file: one at path already is refused (a
// *KeyError wrapping fs.ErrExist), so a key nobody saved elsewhere is not
// lost by running keygen twice. The key is written to a temporary file in
// the same directory (O_CREAT|O_EXCL, 0600), synced, then hard-linked to
// path, which fails if path exists; path never holds part of a key. The
// directory is synced last. The parent directory must exist.
func WriteSignerKey(path string, k *SignerKey) error {
	if k == nil {
		return ErrKeyWiped
	}
	if _, err := os.Lstat(path); err == nil {
		return &KeyError{File: path, Reason: "exists already; a signer key is never overwritten", Err: fs.ErrExist}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	var suffix [8]byte
	rand.Read(suffix[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openFlags, 0o600)
	if err != nil {
		return err
	}
	err = k.Reveal(func(text []byte) error {
		if _, err := f.Write(text); err != nil {
			return err
		}
		_, err := f.Write([]byte("\n"))
		return err
	})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if err = os.Link(tmp, path); errors.Is(err, fs.ErrExist) {
			err = &KeyError{File: path, Reason: "exists already; a signer key is never overwritten", Err: fs.ErrExist}
		}
	}
	if rerr := os.Remove(tmp); err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return err
	}
	return syncDir(dir)
}

// ReadSignerKey reads a signer key file. The file is refused (a *KeyError)
// unless it is a regular file (a symbolic link is not followed), grants no
// permission to group or other, is owned by the effective user and holds
// one signer key text, optionally ending in a newline. The open does not
// block (a FIFO swapped in is refused), and the opened file is checked
// again. The bytes read are cleared once parsed.
func ReadSignerKey(path string) (*SignerKey, error) {
	data, err := readChecked(path, maxSignerKeyFile, true)
	defer clear(data)
	if err != nil {
		return nil, err
	}
	k, err := ParseSignerKey(data)
	if err != nil {
		var ke *KeyError
		if errors.As(err, &ke) {
			ke.File = path
		}
		return nil, err
	}
	return k, nil
}

// ReadTrustFile reads a trust file: verifier keys, one a line; empty lines
// and lines beginning with '#' are ignored. A trust file is public, but
// whoever can write it chooses the routes that are obeyed, so it is
// refused (a *KeyError) unless it is a regular file (a symbolic link is
// not followed), writable by nobody but its owner, owned by the effective
// user or by root, and at most MaxTrustFileBytes long. The keys are
// checked by NewTrust.
func ReadTrustFile(path string) ([]string, error) {
	data, err := readChecked(path, MaxTrustFileBytes, false)
	if err != nil {
		return nil, err
	}
	return ParseTrustList(data), nil
}

// readChecked reads a key file (secret: mode 0600-like, owned by the
// effective user) or a trust file (not writable by group or other, owned
// by the effective user or root) of at most max bytes.
func readChecked(path string, max int, secret bool) ([]byte, error) {
	li, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if err := checkFileInfo(path, li, max, secret); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags|nonblockFlag, 0)
	if err != nil {
		if isSymlinkOpenError(err) {
			return nil, &KeyError{File: path, Reason: "not a regular file"}
		}
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkFileInfo(path, fi, max, secret); err != nil {
		return nil, err
	}
	if !os.SameFile(li, fi) {
		return nil, &KeyError{File: path, Reason: "file replaced while opening"}
	}
	buf := make([]byte, max+1)
	n, err := io.ReadFull(f, buf)
	if err != io.ErrUnexpectedEOF && err != io.EOF {
		clear(buf)
		if err == nil {
			return nil, &KeyError{File: path, Reason: "larger than the limit"}
		}
		return nil, err
	}
	return buf[:n], nil
}

func checkFileInfo(path string, fi fs.FileInfo, max int, secret bool) error {
	switch {
	case !fi.Mode().IsRegular():
		return &KeyError{File: path, Reason: "not a regular file"}
	case secret && fi.Mode().Perm()&0o077 != 0:
		return &KeyError{File: path, Reason: "mode grants group or other access"}
	case !secret && fi.Mode().Perm()&0o022 != 0:
		return &KeyError{File: path, Reason: "writable by group or other"}
	case secret && !ownedBy(fi, false):
		return &KeyError{File: path, Reason: "not owned by the effective user"}
	case !secret && !ownedBy(fi, true):
		return &KeyError{File: path, Reason: "owned by neither the effective user nor root"}
	case fi.Size() > int64(max):
		return &KeyError{File: path, Reason: "larger than the limit"}
	}
	return nil
}

func syncDir(dir string) error {
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
