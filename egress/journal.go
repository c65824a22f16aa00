package egress

import (
	"encoding/json"
	"errors"
	"fmt"
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
	Kind    string             `json:"kind"` // "refusal", "seal", "admit"
	Command string             `json:"command,omitempty"`
	Seal    string             `json:"seal,omitempty"` // the seal's event id
	Codes   []receipts.Code    `json:"codes,omitempty"`
	Reason  string             `json:"reason,omitempty"` // a fixed word (see the Reason constants)
	Reasons []receipts.Refusal `json:"reasons,omitempty"`
	Digest  string             `json:"digest,omitempty"` // export digest (public)
	Use     int                `json:"use,omitempty"`    // admission number within max_uses
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
	err = appendLocked(f, line)
	if cerr := f.Close(); err == nil { // Close releases the lock
		err = cerr
	}
	return err
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

// appendLocked locks f, writes line at its end and syncs it. Under the lock
// no cooperating writer appends, so the size before the write is where line
// starts, and truncating back to it removes exactly this line's bytes.
func appendLocked(f *os.File, line []byte) error {
	locked, err := lockFile(f)
	if err != nil {
		return err
	}
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
