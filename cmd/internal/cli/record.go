package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/pipeline"
)

// leaseRecord is what cut remembers locally about a reversible cut so that
// `cut rehydrate` can claim and receipt it later: identifiers, digests and
// plan fields only — public or keyed, never a value, a token map or a key
// (pipeline.LeaseRef). It lives in $XDG_STATE_HOME/privacycut/leases/<lease>.json
// (0600).
type leaseRecord = pipeline.LeaseRef

func (c *Cmd) stateDir() (string, error) {
	if d := c.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "privacycut"), nil
	}
	if h := c.Getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "privacycut"), nil
	}
	return "", errors.New("no XDG_STATE_HOME or HOME for cut's local state")
}

func (c *Cmd) recordPath(leaseRef string) (string, error) {
	d, err := c.stateDir()
	if err != nil {
		return "", err
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, leaseRef)
	return filepath.Join(d, "leases", name+".json"), nil
}

func (c *Cmd) writeRecord(r leaseRecord) error {
	p, err := c.recordPath(r.Lease)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	b, err := canon.Marshal(r)
	if err != nil {
		return err
	}
	return os.WriteFile(p, append(b, '\n'), 0o600)
}

func (c *Cmd) readRecord(leaseRef string) (*leaseRecord, error) {
	p, err := c.recordPath(leaseRef)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("no local record of lease %s (prepared on another machine or by another user?): %w", leaseRef, err)
	}
	var r leaseRecord
	if err := canon.Unmarshal(b, &r, canon.Options{}); err != nil {
		return nil, fmt.Errorf("lease record: %w", err)
	}
	return &r, nil
}
