package service

import (
	"testing"
)

// BenchmarkCreateLease measures a grant of 8 sealed values: open into the
// arena, 8 token MACs, map build, seal, durable wrap (fsync), Badger commit
// (SyncWrites).
func BenchmarkCreateLease(b *testing.B) {
	e := newEnv(b)
	e.opt.ArenaSize = 4 << 20
	v, err := Open(e.opt)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	if p := v.Prove(); !p.Accepted() {
		b.Skipf("profile not accepted: %v", p.Reasons)
	}
	ps, _ := pairsOf("bench", 8)
	req := request(b, v, ps)
	b.ResetTimer()
	for b.Loop() {
		if _, err := v.CreateLease(ctx, principal, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWithMap measures opening a lease's map into the arena (unwrap
// the data key, decrypt, check) and wiping it.
func BenchmarkWithMap(b *testing.B) {
	e := newEnv(b)
	v, err := Open(e.opt)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	if p := v.Prove(); !p.Accepted() {
		b.Skipf("profile not accepted: %v", p.Reasons)
	}
	ps, _ := pairsOf("bench", 8)
	res, err := v.CreateLease(ctx, principal, request(b, v, ps))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if err := v.WithMap(ctx, res.Lease.ID, func(*Map) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
