package store

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/privacycut/privacycut/lease"
)

// Reads served from the cache are what was last committed, and what
// Badger holds: after every write the cached and the stored record agree,
// a terminal move drops the map from both, and a lease the cache does not
// hold (one stored by another process, read after a restart) is read from
// Badger.
func TestCacheFollowsCommits(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	l := newLease(t)
	sealed := bytes.Repeat([]byte{0xc5}, 300)
	if err := s.Create(l, sealed); err != nil {
		t.Fatal(err)
	}
	id, _ := IDBytes(l.ID)
	if _, ok := s.c.get(id); !ok {
		t.Fatal("a created lease is not cached")
	}
	stored := func() lease.Lease {
		s.c.evict(id)
		got, err := s.Get(l.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	b, err := s.Update(l.ID, func(c lease.Lease) (lease.Lease, error) {
		return c.Bind("evt:seal", digest("hmac-sha256:", '2'), digest("sha256:", '3'), t0.Add(time.Second))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(l.ID); got.Seq != b.Seq || !got.Bound() {
		t.Errorf("cached read after Update: seq %d, want %d", got.Seq, b.Seq)
	}
	if st := stored(); st.Seq != b.Seq {
		t.Errorf("stored seq %d, cached %d", st.Seq, b.Seq)
	}
	// Evicted above: the next Update loads the record and caches it again.
	c, err := s.Update(l.ID, func(c lease.Lease) (lease.Lease, error) {
		n, _, err := c.Claim(tuple('a'), t0.Add(2*time.Second))
		return n, err
	})
	if err != nil {
		t.Fatal(err)
	}
	got, ok := s.c.get(id)
	if !ok || got.Seq != c.Seq {
		t.Fatalf("the Update of an uncached lease did not cache its result")
	}
	// A caller changing what it was given changes nothing stored.
	g, _ := s.Get(l.ID)
	g.ClaimedBy.Run = "changed"
	if again, _ := s.Get(l.ID); again.ClaimedBy.Run != "run-1" {
		t.Errorf("a caller's change reached the cache")
	}
	if m, err := s.Map(l.ID); err != nil || !bytes.Equal(m, sealed) {
		t.Errorf("Map while live: %v", err)
	}
	if _, err := s.Update(l.ID, func(c lease.Lease) (lease.Lease, error) { return c.Revoke(t0.Add(3 * time.Second)) }); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.c.get(id); ok {
		t.Errorf("a terminal lease stays cached")
	}
	if _, err := s.Map(l.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("Map after the terminal move: %v, want ErrNotFound", err)
	}
	if got, _ := s.Get(l.ID); got.State != lease.Revoked {
		t.Errorf("Get after the terminal move: %v", got.State)
	}
}

// Concurrent transitions of one lease and concurrent reads of it: every
// read is a committed record, and the sequence never goes backwards.
func TestCacheConcurrentReadsNeverGoBack(t *testing.T) {
	s := openStore(t, t.TempDir())
	l := newLease(t)
	if err := s.Create(l, []byte("m")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan string, 4)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := uint64(0)
			for {
				select {
				case <-stop:
					return
				default:
				}
				g, err := s.Get(l.ID)
				if err != nil {
					errs <- err.Error()
					return
				}
				if g.Seq < last {
					errs <- "a read went back"
					return
				}
				last = g.Seq
			}
		}()
	}
	b := bound(t, l)
	if _, err := s.Update(l.ID, func(lease.Lease) (lease.Lease, error) { return b, nil }); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		_, err := s.Update(l.ID, func(c lease.Lease) (lease.Lease, error) {
			n, _, err := c.Claim(tuple('a'), t0.Add(time.Duration(i+2)*time.Second))
			return n, err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
