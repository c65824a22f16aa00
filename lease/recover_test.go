package lease

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/receipts"
)

func TestRecover(t *testing.T) {
	tests := []struct {
		state   State
		now     time.Time
		want    State
		changed bool
	}{
		{Active, beforeDeadline, Active, false},
		{Active, atDeadline, Expired, true},
		{Claimed, beforeDeadline, Claimed, false},
		{Claimed, afterDeadline, Expired, true},
		{Consumed, afterDeadline, Consumed, false},
		{Expired, afterDeadline, Expired, false},
		{Revoked, afterDeadline, Revoked, false},
		{Expired, base, Expired, false}, // clock set back before the grant
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/%s", tc.state, tc.now.Sub(base)), func(t *testing.T) {
			in := inState(t, tc.state)
			got, changed, err := Recover(in, tc.now)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.want || changed != tc.changed {
				t.Fatalf("Recover = %v, %v; want %v, %v", got.State, changed, tc.want, tc.changed)
			}
			if !changed {
				if d := cmp.Diff(in, got); d != "" {
					t.Fatalf("unchanged lease differs (-in +got):\n%s", d)
				}
			} else if got.Seq != in.Seq+1 || !got.NeedsKeyDestruction() {
				t.Fatalf("expired by recovery: seq %d (want %d), needs key destruction %v", got.Seq, in.Seq+1, got.NeedsKeyDestruction())
			}
			if !got.Deadline.Equal(in.Deadline) {
				t.Fatalf("Recover moved the deadline from %v to %v", in.Deadline, got.Deadline)
			}
			if err := Forward(in, got); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRestartNeverExtends models C4: a daemon that recovers the same stored
// lease at many boot times, forward and backward, never moves its deadline,
// and once past it the lease is EXPIRED for good.
func TestRestartNeverExtends(t *testing.T) {
	l := inState(t, Claimed)
	deadline := l.Deadline
	boots := []time.Duration{10 * time.Minute, 5 * time.Minute, 59 * time.Minute, 61 * time.Minute, 0, 30 * time.Minute, 24 * time.Hour, -time.Hour}
	for i, d := range boots {
		next, _, err := Recover(l, at(d))
		if err != nil {
			t.Fatalf("boot %d: %v", i, err)
		}
		if !next.Deadline.Equal(deadline) {
			t.Fatalf("boot %d at %v: deadline %v, want %v", i, d, next.Deadline, deadline)
		}
		if err := Forward(l, next); err != nil {
			t.Fatalf("boot %d: %v", i, err)
		}
		wantExpired := l.State == Expired || at(d).Compare(deadline) >= 0
		if (next.State == Expired) != wantExpired {
			t.Fatalf("boot %d at %v: state %v, want expired=%v", i, d, next.State, wantExpired)
		}
		l = next
	}
	if l.State != Expired {
		t.Fatalf("final state %v", l.State)
	}
}

// TestClockSetBack models C5: after expiry, no earlier time revives the
// lease, for any operation.
func TestClockSetBack(t *testing.T) {
	expired, changed, err := Recover(inState(t, Claimed), afterDeadline)
	if err != nil || !changed || expired.State != Expired {
		t.Fatalf("setup: %v %v %v", expired.State, changed, err)
	}
	for _, back := range []time.Time{beforeDeadline, at(2 * time.Minute), base, base.Add(-24 * time.Hour)} {
		for _, ev := range Events() {
			got, err := expired.Apply(ev, winner(), back)
			wantErr(t, err, receipts.LeaseNotActive, nil)
			if d := cmp.Diff(expired, got); d != "" {
				t.Fatalf("%v at %v changed an expired lease:\n%s", ev, back.Sub(base), d)
			}
		}
		if _, err := expired.Bind(cutEvent, candDigest, exportDigest, back); CodeOf(err) != receipts.LeaseNotActive {
			t.Fatalf("bind at %v: %v", back.Sub(base), err)
		}
		got, changed, err := Recover(expired, back)
		if err != nil || changed || got.State != Expired {
			t.Fatalf("recover at %v: %v %v %v", back.Sub(base), got.State, changed, err)
		}
	}
}

// TestClockBackOnLiveLease: a transition at a time before the lease's last
// update takes effect at the last update, so updated_at never decreases.
func TestClockBackOnLiveLease(t *testing.T) {
	in := inState(t, Claimed) // updated at +2m
	got, err := in.Revoke(at(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if !got.UpdatedAt.Equal(in.UpdatedAt) {
		t.Fatalf("updated_at = %v, want %v", got.UpdatedAt, in.UpdatedAt)
	}
	if err := Forward(in, got); err != nil {
		t.Fatal(err)
	}
}

func TestRecoverCorrupt(t *testing.T) {
	in := inState(t, Claimed)
	in.Seq = 7
	got, changed, err := Recover(in, afterDeadline)
	wantErr(t, err, receipts.LeaseUnrecoverable, nil)
	if changed || got.State != Claimed {
		t.Fatalf("corrupt lease recovered to %v (changed %v)", got.State, changed)
	}
	_, _, err = Recover(inState(t, Active), time.Time{})
	wantErr(t, err, "", ErrInvalid)
}
