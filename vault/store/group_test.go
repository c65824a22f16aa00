package store

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
)

// distinctLeases returns n new leases whose writers take distinct locks
// (cache.lock), so that none waits for another's commit before it queues.
func distinctLeases(t *testing.T, n int) []lease.Lease {
	t.Helper()
	var out []lease.Lease
	seen := map[int]bool{}
	for len(out) < n {
		l := newLease(t)
		id, _ := IDBytes(l.ID)
		if !seen[stripe(id)] {
			seen[stripe(id)] = true
			out = append(out, l)
		}
	}
	return out
}

// holdGroup starts a write (the Create of blocker) that holds the group's commit, after its plan
// ran, until queue is called: writers that arrive meanwhile queue behind
// it. queue waits until n writers are queued, calls before (if not nil),
// lets the held commit go and returns the sizes of the batches committed
// so far (read again, once the writers are done, with sizes).
func holdGroup(t *testing.T, s *Store, blocker lease.Lease) (queue func(n int, before func()) []int, sizes func() []int) {
	t.Helper()
	var mu sync.Mutex
	var got []int
	entered, release := make(chan struct{}), make(chan struct{})
	s.g.beforeCommit = func(n int) {
		mu.Lock()
		first := len(got) == 0
		got = append(got, n)
		mu.Unlock()
		if first {
			close(entered)
			<-release
		}
	}
	held := make(chan error, 1)
	go func() { held <- s.Create(blocker, nil) }()
	<-entered
	sizes = func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), got...)
	}
	queue = func(n int, before func()) []int {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			s.g.mu.Lock()
			q := len(s.g.queue)
			s.g.mu.Unlock()
			if q >= n {
				break
			}
			if time.Now().After(deadline) {
				close(release)
				t.Fatalf("%d writers queued, want %d", q, n)
			}
		}
		if before != nil {
			before()
		}
		close(release)
		if err := <-held; err != nil {
			t.Errorf("the held write: %v", err)
		}
		return sizes()
	}
	return queue, sizes
}

// heldGroup is a store whose group commit is held (holdGroup) while n
// writers, one goroutine each, queue behind it: created(i) says whether
// lease i exists before they start, and write(i, l) is writer i's call.
// before, if not nil, runs once they are all queued. It returns the
// leases, each writer's error and the sizes of the batches committed.
func heldGroup(t *testing.T, s *Store, n int, created func(i int) bool, write func(i int, l lease.Lease) error, before func()) ([]lease.Lease, []error, []int) {
	t.Helper()
	ls := distinctLeases(t, n+1)
	blocker, ls := ls[n], ls[:n]
	for i, l := range ls {
		if created(i) {
			if err := s.Create(l, []byte("map")); err != nil {
				t.Fatal(err)
			}
		}
	}
	queue, sizes := holdGroup(t, s, blocker)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, l := range ls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = write(i, l)
		}()
	}
	queue(n, before)
	wg.Wait()
	return ls, errs, sizes()
}

func always(int) bool { return true }

// bind is the bind transition of every test here.
func bind(c lease.Lease) (lease.Lease, error) {
	return c.Bind("evt:seal", digest("hmac-sha256:", '2'), digest("sha256:", '3'), t0.Add(time.Second))
}

func TestGroupCommitsQueuedWritesTogether(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	const n = 16
	ls, errs, sizes := heldGroup(t, s, n, always, func(_ int, l lease.Lease) error {
		_, err := s.Update(l.ID, bind)
		return err
	}, nil)
	for i, err := range errs {
		if err != nil {
			t.Errorf("Update %d: %v", i, err)
		}
	}
	// The writers that queued behind the held commit shared one.
	if len(sizes) != 2 || sizes[1] != n {
		t.Errorf("batch sizes %v, want [1 %d]", sizes, n)
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
	ls, errs, sizes := heldGroup(t, s, n, always, func(i int, l lease.Lease) error {
		_, err := s.Update(l.ID, func(c lease.Lease) (lease.Lease, error) {
			switch i {
			case 3: // refused: nothing to consume
				return c.Consume(tuple('a'), t0.Add(time.Second))
			case 5: // not a forward move
				next := c
				next.Seq += 2
				return next, nil
			}
			return bind(c)
		})
		return err
	}, nil)
	// The two failing writers shared their batch with the others.
	if len(sizes) != 2 || sizes[1] != n {
		t.Fatalf("batch sizes %v, want [1 %d]", sizes, n)
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
		batch = append(batch, &groupWrite{op: "test", plan: func(*badger.Txn) ([]put, error) {
			var puts []put
			for k := range 8 {
				puts = append(puts, put{key: []byte{prefixMeta, 'x', byte(w), byte(k)}, value: value})
			}
			return puts, nil
		}})
	}
	s.commitBatch(batch)
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

func TestGroupGuardRefusesTheBatch(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "state")
	s := openStore(t, dir)
	const n = 6
	even := func(i int) bool { return i%2 == 0 }
	// The directory goes while the writers wait: the batch they share is
	// refused by its guard, each writer in its own operation's name.
	_, errs, sizes := heldGroup(t, s, n, even, func(i int, l lease.Lease) error {
		if even(i) {
			_, err := s.Update(l.ID, bind)
			return err
		}
		return s.Create(l, nil)
	}, func() {
		if err := os.Rename(dir, dir+".away"); err != nil {
			t.Error(err)
		}
	})
	if err := os.Rename(dir+".away", dir); err != nil {
		t.Fatal(err)
	}
	if len(sizes) != 1 {
		t.Fatalf("batch sizes %v: the refused batch was committed", sizes)
	}
	for i, err := range errs {
		op := "update"
		if !even(i) {
			op = "create"
		}
		if !errors.Is(err, ErrGone) || !strings.HasPrefix(err.Error(), "store: "+op+":") {
			t.Errorf("writer %d (%s): %v, want ErrGone in its own name", i, op, err)
		}
	}
}
