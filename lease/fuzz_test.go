package lease

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/receipts"
)

// FuzzTransitions drives one lease through a random sequence of operations at
// random times (the clock moves by -128…+127 minutes per step, so it crosses
// the deadline and goes back). Each step is three bytes: operation, argument
// selector, clock step. After every step the lease passes Check and is a
// Forward successor of the previous one, and the rules of expiry, terminal
// states and idempotence hold.
func FuzzTransitions(f *testing.F) {
	f.Add([]byte{4, 0, 1, 0, 0, 1, 1, 0, 1, 5, 0, 1})              // bind, claim, consume, destroy
	f.Add([]byte{4, 0, 1, 0, 0, 1, 0, 0, 0, 0, 1, 0})              // bind, claim, repeat, conflict
	f.Add([]byte{4, 0, 1, 0, 0, 1, 3, 0, 70, 5, 0, 1, 6, 0, 0x80}) // expire, destroy, clock back
	f.Add([]byte{2, 0, 1, 5, 0, 1, 4, 0, 1, 0, 0, 1})              // revoke unbound, destroy, bind, claim
	f.Add([]byte{4, 0, 1, 7, 1, 1, 7, 2, 1, 7, 0, 100, 6, 0, 0})   // apply
	f.Add([]byte{4, 1, 1, 4, 0, 1, 0, 4, 1, 1, 3, 1, 0, 2, 59})
	f.Fuzz(func(t *testing.T, steps []byte) {
		if len(steps) > 3*200 {
			steps = steps[:3*200]
		}
		l, err := New(params(), base, maxLifetime)
		if err != nil {
			t.Fatal(err)
		}
		deadline := l.Deadline
		now := base
		for i := 0; i+2 < len(steps); i += 3 {
			op, sel, dt := steps[i]%8, steps[i+1], int8(steps[i+2])
			now = now.Add(time.Duration(dt) * time.Minute)
			prev := l
			next, out, err := step(prev, op, sel, now)
			eff := now
			if eff.Before(prev.UpdatedAt) {
				eff = prev.UpdatedAt
			}

			if cerr := next.Check(); cerr != nil {
				t.Fatalf("step %d (op %d): result fails Check: %v", i/3, op, cerr)
			}
			if ferr := Forward(prev, next); ferr != nil {
				t.Fatalf("step %d (op %d): not forward: %v", i/3, op, ferr)
			}
			if !next.Deadline.Equal(deadline) {
				t.Fatalf("step %d: deadline moved", i/3)
			}
			if prev.State.Terminal() && next.State != prev.State {
				t.Fatalf("step %d: terminal %v left for %v", i/3, prev.State, next.State)
			}
			var e *Error
			noOp := errors.As(err, &e) && e.Field == "event" // Apply of a non-event performs nothing
			if prev.Live() && !eff.Before(deadline) && !noOp && next.State != Expired {
				t.Fatalf("step %d (op %d): live lease past its deadline is %v", i/3, op, next.State)
			}
			if next.Seq == prev.Seq {
				if !reflect.DeepEqual(prev, next) {
					t.Fatalf("step %d: lease changed without seq (-prev +next):\n%s", i/3, cmp.Diff(prev, next))
				}
			} else if next.Seq != prev.Seq+1 {
				t.Fatalf("step %d: seq jumped from %d to %d", i/3, prev.Seq, next.Seq)
			}
			if err != nil {
				checkErr(t, err)
				if next.Seq != prev.Seq && (next.State != Expired || CodeOf(err) != receipts.LeaseNotActive) {
					t.Fatalf("step %d: error %v with a change to %v", i/3, err, next.State)
				}
				if out != OutcomeNone {
					t.Fatalf("step %d: outcome %v with error %v", i/3, out, err)
				}
			}
			if out == OutcomeAlreadyClaimed && next.Seq != prev.Seq {
				t.Fatalf("step %d: idempotent claim advanced seq", i/3)
			}
			if next.State == Consumed && prev.State != Consumed && prev.State != Claimed {
				t.Fatalf("step %d: consumed from %v", i/3, prev.State)
			}
			l = next
		}
	})
}

// step applies operation op to l; sel picks the claim tuple or binding.
func step(l Lease, op, sel byte, now time.Time) (Lease, Outcome, error) {
	switch op {
	case 0:
		return l.Claim(fuzzTuple(sel), now)
	case 1:
		n, err := l.Consume(fuzzTuple(sel), now)
		return n, OutcomeNone, err
	case 2:
		n, err := l.Revoke(now)
		return n, OutcomeNone, err
	case 3:
		n, err := l.Expire(now)
		return n, OutcomeNone, err
	case 4:
		var n Lease
		var err error
		switch sel % 3 {
		case 0:
			n, err = l.Bind(cutEvent, candDigest, exportDigest, now)
		case 1:
			n, err = l.Bind("seal:other", candDigest, digest("sha256:", 'f'), now)
		default:
			n, err = l.Bind("", "", "", now)
		}
		return n, OutcomeNone, err
	case 5:
		n, err := l.DestroyKey(now)
		return n, OutcomeNone, err
	case 6:
		n, _, err := Recover(l, now)
		return n, OutcomeNone, err
	default:
		ev := Event(sel % 6) // includes EventUnknown and an out-of-range event
		n, err := l.Apply(ev, fuzzTuple(sel/6), now)
		return n, OutcomeNone, err
	}
}

func fuzzTuple(sel byte) ClaimTuple {
	t := winner()
	switch sel % 6 {
	case 1:
		t.ReturnDigest = returnDigestB
	case 2:
		t.Principal = "uid:1001"
	case 3:
		t.Attempt = 2
	case 4:
		t.Station = "station-b"
	case 5:
		t.ReturnDigest = "sha256:"
	}
	return t
}

// checkErr asserts that err is a well-formed, content-free *Error.
func checkErr(t *testing.T, err error) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is %T", err, err)
	}
	if (e.Code == "") == (e.Err == nil) {
		t.Fatalf("error %v: code %q, cause %v", err, e.Code, e.Err)
	}
	if e.Code != "" && !e.Code.Valid() {
		t.Fatalf("error %v: unknown code", err)
	}
	msg := err.Error()
	for _, v := range []string{"run-7", "uid:", "station-", "seal:", "sha256:", "pcl:", "2030"} {
		if strings.Contains(msg, v) {
			t.Fatalf("error %q contains a value %q", msg, v)
		}
	}
}
