package gateway_test

import (
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/gateway"
)

// socketGroup is a gid the test may give files: any as root, else the
// test's own.
func socketGroup() int {
	if os.Geteuid() == 0 {
		return 64103
	}
	return os.Getgid()
}

func statOf(t *testing.T, path string) (os.FileMode, int) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm(), int(fi.Sys().(*syscall.Stat_t).Gid)
}

// TestSocketGroup: with listen.group the socket's directory is 0710 and
// the socket 0660, both of that group, and the socket serves; a directory
// with more bits, or of another group, refuses start-up naming
// listen.unix; a group the gateway cannot give names listen.group.
func TestSocketGroup(t *testing.T) {
	gid := socketGroup()
	e := newEnv(t, envOptions{config: func(c map[string]any) { c["listen"].(map[string]any)["group"] = gid }})
	if mode, g := statOf(t, e.sock); mode != 0o660 || g != gid {
		t.Errorf("socket: mode %#o gid %d, want 0660 gid %d", mode, g, gid)
	}
	if mode, g := statOf(t, filepath.Dir(e.sock)); mode != 0o710 || g != gid {
		t.Errorf("socket directory: mode %#o gid %d, want 0710 gid %d", mode, g, gid)
	}
	if status, _ := e.post("/v1/routes/triage-irr/cut", examples.Projection, false); status != http.StatusOK {
		t.Fatalf("a cut through the group's socket: HTTP %d", status)
	}

	// Listen again, on other sockets, each in a directory made for the case.
	saved := e.cfg.Listen
	t.Cleanup(func() { e.cfg.Listen = saved })
	listen := func(dir string, mode os.FileMode, dirGID int, group *int64) error {
		t.Helper()
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dir, -1, dirGID); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		e.cfg.Listen.Unix, e.cfg.Listen.Group = filepath.Join(dir, "gw.sock"), group
		ls, err := e.g.Listen()
		for _, l := range ls {
			l.Close()
		}
		return err
	}
	g64 := int64(gid)
	field := func(err error) string {
		var ce *gateway.ConfigError
		if errors.As(err, &ce) {
			return ce.Field
		}
		return "not a ConfigError: " + errString(err)
	}
	if err := listen(filepath.Join(e.dir, "ok"), 0o710, gid, &g64); err != nil {
		t.Errorf("a 0710 directory of the group: %v", err)
	}
	if f := field(listen(filepath.Join(e.dir, "wide"), 0o750, gid, &g64)); f != "listen.unix" {
		t.Errorf("a 0750 directory: field %q, want listen.unix", f)
	}
	if f := field(listen(filepath.Join(e.dir, "nogroup"), 0o710, gid, nil)); f != "listen.unix" {
		t.Errorf("a 0710 directory without listen.group: field %q, want listen.unix", f)
	}
	if os.Geteuid() == 0 {
		if f := field(listen(filepath.Join(e.dir, "other"), 0o710, gid+1, &g64)); f != "listen.unix" {
			t.Errorf("a directory of another group: field %q, want listen.unix", f)
		}
		return
	}
	// Not root: a group the test's user is not a member of cannot be given.
	other := int64(gid + 4242)
	if f := field(listen(filepath.Join(e.dir, "foreign"), 0o700, gid, &other)); f != "listen.unix" {
		t.Errorf("a 0700 directory of the test's group, listen.group another: field %q, want listen.unix", f)
	}
	os.Remove(filepath.Join(e.dir, "foreign"))
	e.cfg.Listen.Unix = filepath.Join(e.dir, "fresh", "gw.sock")
	ls, err := e.g.Listen()
	for _, l := range ls {
		l.Close()
	}
	if f := field(err); f != "listen.group" {
		t.Errorf("a group the user is not in: field %q, want listen.group", f)
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}
