package lease

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/receipts"
)

const racers = 64

type claimResult struct {
	l   Lease
	out Outcome
	err error
}

// race runs one Claim per tuple through c, all released at once.
func race(c *Cell, tuples []ClaimTuple, now time.Time) []claimResult {
	res := make([]claimResult, len(tuples))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, tup := range tuples {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			var out Outcome
			l, err := c.Do(func(l Lease) (Lease, error) {
				n, o, err := l.Claim(tup, now)
				out = o
				return n, err
			})
			res[i] = claimResult{l, out, err}
		}()
	}
	close(start)
	wg.Wait()
	return res
}

func TestCellConcurrentDistinctClaims(t *testing.T) {
	in := inState(t, Active)
	c, err := NewCell(in)
	if err != nil {
		t.Fatal(err)
	}
	tuples := make([]ClaimTuple, racers)
	for i := range tuples {
		tuples[i] = winner()
		tuples[i].ReturnDigest = fmt.Sprintf("sha256:%064x", i+1)
	}
	res := race(c, tuples, at(2*time.Minute))
	winners, conflicts := 0, 0
	var won ClaimTuple
	for i, r := range res {
		switch {
		case r.err == nil && r.out == OutcomeClaimed:
			winners++
			won = tuples[i]
			if *r.l.ClaimedBy != tuples[i] {
				t.Errorf("winner %d got a lease claimed by another tuple", i)
			}
		case CodeOf(r.err) == receipts.LeaseClaimConflict && r.out == OutcomeNone:
			conflicts++
		default:
			t.Errorf("racer %d: outcome %v, error %v", i, r.out, r.err)
		}
	}
	if winners != 1 || conflicts != racers-1 {
		t.Fatalf("%d winners, %d conflicts; want 1, %d", winners, conflicts, racers-1)
	}
	final := c.Load()
	if final.State != Claimed || final.Seq != in.Seq+1 || *final.ClaimedBy != won {
		t.Fatalf("final lease: state %v seq %d claim %+v", final.State, final.Seq, final.ClaimedBy)
	}
	for i, r := range res {
		if d := cmp.Diff(final, r.l); d != "" {
			t.Errorf("racer %d saw another lease than the final one (-final +got):\n%s", i, d)
		}
	}
}

func TestCellConcurrentSameClaim(t *testing.T) {
	in := inState(t, Active)
	c, err := NewCell(in)
	if err != nil {
		t.Fatal(err)
	}
	tuples := make([]ClaimTuple, racers)
	for i := range tuples {
		tuples[i] = winner()
	}
	res := race(c, tuples, at(2*time.Minute))
	claimed, already := 0, 0
	for i, r := range res {
		if r.err != nil {
			t.Fatalf("racer %d: %v", i, r.err)
		}
		switch r.out {
		case OutcomeClaimed:
			claimed++
		case OutcomeAlreadyClaimed:
			already++
		}
		if d := cmp.Diff(res[0].l, r.l); d != "" {
			t.Errorf("racer %d got another lease (-racer0 +got):\n%s", i, d)
		}
	}
	if claimed != 1 || already != racers-1 {
		t.Fatalf("claimed %d, already %d; want 1, %d", claimed, already, racers-1)
	}
	if got := c.Load(); got.Seq != in.Seq+1 || got.State != Claimed {
		t.Fatalf("seq advanced to %d (from %d), state %v", got.Seq, in.Seq, got.State)
	}
}

func TestCellKeepsExpiryOnError(t *testing.T) {
	c, err := NewCell(inState(t, Claimed))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Do(func(l Lease) (Lease, error) { return l.Consume(winner(), afterDeadline) })
	wantErr(t, err, receipts.LeaseNotActive, nil)
	if got.State != Expired || c.Load().State != Expired || !c.Load().NeedsKeyDestruction() {
		t.Fatalf("returned %v, held %v", got.State, c.Load().State)
	}
}

func TestCellRefusesBackward(t *testing.T) {
	bound := inState(t, Active)
	c, err := NewCell(inState(t, Claimed))
	if err != nil {
		t.Fatal(err)
	}
	before := c.Load()
	got, err := c.Do(func(Lease) (Lease, error) { return bound, nil })
	wantErr(t, err, "", ErrNotForward)
	if d := cmp.Diff(before, got); d != "" {
		t.Fatalf("Do returned another lease than the held one (-held +got):\n%s", d)
	}
	if d := cmp.Diff(before, c.Load()); d != "" {
		t.Fatalf("held lease changed (-before +after):\n%s", d)
	}
}

func TestCellLoadIsACopy(t *testing.T) {
	c, err := NewCell(inState(t, Claimed))
	if err != nil {
		t.Fatal(err)
	}
	l := c.Load()
	l.ClaimedBy.ReturnDigest = returnDigestB
	if c.Load().ClaimedBy.ReturnDigest != returnDigestA {
		t.Fatal("mutating a loaded lease changed the cell")
	}
	_, err = c.Do(func(l Lease) (Lease, error) {
		l.ClaimedBy.Principal = "uid:0"
		return l, nil
	})
	if err == nil {
		t.Fatal("Do accepted a lease whose claim was rewritten in place")
	}
	if c.Load().ClaimedBy.Principal != "uid:1000" {
		t.Fatal("fn changed the held claim in place")
	}
}

func TestCellInvalid(t *testing.T) {
	bad := inState(t, Claimed)
	bad.Seq = 0
	if _, err := NewCell(bad); CodeOf(err) != receipts.LeaseUnrecoverable {
		t.Fatalf("NewCell(corrupt) = %v", err)
	}
	var zero Cell
	called := false
	_, err := zero.Do(func(l Lease) (Lease, error) {
		called = true
		return l.Revoke(beforeDeadline)
	})
	if CodeOf(err) != receipts.LeaseUnrecoverable || !called {
		t.Fatalf("zero Cell: %v (fn called %v)", err, called)
	}
}
