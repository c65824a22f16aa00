package server

import "testing"

// BenchmarkRehydrateSocket is issue 5's rehydration figure end to end over
// the unix socket: a 16 MiB return streamed to the vault, which claims the
// lease (durably), opens its map into the arena, validates and substitutes
// the whole return, keys the receipt, consumes the lease and destroys its
// key (durably), and streams the result back. Each iteration needs a fresh
// bound lease, granted outside the timer.
func BenchmarkRehydrateSocket(b *testing.B) {
	f := start(b, Options{})
	ek := newEvidenceKey(b)
	schema := rhSchema("triage", 1<<20)
	fresh := func() ([]byte, string) {
		res := f.grantSchema(b, rhPairs(), schema)
		f.bind(b, res)
		var d rhDoc
		note := "The HTTP/2 rapid reset (GO-2023-2102) affects every server built from this module; owner noted in " + res.Tokens[0] + "."
		for size := 0; size < 16<<20; size += 2*len(res.Tokens[0]) + len(note) + 40 {
			d.Items = append(d.Items, rhItem{Owner: res.Tokens[0], Team: res.Tokens[1], Note: note})
		}
		return d.bytes(b), res.Lease.ID
	}
	ret, id := fresh()
	b.SetBytes(int64(len(ret)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i > 0 {
			b.StopTimer()
			ret, id = fresh()
			b.StartTimer()
		}
		req := rhRequest(b, f.c, id, schema, ret, ek)
		res, err := f.c.Rehydrate(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if res.Receipt.ReturnDigest != req.Claim.ReturnDigest {
			b.Fatal("receipt for another return")
		}
		clear(res.Output)
	}
}
