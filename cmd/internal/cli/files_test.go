package cli

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
)

// TestOutputFile: an output committed over an existing file is 0600
// whatever that file's mode, one committed over a symbolic link replaces the
// link and leaves its target alone, an aborted one leaves the path as it
// was and no temporary file, and a path in a missing directory fails at
// creation, before the work.
func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	entries := func() int {
		es, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(es)
	}

	// Over a world-readable file.
	path := filepath.Join(dir, "out.json")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	pf, err := createOutput(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := pf.commit([]byte("new")); err != nil {
		t.Fatal(err)
	}
	pf.abort() // after a commit: nothing to do
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("content %q", b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}

	// Over a symbolic link.
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("target"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if pf, err = createOutput(link, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := pf.commit([]byte("secret")); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Lstat(link); !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o600 {
		t.Fatalf("link replaced by %v", fi.Mode())
	}
	if b, _ := os.ReadFile(target); string(b) != "target" {
		t.Fatalf("written through the link: target holds %q", b)
	}

	// Aborted.
	n := entries()
	if pf, err = createOutput(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if entries() != n+1 {
		t.Fatal("no temporary file while the work runs")
	}
	pf.abort()
	if entries() != n {
		t.Fatal("abort left a temporary file")
	}
	if b, _ := os.ReadFile(path); string(b) != "new" {
		t.Fatalf("abort changed the file: %q", b)
	}

	// A missing directory.
	if _, err := createOutput(filepath.Join(dir, "missing", "out.json"), 0o600); err == nil {
		t.Fatal("created a file in a missing directory")
	}
}

// TestRehydrateOutputCheckedFirst: `cut rehydrate -o` into a directory that
// does not exist fails before the vault is asked, so the lease is not
// consumed and the answer can still be had; written over a world-readable
// file, the answer (which holds owner values) is 0600.
func TestRehydrateOutputCheckedFirst(t *testing.T) {
	f := newVaultFixture(t)
	schema, err := filepath.Abs("../../../examples/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	proj := f.write(t, "p.json", projection(
		"finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner.module=\""+canary+"\"\n"))
	plan := filepath.Join(f.dir, "plan.json")
	if code, _, errb := f.run(t, "plan", "init", "--vocab", f.vocab, "--consumer", "model:m", "--purpose", "dependency-triage",
		"--target", "https://m.example/", "--mode", "reversible", "--schema", schema, "--station", "station-a",
		"--return-window", "30m", "-o", plan, proj); code != ExitOK {
		t.Fatalf("plan init: exit %d: %s", code, errb)
	}
	code, out, errb := f.cut(t, "prepare", "--vocab", f.vocab, "--plan", plan, "--verifier", "inprocess", "--json", proj)
	if code != ExitOK {
		t.Fatalf("prepare: exit %d: %s", code, errb)
	}
	var b receipts.Bundle
	decodeStrict(t, out, &b)
	tok := regexp.MustCompile(`pcv:[a-z0-9]+:module:[a-z0-9]+`).Find(b.Export)
	if b.Lease == nil || tok == nil {
		t.Fatalf("no lease or no module token in the bundle:\n%s", out)
	}
	ret := f.write(t, "ret.json", `{"summary":"s","findings":[{"diagnostic":"GO-2022-1059","action":"upgrade","owner_module":"`+string(tok)+`"}]}`)
	stateOf := func() lease.State {
		info, err := f.c.Show(context.Background(), *b.Lease)
		if err != nil {
			t.Fatal(err)
		}
		return info.Lease.State
	}

	code, _, errb = f.cut(t, "rehydrate", "--lease", *b.Lease, "--schema", schema, "-o", filepath.Join(f.dir, "missing", "out.json"), ret)
	if code != ExitError || !strings.Contains(string(errb), "output file") {
		t.Fatalf("-o into a missing directory: exit %d: %s", code, errb)
	}
	if s := stateOf(); s != lease.Active {
		t.Fatalf("lease %s after a refused output path, want %s", s, lease.Active)
	}

	outPath := filepath.Join(f.dir, "out.json")
	if err := os.WriteFile(outPath, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(outPath, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errb = f.cut(t, "rehydrate", "--lease", *b.Lease, "--schema", schema, "-o", outPath, ret); code != ExitOK {
		t.Fatalf("rehydrate: exit %d: %s", code, errb)
	}
	if s := stateOf(); s != lease.Consumed {
		t.Fatalf("lease %s after rehydration, want %s", s, lease.Consumed)
	}
	fi, err := os.Stat(outPath)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("rehydrated answer written %v, want 0600", fi.Mode().Perm())
	}
	if ans, _ := os.ReadFile(outPath); !strings.Contains(string(ans), `"owner_module":"`+canary+`"`) {
		t.Fatalf("rehydrated answer %s", ans)
	}
}

// TestQuarantinePath: an answer is quarantined under an absolute
// XDG_STATE_HOME, else under ~/.local/state; a relative XDG_STATE_HOME is
// ignored (XDG base directories), so the answer never lands under the
// directory the command runs in.
func TestQuarantinePath(t *testing.T) {
	const event = "evt:abc"
	tests := []struct {
		name, flag string
		env        map[string]string
		want       string
		wantErr    bool
	}{
		{name: "flag", flag: "/q/a.json", env: map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, want: "/q/a.json"},
		{name: "xdg", env: map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, want: "/s/privacycut/quarantine/evt-abc.json"},
		{name: "home", env: map[string]string{"HOME": "/h"}, want: "/h/.local/state/privacycut/quarantine/evt-abc.json"},
		{name: "relative xdg ignored", env: map[string]string{"XDG_STATE_HOME": "s", "HOME": "/h"}, want: "/h/.local/state/privacycut/quarantine/evt-abc.json"},
		{name: "dot xdg ignored", env: map[string]string{"XDG_STATE_HOME": "./s", "HOME": "/h"}, want: "/h/.local/state/privacycut/quarantine/evt-abc.json"},
		{name: "relative xdg without home", env: map[string]string{"XDG_STATE_HOME": "s"}, wantErr: true},
		{name: "nothing", env: map[string]string{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &Cmd{Env: Env{Getenv: func(k string) string { return tt.env[k] }}}
			got, err := c.quarantinePath(tt.flag, event)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("quarantinePath = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// TestEvidenceKeyWipedOnRelease: the evidence key a command loads is wiped
// when Run releases the command's resources.
func TestEvidenceKeyWipedOnRelease(t *testing.T) {
	dir := t.TempDir()
	c := &Cmd{Env: Env{Getenv: func(string) string { return "" }}}
	k, err := c.evidenceKey(filepath.Join(dir, "evidence.key"))
	if err != nil {
		t.Fatal(err)
	}
	if err := k.Reveal(func([]byte) error { return nil }); err != nil {
		t.Fatalf("before release: %v", err)
	}
	c.release()
	if err := k.Reveal(func([]byte) error { return nil }); !errors.Is(err, receipts.ErrKeyWiped) {
		t.Fatalf("after release: %v, want ErrKeyWiped", err)
	}
}
