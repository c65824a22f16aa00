package egress

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func admitLine(t *testing.T, j *Journal, plan string, max int) (int, bool) {
	t.Helper()
	use, ok, err := j.appendAdmission(Entry{Kind: "admit", Plan: plan}, Entry{Kind: "refusal", Plan: plan, Reason: "uses-exhausted"}, max)
	if err != nil {
		t.Fatal(err)
	}
	return use, ok
}

// TestAdmissionIndex: the counts of two journals on one file (two
// processes) agree with each other's appends; each admission reads only
// what was appended since the last; a torn last line naming the plan counts
// once, before and after the next line ends it; a line that is not an
// entry counts for every plan it names; a rotated or truncated file is
// counted anew.
func TestAdmissionIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	a, b := OpenJournal(path), OpenJournal(path)
	const p, q = "sha256:" + "aa", "sha256:" + "bb"

	for i := range 3 {
		if use, ok := admitLine(t, a, p, 5); !ok || use != 2*i+1 {
			t.Fatalf("a: use %d %v, want %d", use, ok, 2*i+1)
		}
		use, ok := admitLine(t, b, p, 5)
		if want := 2*i + 2; want <= 5 && (!ok || use != want) || want > 5 && ok {
			t.Fatalf("b: use %d %v at round %d (max 5)", use, ok, i)
		}
	}
	if use, ok := admitLine(t, a, q, 1); !ok || use != 1 {
		t.Fatalf("another plan: use %d %v, want 1", use, ok)
	}

	// Many lines later, an admission reads only the new ones.
	for range 2000 {
		if err := b.Append(Entry{Kind: "seal", Plan: q}); err != nil {
			t.Fatal(err)
		}
	}
	admitLine(t, a, q, 1)
	before := a.idx.read
	admitLine(t, a, q, 1)
	if n := a.idx.read - before; n > 1024 {
		t.Errorf("an admission after one new line read %d bytes", n)
	}

	// A torn line naming p: an admission at once, and still one once the
	// next entry has ended it.
	r := OpenJournal(path)
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString(`{"kind":"admit","plan":"` + "sha256:cc" + `","use`)
	f.Close()
	const c = "sha256:cc"
	n, err := r.idx.countAdmissions(mustOpen(t, path), c)
	if err != nil || n != 1 {
		t.Fatalf("torn line: %d admissions, %v; want 1", n, err)
	}
	if use, ok := admitLine(t, r, c, 5); !ok || use != 2 {
		t.Fatalf("after the torn line: use %d %v, want 2", use, ok)
	}
	if use, ok := admitLine(t, r, c, 5); !ok || use != 3 {
		t.Fatalf("the torn line counted twice or not at all: use %d, want 3", use)
	}

	// Rotated: a new file under the same path is counted from its start.
	os.Rename(path, path+".1")
	if use, ok := admitLine(t, a, p, 5); !ok || use != 1 {
		t.Fatalf("after rotation: use %d %v, want 1", use, ok)
	}
	// Truncated: counted anew.
	os.WriteFile(path, []byte(strings.Repeat(`{"kind":"admit","plan":"`+p+"\"}\n", 4)), 0o600)
	if use, ok := admitLine(t, a, p, 5); !ok || use != 5 {
		t.Fatalf("after truncation to 4 admissions: use %d %v, want 5", use, ok)
	}
}

func mustOpen(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
