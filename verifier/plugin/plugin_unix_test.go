//go:build unix

package plugin

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPluginSocketDirectory: the plugin listens in a private directory of
// its own, and the host removes it when the plugin has stopped, even when
// the plugin was killed before it could remove its socket.
func TestPluginSocketDirectory(t *testing.T) {
	c, err := startPlugin(t, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rc := c.pc.ReattachConfig()
	if rc == nil || rc.Addr == nil {
		t.Fatal("no address for the running plugin")
	}
	sock := rc.Addr.String()
	if filepath.Dir(sock) != c.dir {
		t.Fatalf("plugin socket %s is not in the plugin's directory %s", sock, c.dir)
	}
	fi, err := os.Stat(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Fatalf("socket directory mode %o, want 700", perm)
	}
	if err := syscall.Kill(rc.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Stat(sock); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket left after the plugin was killed: %v", err)
	}
	if _, err := os.Stat(c.dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("socket directory left after Close: %v", err)
	}
}
