package egress_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/egress"
)

// A seal's journal line is written at once but synced by the admission
// after it (one fsync for both, in file order) or by Sync; a refused seal,
// an admission and a delivery are each synced before their call returns.
func TestSealLineSyncedByAdmission(t *testing.T) {
	clk := &clock{t0}
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := egress.OpenJournal(path)
	a := egress.NewAuthority(egress.Options{Journal: j, Now: clk.now, PolicyRevision: policy})
	f := newFixture()
	syncs := func(wantN int, wantPending bool, when string) {
		t.Helper()
		if n, pending := j.Syncs(); n != wantN || pending != wantPending {
			t.Fatalf("%s: %d syncs, pending %v; want %d, %v", when, n, pending, wantN, wantPending)
		}
	}

	cut := mustSeal(t, a, f.build(t))
	syncs(0, true, "after a seal")
	if es := readJournal(t, path); len(es) != 1 || es[0].Kind != "seal" || es[0].EventID != cut.EventID {
		t.Fatalf("journal after a seal: %+v", es)
	}
	if _, err := a.Admit(cut.EventID, []byte(exportBytes), f.Target, f.Consumer); err != nil {
		t.Fatal(err)
	}
	syncs(1, false, "after the admission")
	kinds := func() []string {
		var ks []string
		for _, e := range readJournal(t, path) {
			ks = append(ks, e.Kind)
		}
		return ks
	}
	if diff := cmp.Diff([]string{"seal", "admit"}, kinds()); diff != "" {
		t.Fatalf("journal lines (-want +got):\n%s", diff)
	}

	// Nothing pending: Sync does not sync.
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	syncs(1, false, "Sync with nothing pending")

	// A second seal, then Sync.
	f2 := newFixture()
	f2.MaxUses = 3 // another plan: another seal
	mustSeal(t, a, f2.build(t))
	syncs(1, true, "after the second seal")
	if err := a.Sync(); err != nil {
		t.Fatal(err)
	}
	syncs(2, false, "after Sync")

	// A refused seal (the same cut again) is synced at once.
	if _, err := a.SealUnverified(f2.build(t)); err == nil {
		t.Fatal("a second seal of one cut succeeded")
	}
	syncs(3, false, "after a refused seal")
	if diff := cmp.Diff([]string{"seal", "admit", "seal", "refusal"}, kinds()); diff != "" {
		t.Fatalf("journal lines (-want +got):\n%s", diff)
	}
}

// Sync reports a journal whose file is gone, with the package's prefix,
// and keeps the line pending.
func TestJournalSyncError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := egress.OpenJournal(path)
	a := egress.NewAuthority(egress.Options{Journal: j, Now: (&clock{t0}).now, PolicyRevision: policy})
	mustSeal(t, a, newFixture().build(t))
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	err := a.Sync()
	if err == nil {
		t.Fatal("Sync of a removed journal succeeded")
	}
	if _, pending := j.Syncs(); !pending {
		t.Error("a failed Sync cleared the pending line")
	}
	if got := err.Error(); !strings.HasPrefix(got, "egress: journal: ") {
		t.Errorf("error %q lacks the package prefix", got)
	}
	var nilJournal *egress.Journal
	if err := nilJournal.Sync(); err != nil {
		t.Errorf("nil journal Sync: %v", err)
	}
}
