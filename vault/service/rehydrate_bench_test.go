package service

import (
	"fmt"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/seal"
)

const benchSchema = `{"type":"object","additionalProperties":false,"required":["findings"],"properties":{
  "summary":{"type":"string"},
  "findings":{"type":"array","items":{"type":"object","additionalProperties":false,"required":["owner_module","advice"],"properties":{
    "owner_module":{"type":"string","maxLength":128,"x-privacycut-rehydrate":{"category":"module","purpose":"dependency-triage","max":1000000}},
    "owner_team":{"type":"string","maxLength":128,"x-privacycut-rehydrate":{"category":"team","purpose":"dependency-triage","max":1000000}},
    "severity":{"type":"string","maxLength":16},
    "advice":{"type":"string","maxLength":4000}}}}}}`

// benchPairs are 64 modules and 16 teams.
func benchPairs() []seal.Pair {
	var ps []seal.Pair
	for i := range 64 {
		ps = append(ps, seal.Pair{Category: "module", Value: fmt.Appendf(nil, "git.corp.example/payments/svc-%02d", i)})
	}
	for i := range 16 {
		ps = append(ps, seal.Pair{Category: "team", Value: fmt.Appendf(nil, "team-%02d \"core\"", i)})
	}
	return ps
}

// benchReturn is a return of at least size bytes echoing the tokens of a
// lease over benchPairs (64 modules, then 16 teams), each finding with a
// paragraph of prose that quotes a token.
func benchReturn(tokens []string, size int) []byte {
	mods, teams := tokens[:64], tokens[64:]
	advice := "Upgrade golang.org/x/net to v0.17.0; the HTTP/2 rapid reset (GO-2023-2102) affects every server built from this module. " +
		"Owner noted in " + mods[0] + " and the change log."
	var b strings.Builder
	b.Grow(size + 1024)
	b.WriteString("{\"summary\": \"bench\", \"findings\": [\n")
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(`  {"owner_module": "` + mods[i%len(mods)])
		if i%3 == 0 {
			b.WriteString(`", "owner_team": "` + teams[i%len(teams)])
		}
		b.WriteString(`", "severity": "high", "advice": "` + advice + `"}`)
	}
	b.WriteString("\n]}\n")
	return []byte(b.String())
}

// BenchmarkRehydrateVault measures Rehydrate of a 16 MiB return through the
// service: request checks (SHA-256 of the return, schema), evidence key
// opened into the arena, claim (a durable Badger commit), map opened into
// the arena, validation and substitution, the keyed receipt (HMAC of the
// output), consume (durable) and key destruction (durable). Each iteration
// needs a fresh, bound lease, granted outside the timer.
func BenchmarkRehydrateVault(b *testing.B) {
	e := newEnv(b)
	v, err := Open(e.opt)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	if p := v.Prove(); !p.Accepted() {
		b.Skipf("profile not accepted: %v", p.Reasons)
	}
	ek := evidence(b)
	ps := benchPairs()
	sch, err := rehydrate.ParseSchema([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	grantBound := func() (string, []byte) {
		creq := request(b, v, ps)
		creq.OutputSchemaDigest = sch.Digest()
		res, err := v.CreateLease(ctx, principal, creq)
		if err != nil {
			b.Fatal(err)
		}
		ex := export(res.Tokens)
		if err := v.Bind(ctx, principal, res.Lease.ID, "evt:seal1", digest("hmac-sha256:"), receipts.SHA256(ex), ex); err != nil {
			b.Fatal(err)
		}
		return res.Lease.ID, benchReturn(res.Tokens, 16<<20)
	}
	id, ret := grantBound()
	b.SetBytes(int64(len(ret)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 {
			b.StopTimer()
			id, ret = grantBound()
			b.StartTimer()
		}
		req := rhReq(b, v, id, ret, ek)
		req.Schema = []byte(benchSchema)
		res, err := v.Rehydrate(ctx, principal, req)
		if err != nil {
			b.Fatal(err)
		}
		clear(res.Output)
	}
}

// BenchmarkRehydrateVaultLibrary is the same return through package
// rehydrate alone, over the same arena-held index, for the ratio: what the
// vault adds is the claim, the map, the receipt and the durable writes.
func BenchmarkRehydrateVaultLibrary(b *testing.B) {
	e := newEnv(b)
	v, err := Open(e.opt)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	if p := v.Prove(); !p.Accepted() {
		b.Skipf("profile not accepted: %v", p.Reasons)
	}
	ps := benchPairs()
	res, err := v.CreateLease(ctx, principal, request(b, v, ps))
	if err != nil {
		b.Fatal(err)
	}
	ret := benchReturn(res.Tokens, 16<<20)
	s, err := rehydrate.ParseSchema([]byte(benchSchema))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(ret)))
	b.ReportAllocs()
	err = v.WithMap(ctx, res.Lease.ID, func(m *Map) error {
		return m.s.Reveal(func(plain []byte) error {
			iss, err := newIssued(plain, m.ns)
			if err != nil {
				return err
			}
			b.ResetTimer()
			for b.Loop() {
				out, err := rehydrate.Rehydrate(ret, s, rehydrate.Lease{Namespace: m.ns, Purpose: res.Lease.Purpose}, iss)
				if err != nil {
					return err
				}
				clear(out.Output)
			}
			return nil
		})
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkCreateLease10k measures CreateLease with many distinct values:
// open each sealed value into the arena, one token MAC each, the map built
// and sealed, the durable wrap and the Badger commit (issue 5's target: a
// reversible prepare with 10,000 distinct values within 50 ms, this
// included). A request over seal.MaxValues is refused with LIMIT_EXCEEDED.
func BenchmarkCreateLease10k(b *testing.B) {
	for _, n := range []int{1000, 4096, 10000} {
		b.Run(fmt.Sprintf("values=%d", n), func(b *testing.B) {
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
			ps := make([]seal.Pair, n)
			size := 0
			for i := range ps {
				ps[i] = seal.Pair{Category: Categories[i%len(Categories)], Value: fmt.Appendf(nil, "git.corp.example/team-%05d/service", i)}
				size += len(ps[i].Value)
			}
			st, err := v.Status()
			if err != nil {
				b.Fatal(err)
			}
			if n > seal.MaxValues {
				_, err := seal.Seal(st.SealKey, ps)
				if CodeOf(classifySeal(err)) != receipts.LimitExceeded {
					b.Fatalf("sealing %d values: %v, want LIMIT_EXCEEDED", n, err)
				}
				b.Skipf("%d values exceed seal.MaxValues (%d): refused with LIMIT_EXCEEDED", n, seal.MaxValues)
			}
			req := request(b, v, ps)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := v.CreateLease(ctx, principal, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// classifySeal gives a seal error's code the service's shape.
func classifySeal(err error) error {
	e, _ := classify("seal", err)
	return e
}
