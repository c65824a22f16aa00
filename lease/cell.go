package lease

import "sync"

// Cell holds one lease and applies transitions to it one at a time. It is the
// in-memory compare-and-set: of many concurrent claims through one Cell,
// exactly one wins. The zero Cell holds no valid lease and refuses every
// transition with LEASE_UNRECOVERABLE; use NewCell.
type Cell struct {
	mu sync.Mutex
	l  Lease
}

// NewCell returns a Cell holding l, which must pass Check.
func NewCell(l Lease) (*Cell, error) {
	if err := l.Check(); err != nil {
		return nil, err
	}
	return &Cell{l: l.clone()}, nil
}

// Load returns a copy of the lease held.
func (c *Cell) Load() Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.l.clone()
}

// Do calls fn with a copy of the lease held, under the Cell's lock, and
// returns what fn returns. The lease fn returns replaces the one held when it
// is a forward successor of it (Forward), whether or not fn also returned an
// error: that is how an expiry that won over an operation is kept. If it is
// not a forward successor, the Cell keeps its lease and Do returns it with
// Forward's error. fn must not call the same Cell.
func (c *Cell) Do(fn func(Lease) (Lease, error)) (Lease, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next, err := fn(c.l.clone())
	if ferr := Forward(c.l, next); ferr != nil {
		return c.l.clone(), ferr
	}
	c.l = next.clone()
	return next, err
}
