package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallName: make install puts the command on PATH as privacycut,
// never as cut (which would shadow coreutils cut(1) or be shadowed by it),
// with its manual page and completion under the same name. The install
// runs into a temporary PREFIX.
func TestInstallName(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds cut and vaultd")
	}
	mk, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not installed")
	}
	prefix := t.TempDir()
	cmd := exec.Command(mk, "-s", "install", "PREFIX="+prefix)
	cmd.Dir = "../.."
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make install: %v\n%s", err, out)
	}
	for _, f := range []string{"bin/privacycut", "bin/vaultd", "share/man/man1/privacycut.1", "share/man/man8/vaultd.8",
		"share/bash-completion/completions/privacycut"} {
		if _, err := exec.Command("test", "-f", filepath.Join(prefix, f)).Output(); err != nil {
			t.Errorf("%s not installed", f)
		}
	}
	for _, f := range []string{"bin/cut", "share/man/man1/cut.1"} {
		if err := exec.Command("test", "-e", filepath.Join(prefix, f)).Run(); err == nil {
			t.Errorf("%s installed: it shadows coreutils cut", f)
		}
	}
	out, err := exec.Command(filepath.Join(prefix, "bin/privacycut"), "frobnicate").CombinedOutput()
	if !strings.Contains(string(out), `privacycut: error: unknown command "frobnicate"`) || err == nil {
		t.Errorf("installed binary: %v %s", err, out)
	}
	comp, err := exec.Command(filepath.Join(prefix, "bin/privacycut"), "completion", "bash").Output()
	if err != nil || !strings.Contains(string(comp), "complete -o default -F _privacycut privacycut") {
		t.Errorf("completion: %v %s", err, comp)
	}
}
