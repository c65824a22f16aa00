package service

import (
	"errors"
	"os"
	"testing"

	"github.com/privacycut/privacycut/lease"
)

// A terminal move records the key's destruction in its own commit: the
// consumed lease carries both steps (consume, then destroy-key, each one
// Seq), the stored record is the one returned, and the wrap is gone before
// Consume returns.
func TestConsumeRecordsDestructionWithTheMove(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("one", 2)
	res := grant(t, v, ps)
	bind(t, v, res)
	ret := digest("sha256:")
	c, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(ret))
	if err != nil {
		t.Fatal(err)
	}
	l, err := v.Consume(ctx, principal, res.Lease.ID, claimReq(ret))
	if err != nil {
		t.Fatalf("Consume: %v", err)
	}
	if l.State != lease.Consumed || !l.KeyDestroyed || l.Seq != c.Lease.Seq+2 {
		t.Errorf("consumed lease: %v destroyed %v seq %d, want CONSUMED, destroyed, seq %d", l.State, l.KeyDestroyed, l.Seq, c.Lease.Seq+2)
	}
	stored, err := v.store.Get(res.Lease.ID)
	if err != nil || stored.Seq != l.Seq || !stored.KeyDestroyed {
		t.Errorf("stored lease: seq %d destroyed %v, %v; want what Consume returned", stored.Seq, stored.KeyDestroyed, err)
	}
	if _, err := os.Stat(wrapFile(e, res.Lease.ID, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the wrap survived Consume: %v", err)
	}
	if s, k := state(t, v, res.Lease.ID); s != lease.Consumed || k != KeyDestroyed {
		t.Errorf("Show: %v %v", s, k)
	}
}

// A crash between the terminal commit (which records the destruction) and
// the destruction of the wrap leaves a lease recorded destroyed with its
// wrap: Show reports the key present, not destroyed, and boot recovery
// destroys it.
func TestRecordedDestructionWithWrapLeftIsFinishedAtBoot(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("left", 1)
	res := grant(t, v, ps)
	now := e.clock.Now()
	n, err := v.store.Update(res.Lease.ID, destroying(now, func(c lease.Lease) (lease.Lease, error) { return c.Revoke(now) }))
	if err != nil || n.State != lease.Revoked || !n.KeyDestroyed {
		t.Fatalf("setup: %v destroyed %v, %v", n.State, n.KeyDestroyed, err)
	}
	if _, k := state(t, v, res.Lease.ID); k != KeyPresent {
		t.Errorf("key state of a terminal lease whose wrap exists: %v, want present", k)
	}
	v.Close()
	if _, err := os.Stat(wrapFile(e, res.Lease.ID, 1)); err != nil {
		t.Fatalf("setup: the wrap should still exist: %v", err)
	}
	v = e.open(t)
	if s, k := state(t, v, res.Lease.ID); s != lease.Revoked || k != KeyDestroyed {
		t.Errorf("after boot: %v %v, want REVOKED, destroyed", s, k)
	}
	if _, err := os.Stat(wrapFile(e, res.Lease.ID, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("boot recovery left the wrap of a lease recorded destroyed")
	}
}

// The sweeper finishes a destruction that failed after the terminal
// commit recorded it.
func TestSweepFinishesRecordedDestruction(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("sweep", 1)
	res := grant(t, v, ps)
	now := e.clock.Now()
	if _, err := v.store.Update(res.Lease.ID, destroying(now, func(c lease.Lease) (lease.Lease, error) { return c.Revoke(now) })); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	v.pending[res.Lease.ID] = true
	v.mu.Unlock()
	if _, err := v.Sweep(); err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if _, err := os.Stat(wrapFile(e, res.Lease.ID, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sweeper left the wrap of a lease recorded destroyed")
	}
	v.mu.Lock()
	left := v.pending[res.Lease.ID]
	v.mu.Unlock()
	if left {
		t.Errorf("the lease is still pending after the sweep")
	}
}
