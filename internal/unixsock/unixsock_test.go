package unixsock

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	sock := filepath.Join(dir, "s.sock")
	l, err := Listen(sock, NoGroup)
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{dir: 0o700, sock: 0o600} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != want {
			t.Fatalf("%s: mode %v, %v; want %#o", p, fi.Mode().Perm(), err, want)
		}
	}
	if _, err := Listen(sock, NoGroup); !errors.Is(err, ErrInUse) {
		t.Fatalf("second Listen on a live socket: %v, want ErrInUse", err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	// A socket left by a stopped process is replaced.
	l, err = Listen(sock, NoGroup)
	if err != nil {
		t.Fatalf("stale socket: %v", err)
	}
	l.Close()
}

func TestListenRefuses(t *testing.T) {
	base := t.TempDir()
	open := filepath.Join(base, "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o755)
	file := filepath.Join(base, "file")
	os.WriteFile(file, nil, 0o600)
	priv := filepath.Join(base, "priv")
	os.Mkdir(priv, 0o700)
	notSock := filepath.Join(priv, "plain")
	os.WriteFile(notSock, nil, 0o600)
	cases := []struct{ path, reason string }{
		{filepath.Join(open, "s.sock"), "mode 0755; want 0700"},
		{filepath.Join(file, "s.sock"), "is not a directory"},
		{notSock, "is not a socket"},
	}
	if os.Geteuid() == 0 {
		other := filepath.Join(base, "other")
		os.Mkdir(other, 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		cases = append(cases, struct{ path, reason string }{filepath.Join(other, "s.sock"), "not owned by this process's uid"})
	} else {
		t.Log("not root: the directory owned by another uid is not tried")
	}
	for _, c := range cases {
		_, err := Listen(c.path, NoGroup)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Reason, c.reason) {
			t.Errorf("Listen(%s) = %v, want a refusal saying %q", c.path, err, c.reason)
		}
	}
}
