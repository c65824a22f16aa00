package main

import (
	"bytes"
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
			if code := run(args, &errb, nil); code != 2 || !strings.Contains(errb.String(), want) {
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
