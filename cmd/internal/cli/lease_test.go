package cli

import (
	"bytes"
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// TestLeaseCommands: list, show and revoke against an in-process vault;
// a second revoke is a refusal (exit 3, refusal document, journaled); an
// unknown lease is an operational error (exit 1).
func TestLeaseCommands(t *testing.T) {
	f := newVaultFixture(t)
	a := f.grant(t)
	b := f.grant(t)
	code, out, errb := f.cut(t, "lease", "list", "--json")
	if code != ExitOK {
		t.Fatalf("list: exit %d: %s", code, errb)
	}
	var list leaseListOut
	decodeStrict(t, out, &list)
	if len(list.Leases) != 2 || list.Leases[0].Key != vaultapi.KeyPresent {
		t.Fatalf("list: %+v", list)
	}
	code, out, _ = f.cut(t, "lease", "list")
	if code != ExitOK || !bytes.Contains(out, []byte(a.Lease.ID)) || !bytes.Contains(out, []byte("ACTIVE")) {
		t.Errorf("human list (exit %d):\n%s", code, out)
	}
	code, out, _ = f.cut(t, "lease", "show", a.Lease.ID, "--json")
	var in vaultapi.Info
	decodeStrict(t, out, &in)
	if code != ExitOK || in.Lease.ID != a.Lease.ID || in.Lease.ExportDigest == "" {
		t.Errorf("show: exit %d %+v", code, in)
	}
	code, out, _ = f.cut(t, "lease", "revoke", a.Lease.ID, "--json")
	decodeStrict(t, out, &in)
	if code != ExitOK || in.Lease.State.String() != "REVOKED" || in.Key != vaultapi.KeyDestroyed {
		t.Errorf("revoke: exit %d %+v", code, in)
	}
	// Revoking again is a refusal: exit 3 and the refusal document.
	code, out, _ = f.cut(t, "lease", "revoke", a.Lease.ID, "--json")
	var ref receipts.RefusalDocument
	decodeStrict(t, out, &ref)
	if code != ExitRefused || !ref.Refused || len(ref.Reasons) != 1 || ref.Reasons[0] != (receipts.Refusal{Code: receipts.LeaseNotActive, Part: -1, Kind: "vault"}) || ref.EventID == "" {
		t.Errorf("second revoke: exit %d %+v", code, ref)
	}
	code, out, _ = f.cut(t, "lease", "revoke", a.Lease.ID)
	if code != ExitRefused || !bytes.HasPrefix(out, []byte("refused: LEASE_NOT_ACTIVE")) {
		t.Errorf("second revoke, human: exit %d %s", code, out)
	}
	// The refusal is journaled.
	j, _ := os.ReadFile(f.journal)
	if !bytes.Contains(j, []byte(ref.EventID)) {
		t.Errorf("refusal %s not in the journal", ref.EventID)
	}
	code, _, _ = f.cut(t, "lease", "show", "pcl:"+strings.Repeat("a", 26))
	if code != ExitError {
		t.Errorf("show of an unknown lease: exit %d", code)
	}
	code, out, _ = f.cut(t, "lease", "show", b.Lease.ID)
	if code != ExitOK || !bytes.Contains(out, []byte("data key:   present")) {
		t.Errorf("human show (exit %d):\n%s", code, out)
	}
}

// TestLeaseListOrder: lease list shows leases oldest first (the order
// they were granted, not their ids' order), human and --json, with their
// age and state.
func TestLeaseListOrder(t *testing.T) {
	f := newVaultFixture(t)
	var ids []string
	for i := 0; i < 6; i++ {
		ids = append(ids, f.grant(t).Lease.ID)
	}
	if _, err := f.c.Revoke(context.Background(), ids[2]); err != nil {
		t.Fatal(err)
	}
	code, out, errb := f.cut(t, "lease", "list", "--json")
	if code != ExitOK {
		t.Fatalf("list: exit %d: %s", code, errb)
	}
	var list leaseListOut
	decodeStrict(t, out, &list)
	var got []string
	for _, in := range list.Leases {
		got = append(got, in.Lease.ID)
	}
	if !slices.Equal(got, ids) {
		t.Errorf("--json order %v, want the grant order %v", got, ids)
	}
	code, out, _ = f.cut(t, "lease", "list")
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if code != ExitOK || len(lines) != 7 || !regexp.MustCompile(`^LEASE +AGE +STATE +KEY +DEADLINE +RUN/ATTEMPT$`).MatchString(lines[0]) {
		t.Fatalf("human list (exit %d):\n%s", code, out)
	}
	row := regexp.MustCompile(`^(pcl:[a-z2-7]{26}) +(\d+s) +(ACTIVE|REVOKED) +(present|destroyed) +\S+ +run-1/1$`)
	for i, line := range lines[1:] {
		m := row.FindStringSubmatch(line)
		if m == nil || m[1] != ids[i] {
			t.Fatalf("row %d %q, want lease %s with its age and state", i, line, ids[i])
		}
		if want := map[bool]string{true: "REVOKED", false: "ACTIVE"}[i == 2]; m[3] != want {
			t.Errorf("row %d state %s, want %s", i, m[3], want)
		}
	}
}

func TestLeaseAge(t *testing.T) {
	for d, want := range map[time.Duration]string{-time.Second: "0s", 0: "0s", 59 * time.Second: "59s", 61 * time.Second: "1m",
		59*time.Minute + 59*time.Second: "59m", 3*time.Hour + 5*time.Minute: "3h05m", 52 * time.Hour: "2d04h"} {
		if got := age(d); got != want {
			t.Errorf("age(%v) = %q, want %q", d, got, want)
		}
	}
}
