package lease

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/receipts"
)

func TestNextTable(t *testing.T) {
	type move struct {
		s  State
		ev Event
	}
	legal := map[move]State{
		{Active, EventClaim}:    Claimed,
		{Active, EventRevoke}:   Revoked,
		{Active, EventExpire}:   Expired,
		{Claimed, EventClaim}:   Claimed,
		{Claimed, EventConsume}: Consumed,
		{Claimed, EventRevoke}:  Revoked,
		{Claimed, EventExpire}:  Expired,
	}
	allStates := append([]State{StateUnknown, State(9)}, States()...)
	allEvents := append([]Event{EventUnknown, Event(9)}, Events()...)
	for _, s := range allStates {
		for _, ev := range allEvents {
			got, ok := Next(s, ev)
			want, wantOK := legal[move{s, ev}]
			if !wantOK {
				want = s
			}
			if got != want || ok != wantOK {
				t.Errorf("Next(%v, %v) = %v, %v; want %v, %v", s, ev, got, ok, want, wantOK)
			}
		}
	}
}

func TestReachable(t *testing.T) {
	want := map[State][]State{
		Active:   {Active, Claimed, Consumed, Expired, Revoked},
		Claimed:  {Claimed, Consumed, Expired, Revoked},
		Consumed: {Consumed},
		Expired:  {Expired},
		Revoked:  {Revoked},
	}
	for _, from := range append([]State{StateUnknown}, States()...) {
		var got []State
		for _, to := range append([]State{StateUnknown}, States()...) {
			if reachable(from, to) {
				got = append(got, to)
			}
		}
		if d := cmp.Diff(want[from], got); d != "" {
			t.Errorf("reachable from %v (-want +got):\n%s", from, d)
		}
	}
}

// TestApplyExhaustive covers every (state, event) pair before and at/after the
// deadline. The claim tuple is the one that claimed the lease (or would).
func TestApplyExhaustive(t *testing.T) {
	const (
		notActive = receipts.LeaseNotActive
		conflict  = receipts.LeaseClaimConflict
	)
	type row struct {
		state State
		ev    Event
		late  bool
		want  State
		code  receipts.Code
		err   error
	}
	rows := []row{
		{Active, EventClaim, false, Claimed, "", nil},
		{Active, EventConsume, false, Active, conflict, nil},
		{Active, EventRevoke, false, Revoked, "", nil},
		{Active, EventExpire, false, Active, "", ErrIllegal},
		{Claimed, EventClaim, false, Claimed, "", nil},
		{Claimed, EventConsume, false, Consumed, "", nil},
		{Claimed, EventRevoke, false, Revoked, "", nil},
		{Claimed, EventExpire, false, Claimed, "", ErrIllegal},
		{Consumed, EventClaim, false, Consumed, notActive, nil},
		{Consumed, EventConsume, false, Consumed, notActive, nil},
		{Consumed, EventRevoke, false, Consumed, notActive, nil},
		{Consumed, EventExpire, false, Consumed, notActive, nil},
		{Expired, EventClaim, false, Expired, notActive, nil},
		{Expired, EventConsume, false, Expired, notActive, nil},
		{Expired, EventRevoke, false, Expired, notActive, nil},
		{Expired, EventExpire, false, Expired, notActive, nil},
		{Revoked, EventClaim, false, Revoked, notActive, nil},
		{Revoked, EventConsume, false, Revoked, notActive, nil},
		{Revoked, EventRevoke, false, Revoked, notActive, nil},
		{Revoked, EventExpire, false, Revoked, notActive, nil},

		{Active, EventClaim, true, Expired, notActive, nil},
		{Active, EventConsume, true, Expired, notActive, nil},
		{Active, EventRevoke, true, Expired, notActive, nil},
		{Active, EventExpire, true, Expired, "", nil},
		{Claimed, EventClaim, true, Expired, notActive, nil},
		{Claimed, EventConsume, true, Expired, notActive, nil},
		{Claimed, EventRevoke, true, Expired, notActive, nil},
		{Claimed, EventExpire, true, Expired, "", nil},
		{Consumed, EventClaim, true, Consumed, notActive, nil},
		{Consumed, EventConsume, true, Consumed, notActive, nil},
		{Consumed, EventRevoke, true, Consumed, notActive, nil},
		{Consumed, EventExpire, true, Consumed, notActive, nil},
		{Expired, EventClaim, true, Expired, notActive, nil},
		{Expired, EventConsume, true, Expired, notActive, nil},
		{Expired, EventRevoke, true, Expired, notActive, nil},
		{Expired, EventExpire, true, Expired, notActive, nil},
		{Revoked, EventClaim, true, Revoked, notActive, nil},
		{Revoked, EventConsume, true, Revoked, notActive, nil},
		{Revoked, EventRevoke, true, Revoked, notActive, nil},
		{Revoked, EventExpire, true, Revoked, notActive, nil},
	}
	if got, want := len(rows), len(States())*len(Events())*2; got != want {
		t.Fatalf("table has %d rows, want %d", got, want)
	}
	seen := map[string]bool{}
	for _, r := range rows {
		name := fmt.Sprintf("%v/%v/late=%v", r.state, r.ev, r.late)
		if seen[name] {
			t.Fatalf("duplicate row %s", name)
		}
		seen[name] = true
		for _, now := range nowsFor(r.late) {
			t.Run(fmt.Sprintf("%s/%s", name, now.Sub(base)), func(t *testing.T) {
				in := inState(t, r.state)
				got, err := in.Apply(r.ev, winner(), now)
				wantErr(t, err, r.code, r.err)
				if got.State != r.want {
					t.Fatalf("state = %v, want %v", got.State, r.want)
				}
				if err := got.Check(); err != nil {
					t.Fatalf("result fails Check: %v", err)
				}
				if err := Forward(in, got); err != nil {
					t.Fatalf("Forward(in, got): %v", err)
				}
				changed := r.want != r.state
				if changed {
					if got.Seq != in.Seq+1 {
						t.Fatalf("seq = %d, want %d", got.Seq, in.Seq+1)
					}
					if !got.UpdatedAt.Equal(now) {
						t.Fatalf("updated_at = %v, want %v", got.UpdatedAt, now)
					}
				} else if d := cmp.Diff(in, got); d != "" {
					t.Fatalf("lease changed without a state change (-in +got):\n%s", d)
				}
				if !got.Deadline.Equal(in.Deadline) {
					t.Fatalf("deadline moved from %v to %v", in.Deadline, got.Deadline)
				}
				if got.NeedsKeyDestruction() != got.State.Terminal() {
					t.Fatalf("NeedsKeyDestruction = %v in %v", got.NeedsKeyDestruction(), got.State)
				}
			})
		}
	}
}

// nowsFor returns the times a row runs at: just before the deadline, or
// exactly at it and after it.
func nowsFor(late bool) []time.Time {
	if late {
		return []time.Time{atDeadline, afterDeadline}
	}
	return []time.Time{beforeDeadline}
}

func TestApplyIllegalLease(t *testing.T) {
	zeroState := inState(t, Active)
	zeroState.State = StateUnknown
	outOfRange := inState(t, Active)
	outOfRange.State = State(9)
	for _, in := range []Lease{{}, zeroState, outOfRange} {
		for _, ev := range Events() {
			t.Run(fmt.Sprintf("%v/%v", in.State, ev), func(t *testing.T) {
				got, err := in.Apply(ev, winner(), beforeDeadline)
				wantErr(t, err, receipts.LeaseUnrecoverable, nil)
				if d := cmp.Diff(in, got); d != "" {
					t.Fatalf("lease changed (-in +got):\n%s", d)
				}
			})
		}
	}
}

func TestApplyUnknownEvent(t *testing.T) {
	in := inState(t, Active)
	got, err := in.Apply(EventUnknown, winner(), beforeDeadline)
	wantErr(t, err, "", ErrInvalid)
	if d := cmp.Diff(in, got); d != "" {
		t.Fatalf("lease changed (-in +got):\n%s", d)
	}
}

func TestBind(t *testing.T) {
	const notActive = receipts.LeaseNotActive
	other := digest("sha256:", 'e')
	otherCand := digest("hmac-sha256:", 'f')
	tests := []struct {
		name     string
		in       func(t testing.TB) Lease
		cut      string
		cand     string
		export   string
		now      time.Time
		want     State
		wantSeq  uint64
		bound    bool
		code     receipts.Code
		sentinel error
		field    string
	}{
		{"unbound binds", mustNew, cutEvent, candDigest, exportDigest, beforeDeadline, Active, 1, true, "", nil, ""},
		{"same binding again is a no-op", mustBound, cutEvent, candDigest, exportDigest, beforeDeadline, Active, 1, true, "", nil, ""},
		{"other export refused", mustBound, cutEvent, candDigest, other, beforeDeadline, Active, 1, true, notActive, nil, ""},
		{"other candidate refused", mustBound, cutEvent, otherCand, exportDigest, beforeDeadline, Active, 1, true, notActive, nil, ""},
		{"claimed, other candidate refused", func(t testing.TB) Lease { return inState(t, Claimed) }, cutEvent, otherCand, exportDigest, beforeDeadline, Claimed, 2, true, notActive, nil, ""},
		{"other cut event refused", mustBound, "seal:other", candDigest, exportDigest, beforeDeadline, Active, 1, true, notActive, nil, ""},
		{"claimed, same binding no-op", func(t testing.TB) Lease { return inState(t, Claimed) }, cutEvent, candDigest, exportDigest, beforeDeadline, Claimed, 2, true, "", nil, ""},
		{"consumed refused", func(t testing.TB) Lease { return inState(t, Consumed) }, cutEvent, candDigest, exportDigest, beforeDeadline, Consumed, 3, true, notActive, nil, ""},
		{"revoked unbound refused", func(t testing.TB) Lease {
			l, err := mustNew(t).Revoke(at(time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			return l
		}, cutEvent, candDigest, exportDigest, beforeDeadline, Revoked, 1, false, notActive, nil, ""},
		{"expiry wins", mustNew, cutEvent, candDigest, exportDigest, atDeadline, Expired, 1, false, notActive, nil, ""},
		{"bad cut event", mustNew, "seal 01", candDigest, exportDigest, beforeDeadline, Active, 0, false, "", ErrInvalid, "cut_event"},
		{"plain candidate digest", mustNew, cutEvent, exportDigest, exportDigest, beforeDeadline, Active, 0, false, "", ErrInvalid, "candidate_digest"},
		{"keyed export digest", mustNew, cutEvent, candDigest, candDigest, beforeDeadline, Active, 0, false, "", ErrInvalid, "export_digest"},
		{"empty binding", mustNew, "", "", "", beforeDeadline, Active, 0, false, "", ErrInvalid, "cut_event"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in(t)
			got, err := in.Bind(tc.cut, tc.cand, tc.export, tc.now)
			wantErr(t, err, tc.code, tc.sentinel)
			if tc.field != "" && err.(*Error).Field != tc.field {
				t.Fatalf("field = %q, want %q", err.(*Error).Field, tc.field)
			}
			if got.State != tc.want || got.Seq != tc.wantSeq || got.Bound() != tc.bound {
				t.Fatalf("got state %v seq %d bound %v; want %v %d %v", got.State, got.Seq, got.Bound(), tc.want, tc.wantSeq, tc.bound)
			}
			if got.Bound() && (got.CutEvent != cutEvent || got.CandidateDigest != candDigest || got.ExportDigest != exportDigest) {
				t.Fatalf("binding changed: %q %q %q", got.CutEvent, got.CandidateDigest, got.ExportDigest)
			}
			if err := Forward(in, got); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestClaimUnbound(t *testing.T) {
	in := mustNew(t)
	got, out, err := in.Claim(winner(), beforeDeadline)
	wantErr(t, err, receipts.LeaseNotActive, nil)
	if out != OutcomeNone {
		t.Fatalf("outcome = %v", out)
	}
	if d := cmp.Diff(in, got); d != "" {
		t.Fatalf("lease changed (-in +got):\n%s", d)
	}
}

func TestDestroyKey(t *testing.T) {
	tests := []struct {
		state    State
		now      time.Time
		want     State
		seqDelta uint64
		code     receipts.Code
		sentinel error
	}{
		{Active, beforeDeadline, Active, 0, "", ErrIllegal},
		{Claimed, beforeDeadline, Claimed, 0, "", ErrIllegal},
		{Active, atDeadline, Expired, 1, receipts.LeaseNotActive, nil},
		{Claimed, afterDeadline, Expired, 1, receipts.LeaseNotActive, nil},
		{Consumed, beforeDeadline, Consumed, 1, "", nil},
		{Consumed, afterDeadline, Consumed, 1, "", nil},
		{Expired, afterDeadline, Expired, 1, "", nil},
		{Revoked, beforeDeadline, Revoked, 1, "", nil},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%v/%s", tc.state, tc.now.Sub(base)), func(t *testing.T) {
			in := inState(t, tc.state)
			got, err := in.DestroyKey(tc.now)
			wantErr(t, err, tc.code, tc.sentinel)
			if got.State != tc.want || got.Seq != in.Seq+tc.seqDelta {
				t.Fatalf("got %v seq %d; want %v seq %d", got.State, got.Seq, tc.want, in.Seq+tc.seqDelta)
			}
			wantDestroyed := err == nil
			if got.KeyDestroyed != wantDestroyed {
				t.Fatalf("key_destroyed = %v, want %v", got.KeyDestroyed, wantDestroyed)
			}
			if got.State.Terminal() && got.NeedsKeyDestruction() == wantDestroyed {
				t.Fatalf("NeedsKeyDestruction = %v after DestroyKey err=%v", got.NeedsKeyDestruction(), err)
			}
			if err := Forward(in, got); err != nil {
				t.Fatal(err)
			}
			if !wantDestroyed {
				return
			}
			again, err := got.DestroyKey(tc.now.Add(time.Hour))
			if err != nil {
				t.Fatalf("second DestroyKey: %v", err)
			}
			if d := cmp.Diff(got, again); d != "" {
				t.Fatalf("second DestroyKey changed the lease (-first +second):\n%s", d)
			}
		})
	}
}

func TestConsumeSingleUse(t *testing.T) {
	l := inState(t, Consumed)
	got, err := l.Consume(winner(), at(4*time.Minute))
	wantErr(t, err, receipts.LeaseNotActive, nil)
	if d := cmp.Diff(l, got); d != "" {
		t.Fatalf("replay changed the lease (-in +got):\n%s", d)
	}
	other := winner()
	other.ReturnDigest = returnDigestB
	_, err = inState(t, Claimed).Consume(other, at(4*time.Minute))
	wantErr(t, err, receipts.LeaseClaimConflict, nil)
}
