package store

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
)

// holdFirstBatch makes the first grouped commit of s wait, after its plans
// ran, until queued writers are queued behind it; it returns the sizes of
// the batches committed, read once the writers are done.
func holdFirstBatch(t *testing.T, s *Store, queued int) func() []int {
	t.Helper()
	var mu sync.Mutex
	var sizes []int
	s.g.beforeCommit = func(n int) {
		mu.Lock()
		first := len(sizes) == 0
		sizes = append(sizes, n)
		mu.Unlock()
		if !first {
			return
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			s.g.mu.Lock()
			q := len(s.g.queue)
			s.g.mu.Unlock()
			if q >= queued || time.Now().After(deadline) {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	return func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), sizes...)
	}
}

func TestGroupCommitsQueuedWritesTogether(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	const n = 16
	ls := make([]lease.Lease, n)
	for i := range ls {
		ls[i] = newLease(t)
		if err := s.Create(ls[i], []byte("map")); err != nil {
			t.Fatal(err)
		}
	}
	sizes := holdFirstBatch(t, s, n-1)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Update(ls[i].ID, func(c lease.Lease) (lease.Lease, error) {
				return c.Bind("evt:seal", digest("hmac-sha256:", '2'), digest("sha256:", '3'), t0.Add(time.Second))
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Update %d: %v", i, err)
		}
	}
	// The writers that queued behind the first commit shared one.
	if got := sizes(); len(got) != 2 || got[0] != 1 || got[1] != n-1 {
		t.Errorf("batch sizes %v, want [1 %d]", got, n-1)
	}
	s.Close()
	s = openStore(t, dir)
	for i, l := range ls {
		if cur, err := s.Get(l.ID); err != nil || cur.Seq != 1 {
			t.Errorf("lease %d after reopen: seq %d, %v", i, cur.Seq, err)
		}
	}
}

func TestGroupRefusalLeavesTheBatch(t *testing.T) {
	s := openStore(t, t.TempDir())
	const n = 8
	ls := make([]lease.Lease, n)
	for i := range ls {
		ls[i] = newLease(t)
		if err := s.Create(ls[i], []byte("map")); err != nil {
			t.Fatal(err)
		}
	}
	sizes := holdFirstBatch(t, s, n-1)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = s.Update(ls[i].ID, func(c lease.Lease) (lease.Lease, error) {
				switch i {
				case 3: // refused: nothing to consume
					return c.Consume(tuple('a'), t0.Add(time.Second))
				case 5: // not a forward move
					next := c
					next.Seq += 2
					return next, nil
				}
				return c.Bind("evt:seal", digest("hmac-sha256:", '2'), digest("sha256:", '3'), t0.Add(time.Second))
			})
		}()
	}
	wg.Wait()
	// At least one of the two failing writers shared the second batch.
	if got := sizes(); len(got) != 2 || got[1] != n-1 {
		t.Fatalf("batch sizes %v, want [1 %d]", got, n-1)
	}
	for i, err := range errs {
		cur, gerr := s.Get(ls[i].ID)
		switch i {
		case 3:
			if lease.CodeOf(err) != receipts.LeaseClaimConflict || cur.Seq != 0 {
				t.Errorf("refused lease: %v, seq %d", err, cur.Seq)
			}
		case 5:
			if !errors.Is(err, ErrNotForward) || cur.Seq != 0 {
				t.Errorf("non-forward lease: %v, seq %d", err, cur.Seq)
			}
		default:
			if err != nil || gerr != nil || cur.Seq != 1 {
				t.Errorf("lease %d: %v, %v, seq %d", i, err, gerr, cur.Seq)
			}
		}
	}
}

func TestGroupRerunsALostRace(t *testing.T) {
	s := openStore(t, t.TempDir())
	l := newLease(t)
	lk, _, err := idKeys("test", l.ID)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	s.g.beforeCommit = func(int) {
		calls++
		if calls == 1 {
			// A transaction outside the group writes the key the batch
			// read: the batch's commit conflicts and it is run again.
			rec, _ := encodeLease(l)
			if err := s.db.Update(func(txn *badger.Txn) error { return txn.Set(lk, rec) }); err != nil {
				t.Error(err)
			}
		}
	}
	if err := s.Create(l, []byte("map")); !errors.Is(err, ErrExists) {
		t.Errorf("Create after a lost race: %v, want ErrExists", err)
	}
	if calls != 2 {
		t.Errorf("the batch ran %d times, want 2", calls)
	}
}

func TestGroupSplitsATooBigBatch(t *testing.T) {
	s := openStore(t, t.TempDir())
	var sizes []int
	s.g.beforeCommit = func(n int) { sizes = append(sizes, n) }
	// Each writer's puts fit one transaction; the three together do not.
	value := bytes.Repeat([]byte{'v'}, valueThreshold-1024)
	var batch []*groupWrite
	for w := range 3 {
		batch = append(batch, &groupWrite{plan: func(*badger.Txn) ([]put, error) {
			var puts []put
			for k := range 8 {
				puts = append(puts, put{key: []byte{prefixMeta, 'x', byte(w), byte(k)}, value: value})
			}
			return puts, nil
		}})
	}
	s.commitBatch("test", batch)
	for i, w := range batch {
		if w.err != nil {
			t.Errorf("writer %d: %v", i, w.err)
		}
	}
	if len(sizes) != 3 || sizes[0] != 1 {
		t.Errorf("batch sizes %v, want three of one", sizes)
	}
	err := s.db.View(func(txn *badger.Txn) error {
		for w := range 3 {
			for k := range 8 {
				if _, err := txn.Get([]byte{prefixMeta, 'x', byte(w), byte(k)}); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Errorf("a split batch's write is missing: %v", err)
	}
}
