package service

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/keys"
)

func wrapFile(e *env, id string, epoch int) string {
	return filepath.Join(e.keys, "dek", strings.TrimPrefix(id, "pcl:")+"."+string(rune('0'+epoch)))
}

// TestTwoBoot is C1 in process: grant, close, reopen, claim and consume
// with the same map.
func TestTwoBoot(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, vals := pairsOf("boot", 3)
	res := grant(t, v, ps)
	bind(t, v, res)
	v.Close()

	v = e.open(t)
	ret := digest("sha256:")
	if _, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(ret)); err != nil {
		t.Fatalf("Claim after restart: %v", err)
	}
	err := v.WithMap(ctx, res.Lease.ID, func(m *Map) error {
		for i, tok := range res.Tokens {
			if err := m.Lookup(tok, func(_ string, val []byte) error {
				if string(val) != string(vals[i]) {
					t.Errorf("value %d changed across the restart", i)
				}
				return nil
			}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("WithMap after restart: %v", err)
	}
	if _, err := v.Consume(ctx, principal, res.Lease.ID, claimReq(ret)); err != nil {
		t.Fatalf("Consume after restart: %v", err)
	}
}

// TestExpiry is C4 in process: the sweeper expires a lease at its
// deadline and destroys its key; across a restart the deadline is
// unchanged and a lease whose deadline passed while the vault was down is
// expired at boot.
func TestExpiry(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("exp", 1)
	a := grant(t, v, ps)
	b := grant(t, v, ps)
	e.clock.Add(30 * time.Minute)
	if n, err := v.Sweep(); err != nil || n != 0 {
		t.Fatalf("Sweep before any deadline: %d, %v", n, err)
	}
	e.clock.Set(a.Lease.Deadline)
	if n, err := v.Sweep(); err != nil || n != 2 {
		t.Fatalf("Sweep at the deadline: %d expired, %v", n, err)
	}
	for _, id := range []string{a.Lease.ID, b.Lease.ID} {
		if s, k := state(t, v, id); s != lease.Expired || k != KeyDestroyed {
			t.Errorf("after sweep: %v %v", s, k)
		}
	}

	// Across a restart.
	e.clock.Set(t0)
	e2 := newEnv(t)
	e2.clock = e.clock
	e2.opt.Now = e.clock.Now
	v2 := e2.open(t)
	c := grant(t, v2, ps)
	v2.Close()
	e.clock.Set(c.Lease.Deadline.Add(time.Minute))
	v2 = e2.open(t)
	in, err := v2.Show(ctx, c.Lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	if in.Lease.State != lease.Expired || in.Key != KeyDestroyed || !in.Lease.KeyDestroyed {
		t.Errorf("after boot past the deadline: %v key %v", in.Lease.State, in.Key)
	}
	if !in.Lease.Deadline.Equal(c.Lease.Deadline) {
		t.Errorf("the restart changed the deadline from %v to %v", c.Lease.Deadline, in.Lease.Deadline)
	}
	if _, err := os.Stat(wrapFile(e2, c.Lease.ID, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the expired lease's key survived boot recovery")
	}
	// An operation at the deadline expires the lease instead.
	d := grant(t, v2, ps)
	bind(t, v2, d)
	e.clock.Set(d.Lease.Deadline)
	_, err = v2.Claim(ctx, principal, d.Lease.ID, claimReq(digest("sha256:")))
	wantCode(t, err, receipts.LeaseNotActive)
	if s, k := state(t, v2, d.Lease.ID); s != lease.Expired || k != KeyDestroyed {
		t.Errorf("claim at the deadline left %v %v", s, k)
	}
}

// TestClockSetBack is C5: after a restart with the clock set back, a lease
// whose deadline the vault has already seen pass stays expired (even if the
// vault never touched it), and new leases start at the high-water mark.
func TestClockSetBack(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("clk", 1)
	res := grant(t, v, ps)
	bind(t, v, res)
	e.clock.Set(res.Lease.Deadline.Add(10 * time.Minute))
	v.Close() // persists the mark; the lease itself is not touched

	e.clock.Set(t0) // set back, before the deadline
	v = e.open(t)
	if s, _ := state(t, v, res.Lease.ID); s != lease.Expired {
		t.Fatalf("clock set back: lease is %v, want EXPIRED", s)
	}
	_, err := v.Claim(ctx, principal, res.Lease.ID, claimReq(digest("sha256:")))
	wantCode(t, err, receipts.LeaseNotActive)
	n := grant(t, v, ps)
	if n.Lease.CreatedAt.Before(res.Lease.Deadline.Add(10 * time.Minute)) {
		t.Errorf("a lease granted after the clock went back starts at %v, before the mark", n.Lease.CreatedAt)
	}
	v.Close()
	v = e.open(t)
	if s, _ := state(t, v, res.Lease.ID); s != lease.Expired {
		t.Errorf("expired lease revived on a second boot: %v", s)
	}
}

// TestBootCompletesPendingDestruction: a terminal state committed without
// its key destruction (a crash between the two) is completed at boot. A
// wrapped key belonging to no stored lease is kept: it may belong to a
// lease of a backup of a lost state directory (see TestRestore).
func TestBootCompletesPendingDestruction(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("pend", 1)
	res := grant(t, v, ps)
	live := grant(t, v, ps)
	// Commit the revocation directly, as a crash after the commit would
	// leave it.
	if _, err := v.store.Update(res.Lease.ID, func(c lease.Lease) (lease.Lease, error) { return c.Revoke(e.clock.Now()) }); err != nil {
		t.Fatal(err)
	}
	orphan := "pcl:" + strings.Repeat("a", 26)
	dek, _ := v.keys.NewKey()
	if err := v.keys.Wrap(orphan, dek); err != nil {
		t.Fatal(err)
	}
	dek.Wipe()
	v.Close()
	if _, err := os.Stat(wrapFile(e, res.Lease.ID, 1)); err != nil {
		t.Fatalf("setup: key of the revoked lease should still exist: %v", err)
	}

	v = e.open(t)
	in, _ := v.Show(ctx, res.Lease.ID)
	if !in.Lease.KeyDestroyed || in.Key != KeyDestroyed {
		t.Errorf("boot did not complete the key destruction: %+v", in.Key)
	}
	if _, err := os.Stat(wrapFile(e, res.Lease.ID, 1)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the revoked lease's wrapped key survived boot recovery")
	}
	if _, err := os.Stat(wrapFile(e, orphan, 1)); err != nil {
		t.Errorf("a wrapped key without a stored lease was destroyed: %v", err)
	}
	if s, k := state(t, v, live.Lease.ID); s != lease.Active || k != KeyPresent {
		t.Errorf("the live lease was disturbed: %v %v", s, k)
	}
}

// TestKeyStoreLoss is K5: with the key directory deleted or damaged, the
// vault starts and the affected leases answer LEASE_UNRECOVERABLE to every
// map operation; damage is detected by the authentication tag.
func TestKeyStoreLoss(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, e *env, ids ...string)
	}{
		{"key directory deleted", func(t *testing.T, e *env, _ ...string) { os.RemoveAll(e.keys) }},
		{"wrapped key deleted", func(t *testing.T, e *env, ids ...string) {
			for _, id := range ids {
				os.Remove(wrapFile(e, id, 1))
			}
		}},
		{"wrapped key flipped", func(t *testing.T, e *env, ids ...string) {
			for _, id := range ids {
				flipByte(t, wrapFile(e, id, 1), 40)
			}
		}},
		{"epoch key flipped", func(t *testing.T, e *env, _ ...string) { flipByte(t, filepath.Join(e.keys, "epoch-1.key"), 3) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			v := e.open(t)
			ps, _ := pairsOf("loss", 2)
			bound := grant(t, v, ps)
			bind(t, v, bound)
			unbound := grant(t, v, ps)
			v.Close()
			tc.damage(t, e, bound.Lease.ID, unbound.Lease.ID)

			v = e.open(t)
			_, err := v.Claim(ctx, principal, bound.Lease.ID, claimReq(digest("sha256:")))
			wantCode(t, err, receipts.LeaseUnrecoverable)
			wantCode(t, v.WithMap(ctx, bound.Lease.ID, func(*Map) error { return nil }), receipts.LeaseUnrecoverable)
			ex := export(unbound.Tokens)
			wantCode(t, v.Bind(ctx, principal, unbound.Lease.ID, "evt:s", digest("hmac-sha256:"), receipts.SHA256(ex), ex), receipts.LeaseUnrecoverable)
			// Metadata stays readable; the lease is not re-derived or re-issued.
			in, err := v.Show(ctx, bound.Lease.ID)
			if err != nil || in.Lease.State != lease.Active {
				t.Errorf("Show: %+v, %v", in, err)
			}
			// New leases work.
			n := grant(t, v, ps)
			bind(t, v, n)
			if err := v.WithMap(ctx, n.Lease.ID, func(*Map) error { return nil }); err != nil {
				t.Errorf("a new lease after the loss: %v", err)
			}
			if tc.name == "key directory deleted" {
				if n.Lease.KeyEpoch <= bound.Lease.KeyEpoch {
					t.Errorf("a lost key directory reused epoch %d", n.Lease.KeyEpoch)
				}
				if in.Key != KeyMissing {
					t.Errorf("key state %v, want missing", in.Key)
				}
			}
			// Revoking an unrecoverable lease still works and is terminal.
			if _, err := v.Revoke(ctx, principal, bound.Lease.ID); err != nil {
				t.Errorf("Revoke: %v", err)
			}
		})
	}
}

func flipByte(t *testing.T, path string, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := []byte{0}
	f.ReadAt(b, off)
	b[0] ^= 0x80
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestRotate is K3: after a rotation every live lease decrypts, the old
// epoch key file is gone, and old key-store bytes captured before the
// rotation fail to unwrap under the current keys.
func TestRotate(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	ps, _ := pairsOf("rot", 2)
	var live []CreateResult
	for range 3 {
		r := grant(t, v, ps)
		bind(t, v, r)
		live = append(live, r)
	}
	old := map[string][]byte{}
	for _, r := range live {
		old[r.Lease.ID], _ = os.ReadFile(wrapFile(e, r.Lease.ID, 1))
	}
	rot, err := v.Rotate()
	if err != nil || rot.From != 1 || rot.To != 2 || rot.Rewrapped != 3 {
		t.Fatalf("Rotate: %+v, %v", rot, err)
	}
	if _, err := os.Stat(filepath.Join(e.keys, "epoch-1.key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("old epoch key survived: %v", err)
	}
	for _, r := range live {
		if err := v.WithMap(ctx, r.Lease.ID, func(*Map) error { return nil }); err != nil {
			t.Errorf("live lease after rotation: %v", err)
		}
		if in, _ := v.Show(ctx, r.Lease.ID); in.Lease.KeyEpoch != 1 {
			t.Errorf("rotation changed the lease's grant epoch to %d", in.Lease.KeyEpoch)
		}
	}
	if st, _ := v.Status(); st.Epoch != 2 {
		t.Errorf("status epoch %d", st.Epoch)
	}
	// Plant the captured old wraps under the current epoch's names.
	for id, b := range old {
		if err := os.WriteFile(wrapFile(e, id, 2), b, 0o600); err != nil {
			t.Fatal(err)
		}
		wantCode(t, v.WithMap(ctx, id, func(*Map) error { return nil }), receipts.LeaseUnrecoverable)
	}
	// A new grant after the rotation uses epoch 2.
	if n := grant(t, v, ps); n.Lease.KeyEpoch != 2 {
		t.Errorf("grant after rotation at epoch %d", n.Lease.KeyEpoch)
	}
	if _, err := keys.Open(e.keys, keys.Options{ReadOnly: true}); err != nil {
		t.Errorf("read-only open of the rotated directory: %v", err)
	}
}
