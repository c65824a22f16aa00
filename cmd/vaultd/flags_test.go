package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagValues: a zero or negative --max-lease or --arena-size is a usage
// error (exit 2) before anything is created; before, either fell back to
// its default, so --max-lease 0s gave the longest lease.
func TestFlagValues(t *testing.T) {
	for _, flags := range [][]string{
		{"--max-lease", "0s"}, {"--max-lease", "-1h"}, {"--arena-size", "0"}, {"--arena-size", "-5"},
	} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			d := t.TempDir()
			args := append([]string{"--state-dir", filepath.Join(d, "state"), "--key-dir", filepath.Join(d, "keys"),
				"--socket", filepath.Join(d, "run", "v.sock")}, flags...)
			var errb bytes.Buffer
			if code := run(args, &errb); code != 2 || !strings.Contains(errb.String(), flags[0]+" must be positive") {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if entries, _ := os.ReadDir(d); len(entries) != 0 {
				t.Fatalf("created %v before refusing", entries)
			}
		})
	}
}
