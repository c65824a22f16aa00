package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// TestFlagValues: a zero or negative --max-lease, --arena-size or
// per-uid limit, a non-positive --stop-timeout, and a negative --min-free
// are usage errors (exit 2) before anything is created: none falls back to
// its default, so --max-lease 0s cannot give the longest lease.
func TestFlagValues(t *testing.T) {
	for _, flags := range [][]string{
		{"--max-lease", "0s"}, {"--max-lease", "-1h"}, {"--arena-size", "0"}, {"--arena-size", "-5"},
		{"--max-leases-per-uid", "0"}, {"--max-erasure-proofs-per-uid", "-1"},
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
			if code := run(args, io.Discard, &errb, nil); code != 2 || !strings.Contains(errb.String(), want) {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			if entries, _ := os.ReadDir(d); len(entries) != 0 {
				t.Fatalf("created %v before refusing", entries)
			}
		})
	}
}

// TestLeaseLimitFlag: vaultd --max-leases-per-uid 1 grants one live lease
// to a uid and refuses the next with LIMIT_EXCEEDED across the socket,
// until the first is revoked.
func TestLeaseLimitFlag(t *testing.T) {
	d := newDaemon(t, false)
	d.Args = []string{"--max-leases-per-uid", "1"}
	d.Start()
	c := d.client()
	ps, vals := canaryPairs("lim", 1)
	res := grant(t, c, ps, false)
	sealed, err := c.Seal(bg, ps)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.CreateLease(bg, createReq(sealed, time.Hour))
	if vaultapi.CodeOf(err) != receipts.LimitExceeded || strings.Contains(err.Error(), string(vals[0])) {
		t.Fatalf("second grant: %v, want LIMIT_EXCEEDED", err)
	}
	if _, err := c.Revoke(bg, res.Lease.ID); err != nil {
		t.Fatal(err)
	}
	grant(t, c, ps, false)
}

// TestHelpVersion: -h, -help and --help print the usage line, the summary
// and every flag with its default on stdout and exit 0; --version prints
// the build's version; an unknown flag or a missing one is exit 2 on
// stderr with nothing on stdout.
func TestHelpVersion(t *testing.T) {
	for _, arg := range []string{"-h", "-help", "--help"} {
		var out, errb bytes.Buffer
		if code := run([]string{arg}, &out, &errb, nil); code != 0 || errb.Len() != 0 {
			t.Fatalf("%s: exit %d: %s", arg, code, errb.String())
		}
		for _, want := range []string{"usage: vaultd --state-dir D --key-dir K --socket S", "privacycut's local vault",
			"\n  --socket path\n", "\n  --stop-timeout duration\n", "(default 20s)", `(default "local")`, "\n  --version\n"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("%s: no %q in\n%s", arg, want, out.String())
			}
		}
		if strings.Contains(out.String(), "Usage of") {
			t.Errorf("%s: Go's default usage", arg)
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"--version"}, &out, &errb, nil); code != 0 || !strings.HasPrefix(out.String(), "vaultd (privacycut) ") {
		t.Fatalf("--version: exit %d: %q %q", code, out.String(), errb.String())
	}
	for _, args := range [][]string{{"--frob"}, {}, {"--state-dir", "x"}} {
		out.Reset()
		errb.Reset()
		if code := run(args, &out, &errb, nil); code != 2 || out.Len() != 0 || !strings.Contains(errb.String(), "usage: vaultd ") ||
			!strings.Contains(errb.String(), "(vaultd --help for its flags)") {
			t.Errorf("%v: exit %d: %q %q", args, code, out.String(), errb.String())
		}
	}
}
