package store

import (
	"sync"

	"github.com/privacycut/privacycut/lease"
)

// counts is the number of stored leases in each state, kept as the store
// commits so that a status report does not read every record. It is read
// from the records once (on first use) and again whenever a commit's outcome
// is not known (a failed commit of a write): a count is either what Badger
// holds or rebuilt from it. Writers hold gate shared from before their
// commit until they have recorded it, and a rebuild holds it exclusively, so
// no commit is both in a rebuild's snapshot and counted again after it.
type counts struct {
	gate  sync.RWMutex
	mu    sync.Mutex
	n     map[lease.State]int // guarded by mu; nil: rebuild before use
	scans int                 // full reads of the records, for the tests
}

// moved records a committed transition of one lease from one state to
// another; a lease created has no from (hasFrom false).
func (c *counts) moved(from lease.State, hasFrom bool, to lease.State) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		return // rebuilt from the records at the next read
	}
	if hasFrom {
		c.n[from]--
	}
	c.n[to]++
}

// unknown forgets the counts: a write's commit failed and what Badger holds
// is not known here.
func (c *counts) unknown() {
	c.mu.Lock()
	c.n = nil
	c.mu.Unlock()
}

// Counts returns the number of stored leases in each state (records that do
// not decode are not counted, as List skips them). It reads the records only
// on its first call and after a write whose commit failed.
func (s *Store) Counts() (map[lease.State]int, error) {
	c := &s.counts
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.mu.Unlock()
		c.gate.Lock()
		c.mu.Lock()
		defer c.gate.Unlock()
	}
	if c.n == nil {
		n := map[lease.State]int{}
		if err := s.eachLease("counts", func(l lease.Lease, ok bool) {
			if ok {
				n[l.State]++
			}
		}); err != nil {
			return nil, err
		}
		c.n, c.scans = n, c.scans+1
	}
	out := make(map[lease.State]int, len(c.n))
	for st, k := range c.n {
		if k > 0 {
			out[st] = k
		}
	}
	return out, nil
}
