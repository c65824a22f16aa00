package store

import (
	"errors"
	"sync"

	badger "github.com/dgraph-io/badger/v4"
)

// Group commit.
//
// With SyncWrites, Badger syncs its write-ahead log once for every
// transaction it commits, even when it writes several at once: concurrent
// transitions of different leases would each wait for a sync of their own.
// Every write of the store (lease creates and transitions, restores, clock
// and epoch marks) therefore goes through a group: the first writer to
// arrive commits its write together with those of every writer queued
// behind it, in one Badger transaction and so one sync, and hands the next
// batch to the first writer that queued during its commit. A writer
// returns when the transaction that holds its write is durable.
//
// The directory guard (guardDir, disk.go) runs once a batch, before its
// transaction, and then each write's room check (guardRoom).
//
// A writer's plan reads through the batch's transaction and returns the
// writes it wants (it does not write itself): one that fails adds nothing
// to the batch, so a refusal of one lease's transition never undoes
// another's. Lease writers hold their lease's lock and the marks the
// store's, so the writes of one batch touch distinct keys and cannot depend
// on each other. Batches commit one at a time, so none conflicts with
// another; a batch that still loses a race (Badger's conflict detection
// stays on) is run again from the start, every plan on fresh reads, at most
// maxRetries times. One whose writes do not fit one Badger transaction is
// split into one transaction per writer.

// groupMax bounds the writers of one batch and groupBytes their estimated
// memtable bytes (well inside Badger's transaction limit of 15 % of a
// memtable).
const (
	groupMax   = 64
	groupBytes = 256 << 10
)

// put is one write of a grouped transaction: a Set of key to value, or a
// Delete of key.
type put struct {
	key, value []byte
	del        bool
}

// plan reads what it needs through txn and returns the writes to make.
type plan func(txn *badger.Txn) ([]put, error)

// groupWrite is one writer's place in the queue.
type groupWrite struct {
	op   string
	plan plan
	est  int64
	err  error
	done chan bool // receives false when committed, true when made leader
}

type group struct {
	mu      sync.Mutex
	queue   []*groupWrite
	leading bool
	// beforeCommit, when set (by tests), is called with the batch's size
	// after its plans ran and before its transaction commits.
	beforeCommit func(n int)
}

// commit runs p in a grouped transaction and returns when that transaction
// has committed (or failed): p's own error, or the commit's.
func (s *Store) commit(op string, est int64, p plan) error {
	w := &groupWrite{op: op, plan: p, est: est, done: make(chan bool, 1)}
	g := &s.g
	g.mu.Lock()
	g.queue = append(g.queue, w)
	if g.leading {
		g.mu.Unlock()
		if lead := <-w.done; !lead {
			return s.counted(w)
		}
	} else {
		g.leading = true
		g.mu.Unlock()
	}
	// The leader is at the front of the queue: the batch it takes holds it.
	g.mu.Lock()
	n, bytes := 0, int64(0)
	for n < len(g.queue) && n < groupMax && (n == 0 || bytes+g.queue[n].est <= groupBytes) {
		bytes += g.queue[n].est
		n++
	}
	batch := g.queue[:n:n]
	g.queue = g.queue[n:]
	g.mu.Unlock()

	// The directory and its logs are checked once for the batch, just
	// before it is written (when they fail, each writer is given the
	// refusal of its own operation), then each write's room, in order.
	if err := s.guardDir(op); err != nil {
		for _, o := range batch {
			o.err = refusalAs(o.op, err)
		}
	} else {
		ready := make([]*groupWrite, 0, len(batch))
		for _, o := range batch {
			if o.err = s.guardRoom(o.op, o.est); o.err == nil {
				ready = append(ready, o)
			}
		}
		if len(ready) > 0 {
			s.commitBatch(ready)
		}
	}
	for _, o := range batch[1:] {
		o.done <- false
	}
	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].done <- true
	} else {
		g.leading = false
		g.queue = nil
	}
	g.mu.Unlock()
	return s.counted(w)
}

// refusalAs returns err, a guard's refusal, as the refusal of operation op.
func refusalAs(op string, err error) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Op = op
	return &c
}

// counted returns w's result, counting its estimate into the memtable once
// it is committed.
func (s *Store) counted(w *groupWrite) error {
	if w.err != nil {
		return wrapErr(w.op, w.err)
	}
	s.disk.count(w.est)
	return nil
}

// commitBatch commits the plans of batch in one transaction, setting each
// writer's err.
func (s *Store) commitBatch(batch []*groupWrite) {
	for range maxRetries {
		err := s.tryBatch(batch)
		if errors.Is(err, badger.ErrTxnTooBig) && len(batch) > 1 {
			for _, w := range batch {
				s.commitBatch([]*groupWrite{w})
			}
			return
		}
		if errors.Is(err, badger.ErrConflict) {
			continue
		}
		for _, w := range batch {
			if w.err == nil {
				w.err = err
			}
		}
		return
	}
	for _, w := range batch {
		w.err = newError(w.op, ErrContention, nil)
	}
}

// tryBatch runs the plans of batch in one transaction and commits it. A
// plan's own error is left in its writer's err; the error returned is the
// transaction's.
func (s *Store) tryBatch(batch []*groupWrite) error {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	for _, w := range batch {
		puts, err := w.plan(txn)
		w.err = err
		if err != nil {
			continue
		}
		for _, p := range puts {
			if p.del {
				err = txn.Delete(p.key)
			} else {
				err = txn.Set(p.key, p.value)
			}
			if err != nil {
				return err
			}
		}
	}
	if h := s.g.beforeCommit; h != nil {
		h(len(batch))
	}
	return txn.Commit()
}
