package service

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/privacycut/privacycut/vault/vaultapi"
)

// separateDirs refuses a key directory that is the state directory, lies
// inside it, or holds it. The state directory (Badger: leases and
// ciphertext) is what operators copy and back up; epoch keys and wrapped
// data keys beside it would make every copy decryptable (they live
// outside the Badger directory). Paths are compared after making them
// absolute and resolving symbolic links in the part of each that exists, so
// a link cannot hide the overlap.
func separateDirs(state, key string) error {
	s, err := resolveDir(state)
	if err != nil {
		return invalid("open", "state_dir")
	}
	k, err := resolveDir(key)
	if err != nil {
		return invalid("open", "key_dir")
	}
	if within(s, k) || within(k, s) {
		return vaultapi.New("", "open", "key_dir", ErrDirsOverlap)
	}
	return nil
}

// resolveDir returns p absolute and clean, with symbolic links resolved in
// its longest existing prefix (the rest does not exist yet and is created
// as plain directories).
func resolveDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for dir := abs; ; {
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(real, rest), nil
		}
		if !os.IsNotExist(err) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", err
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = parent
	}
}

// within reports whether path is dir or lies inside it; both are clean and
// absolute.
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	if dir == string(filepath.Separator) {
		return true
	}
	return strings.HasPrefix(path, dir+string(filepath.Separator))
}
