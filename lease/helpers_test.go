package lease

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

// The synthetic clock: every time in these tests is base plus a duration.
var base = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return base.Add(d) }

const (
	lifetime    = time.Hour
	maxLifetime = 2 * time.Hour
)

// Moments relative to the deadline (base + lifetime) used by the tables.
var (
	beforeDeadline = at(lifetime - time.Nanosecond)
	atDeadline     = at(lifetime)
	afterDeadline  = at(lifetime + time.Minute)
)

func digest(prefix string, c byte) string { return prefix + strings.Repeat(string(c), 64) }

var (
	testID        = FormatID([16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})
	sourceDigest  = digest("hmac-sha256:", '1')
	schemaDigest  = digest("sha256:", '4')
	candDigest    = digest("hmac-sha256:", '2')
	exportDigest  = digest("sha256:", '3')
	returnDigestA = digest("sha256:", 'a')
	returnDigestB = digest("sha256:", 'b')
	cutEvent      = "seal:01j9zq7k2m"
)

func params() Params {
	return Params{
		ID:                 testID,
		Run:                "run-7",
		Attempt:            1,
		Target:             "https://model.example/v1/answer",
		Purpose:            "dependency-triage",
		Namespace:          "abcdefghij",
		SourceDigest:       sourceDigest,
		OutputSchemaDigest: schemaDigest,
		KeyEpoch:           3,
		Station:            "station-a",
		Principal:          "uid:1000",
		Lifetime:           lifetime,
		Need:               30 * time.Minute,
	}
}

// winner is the claim tuple the fixtures claim with.
func winner() ClaimTuple {
	return ClaimTuple{Principal: "uid:1000", Run: "run-7", Attempt: 1, Station: "station-a", ReturnDigest: returnDigestA}
}

func mustNew(t testing.TB) Lease {
	t.Helper()
	l, err := New(params(), base, maxLifetime)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

func mustBound(t testing.TB) Lease {
	t.Helper()
	l, err := mustNew(t).Bind(cutEvent, candDigest, exportDigest, at(time.Minute))
	if err != nil {
		t.Fatalf("Bind: %v", err)
	}
	return l
}

// inState builds, through the public API only, a lease in state s: ACTIVE is
// bound, CLAIMED is claimed by winner(), CONSUMED consumed by it, REVOKED
// revoked while claimed, EXPIRED expired while claimed. No key is destroyed.
func inState(t testing.TB, s State) Lease {
	t.Helper()
	l := mustBound(t)
	if s == Active {
		return l
	}
	l, _, err := l.Claim(winner(), at(2*time.Minute))
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	switch s {
	case Claimed:
		return l
	case Consumed:
		l, err = l.Consume(winner(), at(3*time.Minute))
	case Revoked:
		l, err = l.Revoke(at(3 * time.Minute))
	case Expired:
		l, err = l.Expire(atDeadline)
	default:
		t.Fatalf("inState(%v)", s)
	}
	if err != nil {
		t.Fatalf("to %v: %v", s, err)
	}
	return l
}

// wantErr asserts that err carries code (when code != "") or wraps sentinel
// (when sentinel != nil), or is nil when both are zero.
func wantErr(t testing.TB, err error, code receipts.Code, sentinel error) {
	t.Helper()
	if code == "" && sentinel == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("got nil error, want code %q sentinel %v", code, sentinel)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is %T, not *Error", err, err)
	}
	if e.Code != code {
		t.Fatalf("code = %q, want %q (%v)", e.Code, code, err)
	}
	if !errors.Is(err, sentinel) && sentinel != nil {
		t.Fatalf("error %v does not wrap %v", err, sentinel)
	}
	if sentinel == nil && e.Err != nil {
		t.Fatalf("refusal %v also wraps %v", err, e.Err)
	}
}
