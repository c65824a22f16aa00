package lease

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/receipts"
)

func TestNewDeadline(t *testing.T) {
	tests := []struct {
		name     string
		lifetime time.Duration
		need     time.Duration
		max      time.Duration
		want     time.Duration // deadline - now
		code     receipts.Code
	}{
		{"lifetime under max", time.Hour, 30 * time.Minute, 2 * time.Hour, time.Hour, ""},
		{"lifetime capped by max", 5 * time.Hour, 30 * time.Minute, 2 * time.Hour, 2 * time.Hour, ""},
		{"need exactly covered", time.Hour, time.Hour, 2 * time.Hour, time.Hour, ""},
		{"zero need", time.Minute, 0, time.Hour, time.Minute, ""},
		// C7: remote_deadline_s + return_window_s beyond the maximum lifetime.
		{"need over max", 5 * time.Hour, 3 * time.Hour, 2 * time.Hour, 0, receipts.LeaseDurabilityInsufficient},
		{"need over requested lifetime", time.Hour, time.Hour + time.Nanosecond, 2 * time.Hour, 0, receipts.LeaseDurabilityInsufficient},
		{"need over capped lifetime", 3 * time.Hour, 2*time.Hour + time.Second, 2 * time.Hour, 0, receipts.LeaseDurabilityInsufficient},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := params()
			p.Lifetime, p.Need = tc.lifetime, tc.need
			l, err := New(p, base, tc.max)
			wantErr(t, err, tc.code, nil)
			if err != nil {
				if d := cmp.Diff(Lease{}, l); d != "" {
					t.Fatalf("refusal returned a lease:\n%s", d)
				}
				return
			}
			if got := l.Deadline.Sub(l.CreatedAt); got != tc.want {
				t.Fatalf("deadline - created = %v, want %v", got, tc.want)
			}
			want := Lease{
				Schema: Schema, ID: testID, Run: "run-7", Attempt: 1,
				Target: "https://model.example/v1/answer", Purpose: "dependency-triage",
				Namespace: "abcdefghij", SourceDigest: sourceDigest, OutputSchemaDigest: schemaDigest, KeyEpoch: 3,
				Station: "station-a", Principal: "uid:1000",
				CreatedAt: base, Deadline: base.Add(tc.want), State: Active, UpdatedAt: base,
			}
			if d := cmp.Diff(want, l); d != "" {
				t.Fatalf("New (-want +got):\n%s", d)
			}
			if err := l.Check(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNewNormalisesTime(t *testing.T) {
	zone := time.FixedZone("UTC+5", 5*3600)
	l, err := New(params(), base.In(zone), maxLifetime)
	if err != nil {
		t.Fatal(err)
	}
	if l.CreatedAt.Location() != time.UTC || l.Deadline.Location() != time.UTC || l.UpdatedAt.Location() != time.UTC {
		t.Fatalf("times not in UTC: %v %v %v", l.CreatedAt, l.Deadline, l.UpdatedAt)
	}
	if !l.CreatedAt.Equal(base) {
		t.Fatalf("created_at = %v, want %v", l.CreatedAt, base)
	}
}

func TestNewInvalid(t *testing.T) {
	tests := []struct {
		field string
		f     func(*Params, *time.Time, *time.Duration)
	}{
		{"now", func(_ *Params, now *time.Time, _ *time.Duration) { *now = time.Time{} }},
		{"now", func(_ *Params, now *time.Time, _ *time.Duration) { *now = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }},
		{"max_lifetime", func(_ *Params, _ *time.Time, m *time.Duration) { *m = 0 }},
		{"lifetime", func(p *Params, _ *time.Time, _ *time.Duration) { p.Lifetime = -time.Second }},
		{"lifetime", func(p *Params, _ *time.Time, _ *time.Duration) { p.Lifetime = 0 }},
		{"lifetime", func(p *Params, now *time.Time, m *time.Duration) {
			*now = time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC)
			p.Lifetime, *m = 2*time.Hour, 2*time.Hour
		}},
		{"need", func(p *Params, _ *time.Time, _ *time.Duration) { p.Need = -1 }},
		{"id", func(p *Params, _ *time.Time, _ *time.Duration) { p.ID = "" }},
		{"id", func(p *Params, _ *time.Time, _ *time.Duration) { p.ID = strings.ToUpper(testID) }},
		{"id", func(p *Params, _ *time.Time, _ *time.Duration) { p.ID = testID[:len(testID)-1] + "b" }}, // non-zero padding bits
		{"id", func(p *Params, _ *time.Time, _ *time.Duration) { p.ID = "pcx:" + testID[4:] }},
		{"run", func(p *Params, _ *time.Time, _ *time.Duration) { p.Run = "" }},
		{"run", func(p *Params, _ *time.Time, _ *time.Duration) { p.Run = strings.Repeat("r", MaxIDLen+1) }},
		{"target", func(p *Params, _ *time.Time, _ *time.Duration) { p.Target = "https://x/\n" }},
		{"target", func(p *Params, _ *time.Time, _ *time.Duration) { p.Target = strings.Repeat("t", MaxTextLen+1) }},
		{"purpose", func(p *Params, _ *time.Time, _ *time.Duration) { p.Purpose = "bad\xffutf8" }},
		{"purpose", func(p *Params, _ *time.Time, _ *time.Duration) { p.Purpose = "c1\u0085" }},
		{"namespace", func(p *Params, _ *time.Time, _ *time.Duration) { p.Namespace = "abcdefghi" }},
		{"namespace", func(p *Params, _ *time.Time, _ *time.Duration) { p.Namespace = "abcdefghi1" }},
		{"source_digest", func(p *Params, _ *time.Time, _ *time.Duration) { p.SourceDigest = exportDigest }},
		{"output_schema_digest", func(p *Params, _ *time.Time, _ *time.Duration) { p.OutputSchemaDigest = sourceDigest }},
		{"station", func(p *Params, _ *time.Time, _ *time.Duration) { p.Station = "a b" }},
		{"principal", func(p *Params, _ *time.Time, _ *time.Duration) { p.Principal = "uid:\x7f" }},
	}
	for _, tc := range tests {
		t.Run(tc.field, func(t *testing.T) {
			p, now, m := params(), base, maxLifetime
			tc.f(&p, &now, &m)
			l, err := New(p, now, m)
			wantErr(t, err, "", ErrInvalid)
			if got := err.(*Error).Field; got != tc.field {
				t.Fatalf("field = %q, want %q", got, tc.field)
			}
			if d := cmp.Diff(Lease{}, l); d != "" {
				t.Fatalf("invalid New returned a lease:\n%s", d)
			}
		})
	}
	// Long but legal values are accepted at the limit.
	p := params()
	p.Run, p.Target = strings.Repeat("r", MaxIDLen), strings.Repeat("é", MaxTextLen/2)
	if _, err := New(p, base, maxLifetime); err != nil {
		t.Fatalf("limit values refused: %v", err)
	}
}

func TestNeedFor(t *testing.T) {
	maxS := uint64(math.MaxInt64 / int64(time.Second))
	tests := []struct {
		remote, window uint64
		want           time.Duration
		code           receipts.Code
	}{
		{0, 0, 0, ""},
		{600, 1200, 30 * time.Minute, ""},
		{maxS, 0, time.Duration(maxS) * time.Second, ""},
		{maxS, 1, 0, receipts.LeaseDurabilityInsufficient},
		{math.MaxUint64, math.MaxUint64, 0, receipts.LeaseDurabilityInsufficient},
		{1, math.MaxUint64, 0, receipts.LeaseDurabilityInsufficient},
	}
	for _, tc := range tests {
		got, err := NeedFor(tc.remote, tc.window)
		wantErr(t, err, tc.code, nil)
		if got != tc.want {
			t.Errorf("NeedFor(%d, %d) = %v, want %v", tc.remote, tc.window, got, tc.want)
		}
	}
	// The plan's need feeds New: C7 end to end.
	need, err := NeedFor(3600, 3601)
	if err != nil {
		t.Fatal(err)
	}
	p := params()
	p.Lifetime, p.Need = 4*time.Hour, need
	_, err = New(p, base, 2*time.Hour)
	wantErr(t, err, receipts.LeaseDurabilityInsufficient, nil)
}

func TestFormatID(t *testing.T) {
	var zero, ones [16]byte
	for i := range ones {
		ones[i] = 0xff
	}
	for _, tc := range []struct {
		in   [16]byte
		want string
	}{
		{zero, "pcl:aaaaaaaaaaaaaaaaaaaaaaaaaa"},
		{ones, "pcl:77777777777777777777777774"},
	} {
		got := FormatID(tc.in)
		if got != tc.want {
			t.Errorf("FormatID = %q, want %q", got, tc.want)
		}
		if !validLeaseID(got) {
			t.Errorf("FormatID output %q not accepted", got)
		}
	}
}
