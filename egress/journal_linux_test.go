package egress_test

import (
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
)

// withFileSizeLimit runs fn with RLIMIT_FSIZE lowered to limit bytes and
// SIGXFSZ ignored, so a write past the limit is short and then EFBIG, as on
// a full disk.
func withFileSizeLimit(t *testing.T, limit int64, fn func()) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	signal.Ignore(syscall.SIGXFSZ)
	defer signal.Reset(syscall.SIGXFSZ)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: uint64(limit), Max: old.Max}); err != nil {
		t.Skipf("cannot lower RLIMIT_FSIZE: %v", err)
	}
	defer func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatalf("restore RLIMIT_FSIZE: %v", err)
		}
	}()
	fn()
}

// An append whose write is cut short (disk full, RLIMIT_FSIZE) fails and
// leaves no part of its line: the next entry is a whole line after the last
// whole line, not glued onto a fragment.
func TestJournalFailedAppendLeavesNoPart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := egress.OpenJournal(path)
	first := egress.Entry{EventID: "evt:1", Time: t0, Kind: "seal", Command: "seal", Seal: "evt:1"}
	if err := j.Append(first); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	withFileSizeLimit(t, fi.Size()+40, func() {
		err = j.Append(egress.Entry{EventID: "evt:2", Time: t0, Kind: "admit", Command: "admit", Seal: "evt:1",
			Digest: "sha256:" + strings.Repeat("0", 64), Use: 1})
	})
	if err == nil {
		t.Fatal("Append past RLIMIT_FSIZE succeeded")
	}
	if after, err := os.Stat(path); err != nil || after.Size() != fi.Size() {
		t.Fatalf("failed Append left the journal at %v bytes (%v), want %d", after.Size(), err, fi.Size())
	}
	third := egress.Entry{EventID: "evt:3", Time: t0, Kind: "refusal", Command: "admit", Codes: []receipts.Code{receipts.PlanMismatch}, Reason: "body"}
	if err := j.Append(third); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]egress.Entry{first, third}, readJournal(t, path)); diff != "" {
		t.Errorf("journal after a failed append (-want +got):\n%s", diff)
	}
}

// A seal whose journal line is cut short fails, seals nothing and leaves no
// part of its line, though the line is not synced on success.
func TestSealLineCutShortLeavesNoPart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := egress.OpenJournal(path)
	if err := j.Append(egress.Entry{EventID: "evt:1", Time: t0, Kind: "refusal", Command: "seal", Reason: "body"}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	a := egress.NewAuthority(egress.Options{Journal: j, Now: (&clock{t0}).now, PolicyRevision: policy})
	f := newFixture()
	withFileSizeLimit(t, fi.Size()+40, func() { _, err = a.SealUnverified(f.build(t)) })
	if err == nil || !strings.Contains(err.Error(), "seal not recorded") {
		t.Fatalf("seal past RLIMIT_FSIZE: %v, want a seal not recorded", err)
	}
	if after, err := os.Stat(path); err != nil || after.Size() != fi.Size() {
		t.Fatalf("failed seal left the journal at %v bytes (%v), want %d", after.Size(), err, fi.Size())
	}
	if _, pending := j.Syncs(); pending {
		t.Error("a failed seal left a line pending")
	}
	// Nothing was sealed: the same cut seals now.
	mustSeal(t, a, f.build(t))
}
