package egress

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

// Entry is one line of the evidence journal. It holds identifiers, codes,
// positions and digests only: never raw values, keys, subjects or file names.
type Entry struct {
	EventID string            `json:"event_id"`
	Time    time.Time         `json:"time"`
	Kind    string            `json:"kind"` // "refusal", "seal", "admit"
	Command string            `json:"command,omitempty"`
	Seal    string            `json:"seal,omitempty"` // the seal's event id
	Codes   []receipts.Code   `json:"codes,omitempty"`
	Reason  string            `json:"reason,omitempty"` // a fixed word (see the Reason constants)
	Reasons []receipts.Reason `json:"reasons,omitempty"`
	Digest  string            `json:"digest,omitempty"` // export digest (public)
	Use     int               `json:"use,omitempty"`    // admission number within max_uses
}

// Journal appends entries to a local JSON-lines file (0600). It is safe for
// concurrent use within a process; each entry is one write(2) of one line on an
// O_APPEND descriptor, so lines from concurrent processes do not interleave.
// A nil *Journal records nothing.
type Journal struct {
	mu   sync.Mutex
	path string
}

// OpenJournal returns a journal writing to path. The file (0600) and its
// directory (0700) are created on first append; an existing directory or
// file keeps its mode.
func OpenJournal(path string) *Journal { return &Journal{path: path} }

// Path returns the journal's file path.
func (j *Journal) Path() string { return j.path }

// DefaultJournalPath is $PRIVACYCUT_JOURNAL, else
// $XDG_STATE_HOME/privacycut/journal.jsonl, else
// ~/.local/state/privacycut/journal.jsonl.
func DefaultJournalPath(getenv func(string) string) (string, error) {
	if p := getenv("PRIVACYCUT_JOURNAL"); p != "" {
		return p, nil
	}
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "privacycut", "journal.jsonl"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("egress: journal: no PRIVACYCUT_JOURNAL, XDG_STATE_HOME or HOME")
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
	if err := os.MkdirAll(filepath.Dir(j.path), 0o700); err != nil {
		return fmt.Errorf("egress: journal: %w", err)
	}
	f, err := os.OpenFile(j.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("egress: journal: %w", err)
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("egress: journal: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("egress: journal: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("egress: journal: %w", err)
	}
	return nil
}
