package lease

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/receipts"
)

func TestClaimIdempotent(t *testing.T) {
	in := inState(t, Active)
	first, out, err := in.Claim(winner(), at(2*time.Minute))
	if err != nil || out != OutcomeClaimed {
		t.Fatalf("first claim: %v, %v", out, err)
	}
	if first.State != Claimed || first.Seq != in.Seq+1 || *first.ClaimedBy != winner() {
		t.Fatalf("first claim gave state %v seq %d claim %+v", first.State, first.Seq, first.ClaimedBy)
	}
	// Repeats, at later times and once with the clock set back: identical
	// lease and identical outcome every time.
	prev := first
	for _, now := range []time.Time{at(2 * time.Minute), at(30 * time.Minute), at(time.Second), beforeDeadline} {
		again, out, err := prev.Claim(winner(), now)
		if err != nil || out != OutcomeAlreadyClaimed {
			t.Fatalf("repeat at %v: %v, %v", now.Sub(base), out, err)
		}
		if d := cmp.Diff(first, again); d != "" {
			t.Fatalf("repeat at %v changed the lease (-first +again):\n%s", now.Sub(base), d)
		}
		prev = again
	}
	// A transition copies the claim tuple: the lease it returns shares no
	// memory with its input.
	consumed, err := first.Consume(winner(), at(3*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	consumed.ClaimedBy.Run = "run-evil"
	if first.ClaimedBy.Run != "run-7" {
		t.Fatalf("claim tuple shared between leases")
	}
}

func TestClaimEachFieldConflicts(t *testing.T) {
	mutate := []struct {
		name string
		f    func(*ClaimTuple)
	}{
		{"principal", func(c *ClaimTuple) { c.Principal = "uid:1001" }},
		{"run", func(c *ClaimTuple) { c.Run = "run-8" }},
		{"attempt", func(c *ClaimTuple) { c.Attempt = 2 }},
		{"station", func(c *ClaimTuple) { c.Station = "station-b" }},
		{"return_digest", func(c *ClaimTuple) { c.ReturnDigest = returnDigestB }},
	}
	for _, m := range mutate {
		t.Run("claimed/"+m.name, func(t *testing.T) {
			in := inState(t, Claimed)
			tup := winner()
			m.f(&tup)
			got, out, err := in.Claim(tup, at(4*time.Minute))
			wantErr(t, err, receipts.LeaseClaimConflict, nil)
			if out != OutcomeNone {
				t.Fatalf("outcome = %v", out)
			}
			if d := cmp.Diff(in, got); d != "" {
				t.Fatalf("conflict changed the lease (-in +got):\n%s", d)
			}
			// The winner is unaffected by the refused tuple.
			if _, out, err := got.Claim(winner(), at(5*time.Minute)); err != nil || out != OutcomeAlreadyClaimed {
				t.Fatalf("winner after conflict: %v, %v", out, err)
			}
		})
		// On an ACTIVE lease, a tuple naming another principal, run, attempt
		// or station is not authorised; another return digest is simply the
		// first claim.
		t.Run("active/"+m.name, func(t *testing.T) {
			in := inState(t, Active)
			tup := winner()
			m.f(&tup)
			got, out, err := in.Claim(tup, at(4*time.Minute))
			if m.name == "return_digest" {
				if err != nil || out != OutcomeClaimed || *got.ClaimedBy != tup {
					t.Fatalf("claim with another return digest: %v, %v", out, err)
				}
				return
			}
			wantErr(t, err, receipts.LeaseClaimConflict, nil)
			if d := cmp.Diff(in, got); d != "" {
				t.Fatalf("conflict changed the lease (-in +got):\n%s", d)
			}
		})
	}
}

func TestClaimMalformedTuple(t *testing.T) {
	tests := []struct {
		field string
		f     func(*ClaimTuple)
	}{
		{"claim.principal", func(c *ClaimTuple) { c.Principal = "" }},
		{"claim.run", func(c *ClaimTuple) { c.Run = "run 7" }},
		{"claim.station", func(c *ClaimTuple) { c.Station = "st\x00" }},
		{"claim.return_digest", func(c *ClaimTuple) { c.ReturnDigest = "sha256:ABC" }},
		{"claim.return_digest", func(c *ClaimTuple) { c.ReturnDigest = digest("hmac-sha256:", 'a') }},
	}
	for _, tc := range tests {
		for _, s := range []State{Active, Claimed} {
			t.Run(s.String()+"/"+tc.field, func(t *testing.T) {
				in := inState(t, s)
				tup := winner()
				tc.f(&tup)
				got, out, err := in.Claim(tup, at(4*time.Minute))
				wantErr(t, err, "", ErrInvalid)
				if f := err.(*Error).Field; f != tc.field || out != OutcomeNone {
					t.Fatalf("field %q outcome %v; want %q", f, out, tc.field)
				}
				if d := cmp.Diff(in, got); d != "" {
					t.Fatalf("lease changed (-in +got):\n%s", d)
				}
			})
		}
	}
}
