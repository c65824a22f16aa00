package lease

import (
	"strings"
	"time"
	"unicode/utf8"
)

const (
	shaPrefix  = "sha256:"
	hmacPrefix = "hmac-sha256:"
	idPrefix   = "pcl:"
	b32        = "abcdefghijklmnopqrstuvwxyz234567"
)

// Check verifies the invariants of a lease read back from storage. It
// returns nil or an *Error with code LEASE_UNRECOVERABLE naming the first
// field at fault. The invariants:
//
//   - schema, id, namespace, digests and strings are well formed;
//   - state is one of the five legal states;
//   - created_at ≤ updated_at, created_at < deadline, all times in years 1–9999;
//   - the binding (cut_event, candidate_digest, export_digest) is all set or all
//     empty;
//   - a claim is present in CLAIMED and CONSUMED, absent in ACTIVE, names the
//     lease's principal, run, attempt and station, and implies a binding;
//   - key_destroyed implies a terminal state;
//   - a live lease was last updated before its deadline, an EXPIRED one at or
//     after it;
//   - seq counts the changes the record shows: one for the binding, one for
//     the claim, one for the terminal move, one for the key destruction.
func (l Lease) Check() error { return l.check("check") }

func (l Lease) check(op string) error {
	bad := func(field string) error { return corrupt(op, field, l.State) }
	if l.Schema != Schema {
		return bad("schema")
	}
	if f := l.badGrantField(); f != "" {
		return bad(f)
	}
	if !l.State.Valid() {
		return bad("state")
	}
	if !validTime(l.CreatedAt) {
		return bad("created_at")
	}
	if !validTime(l.Deadline) || !l.CreatedAt.Before(l.Deadline) {
		return bad("deadline")
	}
	if !validTime(l.UpdatedAt) || l.UpdatedAt.Before(l.CreatedAt) {
		return bad("updated_at")
	}
	if l.Bound() || l.CutEvent != "" || l.CandidateDigest != "" {
		switch {
		case !ValidID(l.CutEvent):
			return bad("cut_event")
		case !validDigest(l.CandidateDigest, hmacPrefix):
			return bad("candidate_digest")
		case !validDigest(l.ExportDigest, shaPrefix):
			return bad("export_digest")
		}
	}
	if c := l.ClaimedBy; c != nil {
		if c.badField() != "" || !l.authorises(*c) || !l.Bound() || l.State == Active {
			return bad("claim")
		}
	} else if l.State == Claimed || l.State == Consumed {
		return bad("claim")
	}
	if l.KeyDestroyed && !l.State.Terminal() {
		return bad("key_destroyed")
	}
	if l.Live() && !l.UpdatedAt.Before(l.Deadline) {
		return bad("updated_at")
	}
	if l.State == Expired && l.UpdatedAt.Before(l.Deadline) {
		return bad("updated_at")
	}
	if l.Seq != l.changes() {
		return bad("seq")
	}
	if l.Seq == 0 && !l.UpdatedAt.Equal(l.CreatedAt) {
		return bad("updated_at")
	}
	return nil
}

// changes is the number of changes a well-formed record has undergone.
func (l Lease) changes() uint64 {
	var n uint64
	for _, b := range []bool{l.Bound(), l.ClaimedBy != nil, l.State.Terminal(), l.KeyDestroyed} {
		if b {
			n++
		}
	}
	return n
}

// badGrantField returns the JSON name of the first malformed field set at
// grant, or "".
func (l Lease) badGrantField() string {
	switch {
	case !validLeaseID(l.ID):
		return "id"
	case !ValidID(l.Run):
		return "run"
	case !validText(l.Target):
		return "target"
	case !validText(l.Purpose):
		return "purpose"
	case !validB32(l.Namespace, 10):
		return "namespace"
	case !validDigest(l.SourceDigest, hmacPrefix):
		return "source_digest"
	case l.OutputSchemaDigest != "" && !validDigest(l.OutputSchemaDigest, shaPrefix):
		return "output_schema_digest"
	case !ValidID(l.Station):
		return "station"
	case !ValidID(l.Principal):
		return "principal"
	}
	return ""
}

// Forward reports whether next is a true successor of prev: the same lease,
// reached by zero or more legal transitions, as a crash test requires of two
// records read one after the other. It checks both records, then that the
// fields fixed at grant are equal, seq and updated_at never decrease, the
// state is reachable from prev's, a binding, a claim and a key destruction
// once recorded are kept unchanged, and an equal seq means an identical
// record. A failure is ErrNotForward naming the field, or the Check error of
// either record.
func Forward(prev, next Lease) error {
	const op = "forward"
	if err := prev.check(op); err != nil {
		return err
	}
	if err := next.check(op); err != nil {
		return err
	}
	back := func(field string) error {
		return &Error{Op: op, State: next.State, Field: field, Err: ErrNotForward}
	}
	if f := grantDiff(prev, next); f != "" {
		return back(f)
	}
	if next.Seq < prev.Seq {
		return back("seq")
	}
	if next.UpdatedAt.Before(prev.UpdatedAt) {
		return back("updated_at")
	}
	if !reachable(prev.State, next.State) {
		return back("state")
	}
	if prev.Bound() && (next.CutEvent != prev.CutEvent || next.CandidateDigest != prev.CandidateDigest || next.ExportDigest != prev.ExportDigest) {
		return back("cut_event")
	}
	if prev.ClaimedBy != nil && (next.ClaimedBy == nil || *next.ClaimedBy != *prev.ClaimedBy) {
		return back("claim")
	}
	if prev.KeyDestroyed && !next.KeyDestroyed {
		return back("key_destroyed")
	}
	if next.Seq == prev.Seq && !same(prev, next) {
		return back("seq")
	}
	return nil
}

// grantDiff returns the JSON name of the first field fixed at grant that
// differs between a and b, or "".
func grantDiff(a, b Lease) string {
	switch {
	case a.Schema != b.Schema:
		return "schema"
	case a.ID != b.ID:
		return "id"
	case a.Run != b.Run:
		return "run"
	case a.Attempt != b.Attempt:
		return "attempt"
	case a.Target != b.Target:
		return "target"
	case a.Purpose != b.Purpose:
		return "purpose"
	case a.Namespace != b.Namespace:
		return "namespace"
	case a.SourceDigest != b.SourceDigest:
		return "source_digest"
	case a.OutputSchemaDigest != b.OutputSchemaDigest:
		return "output_schema_digest"
	case a.KeyEpoch != b.KeyEpoch:
		return "key_epoch"
	case a.Station != b.Station:
		return "station"
	case a.Principal != b.Principal:
		return "principal"
	case !a.CreatedAt.Equal(b.CreatedAt):
		return "created_at"
	case !a.Deadline.Equal(b.Deadline):
		return "deadline"
	}
	return ""
}

// same reports whether a and b are the same record (times compared as
// instants).
func same(a, b Lease) bool {
	if grantDiff(a, b) != "" {
		return false
	}
	if (a.ClaimedBy == nil) != (b.ClaimedBy == nil) || a.ClaimedBy != nil && *a.ClaimedBy != *b.ClaimedBy {
		return false
	}
	return a.CutEvent == b.CutEvent && a.CandidateDigest == b.CandidateDigest &&
		a.ExportDigest == b.ExportDigest && a.State == b.State && a.Seq == b.Seq &&
		a.UpdatedAt.Equal(b.UpdatedAt) && a.KeyDestroyed == b.KeyDestroyed
}

// validTime accepts a non-zero time whose UTC year is in 1–9999, the range
// encoding/json can write.
func validTime(t time.Time) bool {
	if t.IsZero() {
		return false
	}
	y := t.UTC().Year()
	return y >= 1 && y <= 9999
}

// ValidID reports whether s is a valid run id, station, principal or cut
// event id: 1–MaxIDLen bytes of printable ASCII without spaces.
func ValidID(s string) bool {
	if len(s) == 0 || len(s) > MaxIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// validText accepts 1–MaxTextLen bytes of valid UTF-8 without C0 or C1
// control characters or DEL.
func validText(s string) bool {
	if len(s) == 0 || len(s) > MaxTextLen || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || (r >= 0x7f && r <= 0x9f) {
			return false
		}
	}
	return true
}

// validDigest accepts prefix followed by 64 lower-case hex digits.
func validDigest(s, prefix string) bool {
	h, ok := strings.CutPrefix(s, prefix)
	if !ok || len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if !('0' <= h[i] && h[i] <= '9' || 'a' <= h[i] && h[i] <= 'f') {
			return false
		}
	}
	return true
}

// validB32 accepts exactly n characters of lower-case base32.
func validB32(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(b32, s[i]) < 0 {
			return false
		}
	}
	return true
}

// validLeaseID accepts exactly what FormatID writes: "pcl:" and the canonical
// unpadded base32 of 16 bytes, whose last character carries two zero bits.
func validLeaseID(s string) bool {
	r, ok := strings.CutPrefix(s, idPrefix)
	if !ok || !validB32(r, 26) {
		return false
	}
	return strings.IndexByte(b32, r[25])&3 == 0
}
