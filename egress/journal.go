package egress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/privacycut/privacycut/internal/durable"
	"github.com/privacycut/privacycut/receipts"
)

// Entry is one line of the evidence journal. It holds identifiers, codes,
// positions and digests only: never raw values, keys, subjects or file names.
type Entry struct {
	EventID string             `json:"event_id"`
	Time    time.Time          `json:"time"`
	Kind    string             `json:"kind"` // "refusal", "seal", "admit", "delivery"
	Command string             `json:"command,omitempty"`
	Seal    string             `json:"seal,omitempty"` // the seal's event id
	Codes   []receipts.Code    `json:"codes,omitempty"`
	Reason  string             `json:"reason,omitempty"` // a fixed word (see the Reason constants)
	Reasons []receipts.Refusal `json:"reasons,omitempty"`
	Digest  string             `json:"digest,omitempty"` // export digest (public)
	Wire    string             `json:"wire,omitempty"`   // wire body digest, when it is not the export's
	Plan    string             `json:"plan,omitempty"`   // plan digest: admissions are counted under it
	Use     int                `json:"use,omitempty"`    // admission number within max_uses

	// Delivery lines: the admission a try was made under, its HTTP status
	// (0: no response) and its outcome as a fixed word.
	Decision string `json:"decision,omitempty"`
	Status   int    `json:"status,omitempty"`
}

// Journal appends entries to a local JSON-lines file (0600). It is safe for
// concurrent use within a process; each entry is one write(2) of one line on an
// O_APPEND descriptor, made under an exclusive flock(2) of the file, so lines
// from concurrent processes do not interleave.
//
// A failed Append leaves no part of its line behind: when the write or its
// fsync fails (disk full, RLIMIT_FSIZE), the file is truncated back to its size
// before the write, under the same lock. Should the file still end in a torn
// line (a crash, or a truncation that failed too), the next entry starts on a
// new line, so a torn line never swallows a whole one.
// A nil *Journal records nothing.
type Journal struct {
	mu   sync.Mutex
	path string
}

// OpenJournal returns a journal writing to path. The file (0600) and its
// missing directories (0700) are created on first append, each synced into
// its parent directory; an existing directory or file keeps its mode.
func OpenJournal(path string) *Journal { return &Journal{path: path} }

// Path returns the journal's file path.
func (j *Journal) Path() string { return j.path }

// DefaultJournalPath is $PRIVACYCUT_JOURNAL, else
// $XDG_STATE_HOME/privacycut/journal.jsonl if XDG_STATE_HOME is an absolute
// path, else ~/.local/state/privacycut/journal.jsonl. A relative
// XDG_STATE_HOME is ignored, as the XDG base directory specification says: it
// would put the journal under whatever directory the command runs in.
func DefaultJournalPath(getenv func(string) string) (string, error) {
	if p := getenv("PRIVACYCUT_JOURNAL"); p != "" {
		return p, nil
	}
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "privacycut", "journal.jsonl"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("egress: journal: no PRIVACYCUT_JOURNAL, absolute XDG_STATE_HOME or HOME")
	}
	return filepath.Join(home, ".local", "state", "privacycut", "journal.jsonl"), nil
}

// Append writes e as one line and syncs it. A zero Time is set to now.
func (j *Journal) Append(e Entry) error {
	if j == nil {
		return nil
	}
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("egress: journal: %w", err)
	}
	line = append(line, '\n')
	j.mu.Lock()
	defer j.mu.Unlock()
	if err := appendLine(j.path, line); err != nil {
		return fmt.Errorf("egress: journal: %w", err)
	}
	return nil
}

// appendLine appends line to the file at path and syncs it. On failure the
// file holds what it held before (see Journal).
func appendLine(path string, line []byte) error {
	f, err := openJournalFile(path)
	if err != nil {
		return err
	}
	locked, err := lockFile(f)
	if err == nil {
		err = appendLocked(f, locked, line)
	}
	if cerr := f.Close(); err == nil { // Close releases the lock
		err = cerr
	}
	return err
}

// maxJournalLine is the longest journal line read when counting. Entries
// are far shorter; a longer line is not one this package wrote, and makes
// the count fail (no admission) rather than be guessed at.
const maxJournalLine = 64 << 10

// errNotCounted: the journal could not be read to count admissions.
var errNotCounted = errors.New("egress: journal: admissions not counted")

// appendAdmission appends admit, its Use set to one more than the number of
// admissions of admit.Plan the journal holds, when that number is below
// max; otherwise it appends refuse. Counting and appending happen under one
// exclusive flock(2) of the file and this Journal's mutex, so admissions of
// one plan from any number of processes never exceed max together. It
// reports the use number and whether admit was written. An error wrapping
// errNotCounted means neither line was written.
//
// Every line holding the plan digest counts as an admission when it is an
// admit line, or when it cannot be read as a line of this journal at all
// (torn, not JSON): a count that errs, errs high. A line over 64 KiB fails
// the count.
func (j *Journal) appendAdmission(admit, refuse Entry, max int) (int, bool, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	f, err := openJournalFile(j.path)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %w", errNotCounted, err)
	}
	defer f.Close() // releases the lock
	locked, err := lockFile(f)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %w", errNotCounted, err)
	}
	if !locked {
		// Without a lock another process may append between the count and
		// the append: the ceiling would not hold.
		return 0, false, fmt.Errorf("%w: the file system has no flock", errNotCounted)
	}
	n, err := countAdmissions(f, admit.Plan)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %w", errNotCounted, err)
	}
	if n >= max {
		rline, err := json.Marshal(refuse)
		if err == nil {
			err = appendLocked(f, locked, append(rline, '\n'))
		}
		return 0, false, err
	}
	admit.Use = n + 1
	aline, err := json.Marshal(admit)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %w", errNotCounted, err)
	}
	if err := appendLocked(f, locked, append(aline, '\n')); err != nil {
		return 0, true, err
	}
	return admit.Use, true, nil
}

// countAdmissions reads f from its start and counts the admissions of plan
// (see appendAdmission). It reads the whole journal: the cost of an
// admission grows with the journal, about 1 ms per 10,000 lines.
func countAdmissions(f *os.File, plan string) (int, error) {
	if plan == "" {
		return 0, errors.New("no plan digest")
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	needle := []byte(`"` + plan)
	r := bufio.NewReaderSize(io.NewSectionReader(f, 0, fi.Size()), maxJournalLine)
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			return 0, errors.New("a line longer than 64 KiB")
		}
		if len(line) > 0 && bytes.Contains(line, needle) && countsAsAdmission(line) {
			n++
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

// countsAsAdmission reports whether a journal line naming the plan is an
// admission: an admit line, or a line that does not read as an entry.
func countsAsAdmission(line []byte) bool {
	var e struct {
		Kind string `json:"kind"`
	}
	if json.Unmarshal(line, &e) != nil {
		return true
	}
	return e.Kind == "admit"
}

// openJournalFile opens the journal for appending. A journal it creates, and
// each directory it creates on the way (0700), is synced into its parent
// directory before the first entry is written, so a synced entry is not lost
// with its directory entry.
func openJournalFile(path string) (*os.File, error) {
	const flags = os.O_RDWR | os.O_APPEND
	f, err := os.OpenFile(path, flags, 0)
	if !errors.Is(err, fs.ErrNotExist) {
		return f, err
	}
	dir := filepath.Dir(path)
	if err := durable.MkdirAll(dir); err != nil {
		return nil, err
	}
	f, err = os.OpenFile(path, flags|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) { // created by another process, maybe not synced yet
		f, err = os.OpenFile(path, flags, 0)
	}
	if err != nil {
		return nil, err
	}
	if err := durable.SyncDir(dir); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// appendLocked writes line at the end of f, whose lock the caller took
// (locked says whether it holds it), and syncs it. Under the lock no
// cooperating writer appends, so the size before the write is where line
// starts, and truncating back to it removes exactly this line's bytes.
func appendLocked(f *os.File, locked bool, line []byte) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	size := fi.Size()
	if size > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], size-1); err != nil {
			return err
		}
		if last[0] != '\n' {
			// A torn line: keep its bytes, but end it before ours.
			line = append([]byte{'\n'}, line...)
		}
	}
	_, err = f.Write(line)
	if err == nil {
		err = f.Sync()
	}
	if err != nil && locked {
		// Best effort: if this fails too, the next append starts a new line.
		if f.Truncate(size) == nil {
			f.Sync()
		}
	}
	return err
}
