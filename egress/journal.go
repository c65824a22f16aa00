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
//
// Every line is synced before the call that wrote it returns, except a
// seal's (see Authority.Seal): no byte leaves on a seal alone, and the
// admission that lets bytes leave is synced after it in the same file. An
// fsync makes every earlier write of the file durable, so a seal line is
// durable before any admission of it is. Sync makes a pending seal line
// durable without one (pipeline.Pipeline.Close calls it).
type Journal struct {
	mu      sync.Mutex
	path    string
	idx     admissionIndex // guarded by mu
	pending bool           // a line was written and not synced; guarded by mu
	syncs   int            // fsyncs of the file, for the tests; guarded by mu
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
func (j *Journal) Append(e Entry) error { return j.append(e, true) }

// append writes e as one line, and syncs it when sync is set; otherwise
// the line is pending until the next synced line or Sync.
func (j *Journal) append(e Entry, sync bool) error {
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
	if err := j.appendLine(line, sync); err != nil {
		return fmt.Errorf("egress: journal: %w", err)
	}
	return nil
}

// appendLine appends line to the journal file, synced or pending. On
// failure the file holds what it held before (see Journal). The caller
// holds j.mu.
func (j *Journal) appendLine(line []byte, sync bool) error {
	f, err := openJournalFile(j.path)
	if err != nil {
		return err
	}
	locked, err := lockFile(f)
	if err == nil {
		err = j.appendLocked(f, locked, line, sync)
	}
	if cerr := f.Close(); err == nil { // Close releases the lock
		err = cerr
	}
	return err
}

// Sync makes the lines written without a sync durable; it does nothing
// when there are none.
func (j *Journal) Sync() error {
	if j == nil {
		return nil
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if !j.pending {
		return nil
	}
	f, err := os.OpenFile(j.path, os.O_RDONLY, 0)
	if err == nil {
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		return fmt.Errorf("egress: journal: %w", err)
	}
	j.pending = false
	j.syncs++
	return nil
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
	n, err := j.idx.countAdmissions(f, admit.Plan)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %w", errNotCounted, err)
	}
	if n >= max {
		rline, err := json.Marshal(refuse)
		if err == nil {
			err = j.appendLocked(f, locked, append(rline, '\n'), true)
		}
		return 0, false, err
	}
	admit.Use = n + 1
	aline, err := json.Marshal(admit)
	if err != nil {
		return 0, false, fmt.Errorf("%w: %w", errNotCounted, err)
	}
	if err := j.appendLocked(f, locked, append(aline, '\n'), true); err != nil {
		return 0, true, err
	}
	return admit.Use, true, nil
}

// admissionIndex counts the admissions of every plan in the complete lines
// of the journal file before off, so that an admission reads only what was
// appended since the last one, by this process or any other: a long-lived
// process (the gateway) admits in a time that does not grow with the
// journal. It is rebuilt from the start when the file is another (rotated
// by a rename) or shorter than off (truncated). Lines that do not read as
// entries are kept whole, since they count for every plan they name. It
// holds one count per plan admitted, about a tenth of the journal's size.
type admissionIndex struct {
	file   os.FileInfo // the file the counts were read from
	off    int64
	counts map[string]int // admit lines by plan
	odd    [][]byte       // lines that are not entries (torn, not JSON)
	read   int64          // bytes read, for the tests
}

// countAdmissions counts the admissions of plan in f, whose lock the
// caller holds: every line naming the plan that is an admit line, or that
// cannot be read as a line of this journal at all (torn, not JSON), so
// that a count that errs, errs high. A line over 64 KiB fails the count.
func (x *admissionIndex) countAdmissions(f *os.File, plan string) (int, error) {
	if plan == "" {
		return 0, errors.New("no plan digest")
	}
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	if x.file == nil || !os.SameFile(x.file, fi) || fi.Size() < x.off {
		*x = admissionIndex{file: fi, counts: map[string]int{}, read: x.read}
	}
	needle := []byte(`"` + plan)
	r := bufio.NewReaderSize(io.NewSectionReader(f, x.off, fi.Size()-x.off), maxJournalLine)
	tail := 0 // an admission in a last line without its LF, not indexed
	for {
		line, err := r.ReadSlice('\n')
		x.read += int64(len(line))
		if errors.Is(err, bufio.ErrBufferFull) {
			return 0, errors.New("a line longer than 64 KiB")
		}
		switch {
		case len(line) > 0 && line[len(line)-1] == '\n':
			x.add(line)
			x.off += int64(len(line))
		case len(line) > 0 && bytes.Contains(line, needle) && countsAsAdmission(line):
			tail++
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	n := x.counts[plan] + tail
	for _, l := range x.odd {
		if bytes.Contains(l, needle) {
			n++
		}
	}
	return n, nil
}

// add indexes one complete line.
func (x *admissionIndex) add(line []byte) {
	var e struct {
		Kind string `json:"kind"`
		Plan string `json:"plan"`
	}
	if json.Unmarshal(line, &e) != nil {
		x.odd = append(x.odd, bytes.Clone(line))
		return
	}
	if e.Kind == "admit" && e.Plan != "" {
		x.counts[e.Plan]++
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
// (locked says whether it holds it), and syncs it when sync is set. Under
// the lock no cooperating writer appends, so the size before the write is
// where line starts, and truncating back to it removes exactly this line's
// bytes. The caller holds j.mu.
func (j *Journal) appendLocked(f *os.File, locked bool, line []byte, sync bool) error {
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
	switch {
	case err == nil && !sync:
		j.pending = true
	case err == nil:
		if err = f.Sync(); err == nil {
			// The fsync covers every earlier write of the file.
			j.pending = false
			j.syncs++
		}
	}
	if err != nil && locked {
		// Best effort: if this fails too, the next append starts a new line.
		if f.Truncate(size) == nil {
			f.Sync()
		}
	}
	return err
}
