package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVersionRevision: a cut built from a git checkout prints, for
// --version, the commit it was built from (and +modified for a work tree
// with changes), read from the build information the toolchain stamps.
// The toolchain stamps only a checkout whose .git is a directory (not a
// linked worktree), so the test skips elsewhere, naming that.
func TestVersionRevision(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds cut")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(root, ".git")); err != nil || !fi.IsDir() {
		t.Skip("not a git checkout with a .git directory (a linked worktree or an archive): go build stamps no revision")
	}
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git not installed")
	}
	head, err := exec.Command(git, "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("git rev-parse HEAD: %v", err)
	}
	status, err := exec.Command(git, "-C", root, "status", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "privacycut")
	build := exec.Command("go", "build", "-buildvcs=true", "-o", bin, "./cmd/cut")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("--version: %v", err)
	}
	// The module version is the toolchain's: (devel), or a pseudo-version
	// made from the commit.
	rev := strings.TrimSpace(string(head))
	if len(status) > 0 {
		rev += "+modified"
	}
	re := regexp.MustCompile(`^privacycut \(privacycut\) (\(devel\)|v\S+) ` + regexp.QuoteMeta(rev) + ` \d{4}-\d\d-\d\dT\S+Z go1\.\d+\S*\n$`)
	if !re.Match(out) {
		t.Fatalf("--version: %q, want privacycut (privacycut) VERSION %s TIME GOVERSION", out, rev)
	}
}
