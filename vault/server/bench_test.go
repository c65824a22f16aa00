package server

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/privacycut/privacycut/receipts"
)

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

// BenchmarkBindExport is the transport of a large request over the
// socket: each iteration a Bind carrying a 130 KB export (a 500-finding
// report's), which the vault reads in full and refuses (the lease does
// not exist), from 1 and from 16 clients on connections of their own.
// Custom metrics: the CPU time, user and system, of the process (clients
// and vault) per Bind, and the Go heap's size from the system at the end.
func BenchmarkBindExport(b *testing.B) {
	for _, clients := range []int{1, 16} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			f := start(b, Options{})
			export := bytes.Repeat([]byte("x"), 130<<10)
			digest, candidate := receipts.SHA256(export), hexDigest("hmac-sha256:")
			cs := dialClients(b, f.sock, clients)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for _, c := range cs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(b.N) {
						if err := c.Bind(ctx, "pcl:aaaaaaaaaaaaaaaaaaaaaaaaaa", "evt:seal", candidate, digest, export); err == nil {
							b.Error("bind of an unknown lease accepted")
							return
						}
					}
				}()
			}
			wg.Wait()
			cpu := cpuTime(b) - cpu0
			b.StopTimer()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-us/op")
			b.ReportMetric(float64(m.HeapSys)/(1<<20), "heap-sys-MiB")
		})
	}
}
