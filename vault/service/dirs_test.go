package service

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestOpenRefusesOverlappingDirs: a key directory that is the state
// directory, lies inside it or holds it is refused before anything is
// created, also when a symbolic link hides the overlap; separate
// directories open.
func TestOpenRefusesOverlappingDirs(t *testing.T) {
	d := t.TempDir()
	link := filepath.Join(d, "link")
	if err := os.MkdirAll(filepath.Join(d, "real", "state"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(d, "real"), link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, state, key string
	}{
		{"same", filepath.Join(d, "a"), filepath.Join(d, "a")},
		{"same, not clean", filepath.Join(d, "a"), filepath.Join(d, "a", ".", "x", "..")},
		{"keys inside state", filepath.Join(d, "b"), filepath.Join(d, "b", "keys")},
		{"state inside keys", filepath.Join(d, "c", "state"), filepath.Join(d, "c")},
		{"through a link", filepath.Join(d, "real", "state"), filepath.Join(link, "state", "keys")},
		{"relative", ".", "keys"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.state == "." {
				t.Chdir(d)
			}
			opt := Options{StateDir: tt.state, KeyDir: tt.key, ArenaSize: 1 << 16, SweepInterval: -1}
			v, err := Open(opt)
			if err == nil {
				v.Close()
				t.Fatal("Open accepted overlapping directories")
			}
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrDirsOverlap) || e.Field != "key_dir" {
				t.Fatalf("Open: %v, want ErrDirsOverlap on key_dir", err)
			}
			if _, err := os.Stat(filepath.Join(tt.key, "current")); err == nil {
				t.Error("Open created key material before refusing")
			}
		})
	}
	t.Run("separate", func(t *testing.T) {
		e := newEnv(t)
		e.opt.StateDir, e.opt.KeyDir = filepath.Join(d, "ok", "state"), filepath.Join(d, "ok", "state-keys")
		e.openAny(t)
	})
}
