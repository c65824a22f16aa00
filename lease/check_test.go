package lease

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

func TestCheckValid(t *testing.T) {
	for _, s := range States() {
		l := inState(t, s)
		if err := l.Check(); err != nil {
			t.Errorf("%v: %v", s, err)
		}
		if s.Terminal() {
			d, err := l.DestroyKey(afterDeadline)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Check(); err != nil {
				t.Errorf("%v with key destroyed: %v", s, err)
			}
		}
	}
	if err := mustNew(t).Check(); err != nil {
		t.Errorf("unbound: %v", err)
	}
}

func TestCheckInvariants(t *testing.T) {
	tests := []struct {
		name  string
		from  State
		f     func(*Lease)
		field string
	}{
		{"schema", Active, func(l *Lease) { l.Schema = "PseudonymMapLease@2" }, "schema"},
		{"id upper case", Active, func(l *Lease) { l.ID = strings.ToUpper(l.ID) }, "id"},
		{"id padding bits", Active, func(l *Lease) { l.ID = l.ID[:len(l.ID)-1] + "z" }, "id"},
		{"run", Active, func(l *Lease) { l.Run = "" }, "run"},
		{"target", Active, func(l *Lease) { l.Target = "a\tb" }, "target"},
		{"purpose", Active, func(l *Lease) { l.Purpose = "" }, "purpose"},
		{"namespace", Active, func(l *Lease) { l.Namespace = "ABCDEFGHIJ" }, "namespace"},
		{"source digest", Active, func(l *Lease) { l.SourceDigest = "hmac-sha256:" }, "source_digest"},
		{"output schema digest keyed", Active, func(l *Lease) { l.OutputSchemaDigest = l.SourceDigest }, "output_schema_digest"},
		{"output schema digest short", Active, func(l *Lease) { l.OutputSchemaDigest = "sha256:1234" }, "output_schema_digest"},
		{"station", Active, func(l *Lease) { l.Station = "" }, "station"},
		{"principal", Active, func(l *Lease) { l.Principal = "uid 0" }, "principal"},
		{"state zero", Active, func(l *Lease) { l.State = StateUnknown }, "state"},
		{"state out of range", Active, func(l *Lease) { l.State = 6 }, "state"},
		{"created zero", Active, func(l *Lease) { l.CreatedAt = time.Time{} }, "created_at"},
		{"deadline at grant", Active, func(l *Lease) { l.Deadline = l.CreatedAt }, "deadline"},
		{"deadline year 10000", Active, func(l *Lease) { l.Deadline = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "deadline"},
		{"updated before created", Active, func(l *Lease) { l.UpdatedAt = l.CreatedAt.Add(-time.Second) }, "updated_at"},
		{"half binding", Active, func(l *Lease) { l.ExportDigest = "" }, "export_digest"},
		{"cut event only", Active, func(l *Lease) { l.CandidateDigest, l.ExportDigest = "", "" }, "candidate_digest"},
		{"bad cut event", Active, func(l *Lease) { l.CutEvent = "seal 1" }, "cut_event"},
		{"claim in ACTIVE", Claimed, func(l *Lease) { l.State = Active }, "claim"},
		{"no claim in CLAIMED", Claimed, func(l *Lease) { l.ClaimedBy = nil }, "claim"},
		{"no claim in CONSUMED", Consumed, func(l *Lease) { l.ClaimedBy = nil }, "claim"},
		{"claim by another principal", Claimed, func(l *Lease) { l.ClaimedBy.Principal = "uid:0" }, "claim"},
		{"claim by another attempt", Claimed, func(l *Lease) { l.ClaimedBy.Attempt = 9 }, "claim"},
		{"claim with bad digest", Claimed, func(l *Lease) { l.ClaimedBy.ReturnDigest = "sha256:x" }, "claim"},
		{"claim without binding", Claimed, func(l *Lease) { l.CutEvent, l.CandidateDigest, l.ExportDigest = "", "", "" }, "claim"},
		{"key destroyed while live", Claimed, func(l *Lease) { l.KeyDestroyed = true; l.Seq++ }, "key_destroyed"},
		{"live at deadline", Claimed, func(l *Lease) { l.UpdatedAt = l.Deadline }, "updated_at"},
		{"expired before deadline", Expired, func(l *Lease) { l.UpdatedAt = l.Deadline.Add(-time.Nanosecond) }, "updated_at"},
		{"seq too high", Claimed, func(l *Lease) { l.Seq++ }, "seq"},
		{"seq too low", Consumed, func(l *Lease) { l.Seq-- }, "seq"},
		{"unchanged record updated", Active, func(l *Lease) {
			l.CutEvent, l.CandidateDigest, l.ExportDigest = "", "", ""
			l.Seq = 0
		}, "updated_at"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := inState(t, tc.from)
			tc.f(&l)
			err := l.Check()
			wantErr(t, err, receipts.LeaseUnrecoverable, nil)
			if got := err.(*Error).Field; got != tc.field {
				t.Fatalf("field = %q, want %q (%v)", got, tc.field, err)
			}
			// Every operation refuses a lease that fails Check.
			if _, err := l.Revoke(beforeDeadline); CodeOf(err) != receipts.LeaseUnrecoverable {
				t.Fatalf("Revoke on corrupt lease: %v", err)
			}
			if _, err := l.DestroyKey(afterDeadline); CodeOf(err) != receipts.LeaseUnrecoverable {
				t.Fatalf("DestroyKey on corrupt lease: %v", err)
			}
		})
	}
}

// history returns every record of one lease's life, in order: grant, bind,
// claim, consume, key destruction.
func history(t *testing.T) []Lease {
	l0 := mustNew(t)
	l1 := mustBound(t)
	l2, _, err := l1.Claim(winner(), at(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	l3, err := l2.Consume(winner(), at(3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	l4, err := l3.DestroyKey(at(4 * time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	return []Lease{l0, l1, l2, l3, l4}
}

func TestForwardOrder(t *testing.T) {
	h := history(t)
	for i := range h {
		for j := range h {
			err := Forward(h[i], h[j])
			if (err == nil) != (i <= j) {
				t.Errorf("Forward(h[%d], h[%d]) = %v", i, j, err)
			}
			if err != nil && !errors.Is(err, ErrNotForward) {
				t.Errorf("Forward(h[%d], h[%d]) = %v, want ErrNotForward", i, j, err)
			}
		}
	}
}

func TestForwardRefuses(t *testing.T) {
	claimed := inState(t, Claimed)
	other := func(f func(*Lease)) Lease { l := inState(t, Claimed); f(&l); return l }
	revokedUnbound, err := mustNew(t).Revoke(at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	rebound, err := mustNew(t).Bind("seal:other", candDigest, exportDigest, at(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	otherWinner := winner()
	otherWinner.ReturnDigest = returnDigestB
	reclaimed, _, err := mustBound(t).Claim(otherWinner, at(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	reclaimedRevoked, err := reclaimed.Revoke(at(3 * time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		prev, next Lease
		field      string
	}{
		{"other lease", claimed, other(func(l *Lease) { l.ID = FormatID([16]byte{9}) }), "id"},
		{"deadline moved", claimed, other(func(l *Lease) { l.Deadline = l.Deadline.Add(time.Hour) }), "deadline"},
		{"key epoch changed", claimed, other(func(l *Lease) { l.KeyEpoch++ }), "key_epoch"},
		{"output schema dropped", claimed, other(func(l *Lease) { l.OutputSchemaDigest = "" }), "output_schema_digest"},
		{"updated_at back", claimed, other(func(l *Lease) { l.UpdatedAt = l.UpdatedAt.Add(-time.Second) }), "updated_at"},
		{"same seq, other record", claimed, other(func(l *Lease) { l.UpdatedAt = l.UpdatedAt.Add(time.Second) }), "seq"},
		{"revoked to claimed", revokedUnbound, claimed, "state"},
		{"binding replaced", mustBound(t), rebound, "cut_event"},
		{"claim replaced", claimed, reclaimedRevoked, "claim"},
		{"seq back", inState(t, Consumed), claimed, "seq"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Forward(tc.prev, tc.next)
			wantErr(t, err, "", ErrNotForward)
			if got := err.(*Error).Field; got != tc.field {
				t.Fatalf("field = %q, want %q (%v)", got, tc.field, err)
			}
		})
	}
	// A record that fails Check is reported as such, on either side.
	bad := claimed
	bad.Seq = 0
	if err := Forward(claimed, bad); CodeOf(err) != receipts.LeaseUnrecoverable {
		t.Fatalf("Forward(ok, corrupt) = %v", err)
	}
	if err := Forward(bad, claimed); CodeOf(err) != receipts.LeaseUnrecoverable {
		t.Fatalf("Forward(corrupt, ok) = %v", err)
	}
}

func TestErrorMessages(t *testing.T) {
	claimed := inState(t, Claimed)
	other := winner()
	other.ReturnDigest = returnDigestB
	_, _, conflict := claimed.Claim(other, at(4*time.Minute))
	_, notActive := inState(t, Consumed).Revoke(at(4 * time.Minute))
	_, expiredWins := claimed.Revoke(afterDeadline)
	_, invalidArg := New(Params{}, base, maxLifetime)
	_, illegal := claimed.Expire(at(4 * time.Minute))
	corruptLease := claimed
	corruptLease.Seq = 9
	_, unrecoverable := corruptLease.Consume(winner(), at(4*time.Minute))
	_, durability := NeedFor(1<<62, 1<<62)
	backward := Forward(claimed, mustBound(t))
	tests := []struct {
		err  error
		want string
	}{
		{conflict, "lease: claim: LEASE_CLAIM_CONFLICT in state CLAIMED"},
		{notActive, "lease: revoke: LEASE_NOT_ACTIVE in state CONSUMED"},
		{expiredWins, "lease: revoke: LEASE_NOT_ACTIVE in state EXPIRED"},
		{invalidArg, "lease: new: invalid argument (field lifetime)"},
		{illegal, "lease: expire: illegal transition (field deadline) in state CLAIMED"},
		{unrecoverable, "lease: consume: LEASE_UNRECOVERABLE (field seq) in state CLAIMED"},
		{durability, "lease: need: LEASE_DURABILITY_INSUFFICIENT"},
		{backward, "lease: forward: not a forward transition (field seq) in state ACTIVE"},
		{&Error{Code: receipts.LeaseUnrecoverable, Op: "x", Err: ErrInvalid}, "lease: x: LEASE_UNRECOVERABLE: invalid argument"},
	}
	for _, tc := range tests {
		if tc.err == nil {
			t.Errorf("want %q, got nil error", tc.want)
			continue
		}
		got := tc.err.Error()
		if got != tc.want {
			t.Errorf("message %q, want %q", got, tc.want)
		}
		for _, value := range []string{"run-7", "uid:1000", "station-a", "seal:", "sha256:", "2030", testID} {
			if strings.Contains(got, value) {
				t.Errorf("message %q contains a field value %q", got, value)
			}
		}
	}
	if CodeOf(nil) != "" || CodeOf(errors.New("x")) != "" || CodeOf(illegal) != "" {
		t.Errorf("CodeOf of a non-refusal is not empty")
	}
}
