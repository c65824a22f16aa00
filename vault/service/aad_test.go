package service

import (
	"testing"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
)

// TestMapBoundToGrant: a sealed map opens only with the lease record it was
// granted with. A record whose grant fields changed in the store (another
// principal, station, run or attempt, a later deadline, another namespace)
// does not open it: LEASE_UNRECOVERABLE, not the map. That includes the
// output schema digest, changed or dropped. Bind-time fields are not
// bound.
func TestMapBoundToGrant(t *testing.T) {
	e := newEnv(t)
	v := e.open(t)
	pairs, _ := pairsOf("aad", 3)
	res := grant(t, v, pairs)
	l, err := v.store.Get(res.Lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := v.store.Map(l.ID)
	if err != nil {
		t.Fatal(err)
	}
	open := func(l lease.Lease) error {
		dek, err := v.keys.Unwrap(l.ID)
		if err != nil {
			t.Fatal(err)
		}
		defer dek.Wipe()
		m, err := decryptMap(v.arena, dek, l, sealed)
		if err == nil {
			m.s.Wipe()
		}
		return err
	}
	if err := open(l); err != nil {
		t.Fatalf("the granted record: %v", err)
	}
	for name, change := range map[string]func(*lease.Lease){
		"principal": func(l *lease.Lease) { l.Principal = "uid:4242" },
		"station":   func(l *lease.Lease) { l.Station = "station-b" },
		"run":       func(l *lease.Lease) { l.Run = "run-2" },
		"attempt":   func(l *lease.Lease) { l.Attempt++ },
		"deadline":  func(l *lease.Lease) { l.Deadline = l.Deadline.Add(24 * time.Hour) },
		"created":   func(l *lease.Lease) { l.CreatedAt = l.CreatedAt.Add(time.Nanosecond) },
		"namespace": func(l *lease.Lease) { l.Namespace = "aaaaaaaaaa" },
		"target":    func(l *lease.Lease) { l.Target += "x" },
		"purpose":   func(l *lease.Lease) { l.Purpose = "audit" },
		"source":    func(l *lease.Lease) { l.SourceDigest = digest("hmac-sha256:") },
		"epoch":     func(l *lease.Lease) { l.KeyEpoch++ },
		"schema":    func(l *lease.Lease) { l.OutputSchemaDigest = digest("sha256:") },
		"no schema": func(l *lease.Lease) { l.OutputSchemaDigest = "" },
	} {
		changed := l
		change(&changed)
		if err := open(changed); CodeOf(err) != receipts.LeaseUnrecoverable {
			t.Errorf("%s changed: %v, want LEASE_UNRECOVERABLE", name, err)
		}
	}
	// Bind sets the cut event and digests after the grant: not bound.
	bind(t, v, res)
	bound, err := v.store.Get(res.Lease.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := open(bound); err != nil {
		t.Fatalf("the bound record: %v", err)
	}
}
