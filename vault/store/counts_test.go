package store

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/lease"
)

// listCounts counts the stored leases by state the slow way.
func listCounts(t *testing.T, s *Store) map[lease.State]int {
	t.Helper()
	ls, _, err := s.List()
	if err != nil {
		t.Fatal(err)
	}
	n := map[lease.State]int{}
	for _, l := range ls {
		n[l.State]++
	}
	return n
}

// TestCountsFollowCommits: the counts by state equal a full read of the
// records after creates, transitions, refusals, a reopen and a restore, and
// the records are read once, not at every call.
func TestCountsFollowCommits(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	check := func(when string) {
		t.Helper()
		got, err := s.Counts()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(listCounts(t, s), got); diff != "" {
			t.Errorf("%s: counts (-list +counts):\n%s", when, diff)
		}
	}
	check("empty")
	var ids []string
	for range 6 {
		l := newLease(t)
		if err := s.Create(l, []byte("map")); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, l.ID)
	}
	if err := s.Create(lease.Lease{ID: ids[0]}, nil); err == nil {
		t.Fatal("a second create of one id succeeded")
	}
	check("created")
	for _, id := range ids[:4] {
		if _, err := s.Update(id, func(c lease.Lease) (lease.Lease, error) {
			return c.Bind("evt:seal", digest("hmac-sha256:", '2'), digest("sha256:", '3'), t0.Add(time.Second))
		}); err != nil {
			t.Fatal(err)
		}
	}
	s.Update(ids[0], func(c lease.Lease) (lease.Lease, error) { return c.Revoke(t0.Add(time.Minute)) })
	// A refused transition and a no-op write nothing.
	s.Update(ids[1], func(c lease.Lease) (lease.Lease, error) { return c.Consume(tuple('a'), t0.Add(time.Minute)) })
	s.Update(ids[2], func(c lease.Lease) (lease.Lease, error) { return c, nil })
	check("updated")
	want := map[lease.State]int{lease.Active: 5, lease.Revoked: 1}
	if got, _ := s.Counts(); !cmp.Equal(want, got) {
		t.Errorf("counts %v, want %v", got, want)
	}
	if s.counts.scans != 1 {
		t.Errorf("the records were read %d times, want once", s.counts.scans)
	}

	var buf bytes.Buffer
	if _, err := s.Backup(&buf, testMAC(1)); err != nil {
		t.Fatal(err)
	}
	snap, err := ReadBackup(bytes.NewReader(buf.Bytes()), testMAC(1))
	if err != nil {
		t.Fatal(err)
	}
	dst := openStore(t, t.TempDir())
	if err := dst.Create(newLease(t), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Counts(); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.Restore(snap); err != nil {
		t.Fatal(err)
	}
	src := s
	s = dst
	check("restored")

	src.Close()
	s = openStore(t, dir)
	check("reopened")
}

// TestCountsUnderConcurrentWrites: a rebuild racing commits neither loses
// nor double-counts one (run with -race).
func TestCountsUnderConcurrentWrites(t *testing.T) {
	s := openStore(t, t.TempDir())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				l := newLease(t)
				if err := s.Create(l, nil); err != nil {
					t.Error(err)
					return
				}
				s.Update(l.ID, func(c lease.Lease) (lease.Lease, error) { return c.Revoke(t0.Add(time.Minute)) })
			}
		}()
	}
	for range 20 {
		s.counts.unknown() // force rebuilds while the writers commit
		if _, err := s.Counts(); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	got, _ := s.Counts()
	if diff := cmp.Diff(listCounts(t, s), got); diff != "" {
		t.Errorf("counts (-list +counts):\n%s", diff)
	}
	if got[lease.Revoked] != 80 {
		t.Errorf("%d revoked, want 80", got[lease.Revoked])
	}
}
