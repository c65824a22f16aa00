package egress_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
)

func TestJournalLinesAndModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "privacycut")
	path := filepath.Join(dir, "journal.jsonl")
	j := egress.OpenJournal(path)
	if j.Path() != path {
		t.Fatalf("Path() = %q", j.Path())
	}
	entries := []egress.Entry{
		{EventID: "evt:1", Time: t0, Kind: "seal", Command: "seal", Seal: "evt:1", Digest: "sha256:" + strings.Repeat("0", 64)},
		{EventID: "evt:2", Time: t0, Kind: "refusal", Command: "prepare", Codes: []receipts.Code{receipts.UncoveredText, receipts.AmbiguousSpan},
			Reasons: []receipts.Refusal{{Code: receipts.UncoveredText, Part: 0, Kind: "block", Line: 3, Column: 7, Length: 2}}},
		{EventID: "evt:3", Time: t0, Kind: "admit", Command: "admit", Seal: "evt:1", Use: 1, Reason: "x\"\n\u2028"},
	}
	for _, e := range entries {
		if err := j.Append(e); err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	if diff := cmp.Diff(entries, readJournal(t, path)); diff != "" {
		t.Errorf("journal round trip (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		path string
		mode os.FileMode
	}{{dir, 0o700 | os.ModeDir}, {filepath.Dir(dir), 0o700 | os.ModeDir}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != c.mode {
			t.Errorf("%s: mode %v, want %v", filepath.Base(c.path), fi.Mode(), c.mode)
		}
	}
}

func TestJournalZeroTimeIsSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "j.jsonl")
	before := time.Now()
	if err := egress.OpenJournal(path).Append(egress.Entry{EventID: "evt:1", Kind: "seal"}); err != nil {
		t.Fatal(err)
	}
	got := readJournal(t, path)[0].Time
	if got.Before(before.Add(-time.Second)) || got.After(time.Now().Add(time.Second)) || got.Location() != time.UTC {
		t.Errorf("time %v is not now in UTC", got)
	}
}

// Concurrent appends through one Journal and through several Journals on
// the same file (as separate processes would) yield only whole lines.
func TestJournalConcurrentAppends(t *testing.T) {
	const writers, perWriter = 8, 40
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	shared := egress.OpenJournal(path)
	pad := strings.Repeat("p", 3000) // long lines, each still one write
	start := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 2*writers*perWriter)
	for w := range writers {
		own := egress.OpenJournal(path)
		for _, j := range []*egress.Journal{shared, own} {
			wg.Go(func() {
				<-start
				for i := range perWriter {
					id := fmt.Sprintf("evt:%p-%d-%d", j, w, i)
					errs <- j.Append(egress.Entry{EventID: id, Time: t0, Kind: "refusal", Reason: pad})
				}
			})
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
	lines := readJournal(t, path)
	seen := map[string]bool{}
	for _, e := range lines {
		if e.Reason != pad || seen[e.EventID] {
			t.Fatalf("torn or duplicated line %q", e.EventID)
		}
		seen[e.EventID] = true
	}
	if len(lines) != 2*writers*perWriter {
		t.Errorf("%d lines, want %d", len(lines), 2*writers*perWriter)
	}
}

// A journal that ends in a torn line (a crash mid-write) gets its next entry
// on a line of its own: the fragment stays as it is, and no whole entry is
// glued onto it.
func TestJournalAppendAfterTornLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	torn := `{"event_id":"evt:1","kind":"se`
	if err := os.WriteFile(path, []byte(torn), 0o600); err != nil {
		t.Fatal(err)
	}
	e := egress.Entry{EventID: "evt:2", Time: t0, Kind: "refusal", Command: "admit", Reason: "body"}
	if err := egress.OpenJournal(path).Append(e); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fragment, rest, ok := strings.Cut(string(data), "\n")
	if !ok || fragment != torn {
		t.Fatalf("torn line not kept on its own line: %q", data)
	}
	rewritten := filepath.Join(t.TempDir(), "rest.jsonl")
	if err := os.WriteFile(rewritten, []byte(rest), 0o600); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]egress.Entry{e}, readJournal(t, rewritten)); diff != "" {
		t.Errorf("entry after a torn line (-want +got):\n%s", diff)
	}
}

func TestJournalNilRecordsNothing(t *testing.T) {
	var j *egress.Journal
	if err := j.Append(egress.Entry{EventID: "evt:1"}); err != nil {
		t.Errorf("nil journal: %v", err)
	}
}

func TestJournalErrorIsPrefixed(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	err := egress.OpenJournal(filepath.Join(file, "j.jsonl")).Append(egress.Entry{EventID: "evt:1"})
	if err == nil || !strings.HasPrefix(err.Error(), "egress: journal: ") {
		t.Errorf("error %v, want an egress: journal: error", err)
	}
}

func TestDefaultJournalPath(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{name: "explicit", env: map[string]string{"PRIVACYCUT_JOURNAL": "/j/x.jsonl", "XDG_STATE_HOME": "/s", "HOME": "/h"}, want: "/j/x.jsonl"},
		{name: "xdg", env: map[string]string{"XDG_STATE_HOME": "/s", "HOME": "/h"}, want: "/s/privacycut/journal.jsonl"},
		{name: "home", env: map[string]string{"HOME": "/h"}, want: "/h/.local/state/privacycut/journal.jsonl"},
		{name: "relative xdg ignored", env: map[string]string{"XDG_STATE_HOME": "s", "HOME": "/h"}, want: "/h/.local/state/privacycut/journal.jsonl"},
		{name: "dot xdg ignored", env: map[string]string{"XDG_STATE_HOME": "./s", "HOME": "/h"}, want: "/h/.local/state/privacycut/journal.jsonl"},
		{name: "relative xdg without home", env: map[string]string{"XDG_STATE_HOME": "s"}, wantErr: true},
		{name: "nothing", env: map[string]string{}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := egress.DefaultJournalPath(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("DefaultJournalPath = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}
