package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFlagValues: a zero or negative --max-lease, --arena-size or
// --stop-timeout, and a negative --min-free, are usage errors (exit 2)
// before anything is created: none falls back to its default, so
// --max-lease 0s cannot give the longest lease.
func TestFlagValues(t *testing.T) {
	for _, flags := range [][]string{
		{"--max-lease", "0s"}, {"--max-lease", "-1h"}, {"--arena-size", "0"}, {"--arena-size", "-5"},
		{"--stop-timeout", "0s"}, {"--stop-timeout", "-2s"}, {"--min-free", "-1"},
	} {
		t.Run(strings.Join(flags, " "), func(t *testing.T) {
			d := t.TempDir()
			args := append([]string{"--state-dir", filepath.Join(d, "state"), "--key-dir", filepath.Join(d, "keys"),
				"--socket", filepath.Join(d, "run", "v.sock")}, flags...)
			var errb bytes.Buffer
			want := flags[0] + " must be positive"
			if flags[0] == "--min-free" {
				want = "--min-free must be 0 (disabled) or positive"
			}
			if code := run(args, &errb, nil); code != 2 || !strings.Contains(errb.String(), want) {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if entries, _ := os.ReadDir(d); len(entries) != 0 {
				t.Fatalf("created %v before refusing", entries)
			}
		})
	}
}
