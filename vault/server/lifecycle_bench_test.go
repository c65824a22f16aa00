package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
)

// lifecycleValues is the number of owner values granted in each lease of
// the lifecycle benchmark.
const lifecycleValues = 8

// BenchmarkLifecycle is the vault under a gateway's load: full lease
// lifecycles (seal → grant → bind → claim → consume, which destroys the
// data key) over the unix socket, each client on its own connection, one
// lifecycle per iteration. It reports lifecycles per second, the p50 and
// p99 latency of one lifecycle, and, measured in the same run before the
// lifecycles, the commits per second of a bare Badger database with
// SyncWrites under 32 writers, and the ratio of the two, and the CPU time
// (user and system) of the process per lifecycle: clients and vault share
// the process, so it is the CPU a lifecycle costs both sides.
func BenchmarkLifecycle(b *testing.B) {
	for _, clients := range []int{1, 32} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			raw := rawBadgerCommits(b, 32, 2*time.Second/3)
			f := start(b, Options{})
			cs := dialClients(b, f.sock, clients)
			ps := canaries(lifecycleValues, 16)
			var next atomic.Int64
			lat := make([]time.Duration, b.N)
			var wg sync.WaitGroup
			errs := make(chan error, clients)
			b.ResetTimer()
			cpu0 := cpuTime(b)
			t0 := time.Now()
			for _, c := range cs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						s := time.Now()
						if err := lifecycle(c, ps); err != nil {
							errs <- err
							return
						}
						lat[i] = time.Since(s)
					}
				}()
			}
			wg.Wait()
			el := time.Since(t0)
			cpu := cpuTime(b) - cpu0
			b.StopTimer()
			close(errs)
			if err := <-errs; err != nil {
				b.Fatal(err)
			}
			slices.Sort(lat)
			rate := float64(b.N) / el.Seconds()
			b.ReportMetric(rate, "lifecycles/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
			b.ReportMetric(raw, "badger-commits/s")
			b.ReportMetric(rate/raw, "x-badger")
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/lifecycle")
		})
	}
}

// dialClients dials n clients to the vault at sock, each on its own
// connection, closed when b ends.
func dialClients(b *testing.B, sock string, n int) []*client.Client {
	b.Helper()
	cs := make([]*client.Client, n)
	for i := range cs {
		c, err := client.Dial(sock)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		cs[i] = c
	}
	return cs
}

// cpuTime is the CPU time, user and system, this process has used: the
// clients' and the vault's, which share it.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// lifecycle runs one lease through grant, bind, claim and consume, and
// checks that the consume destroyed the data key.
func lifecycle(c *client.Client, ps []seal.Pair) error {
	sealed, err := c.Seal(ctx, ps)
	if err != nil {
		return err
	}
	res, err := c.CreateLease(ctx, service.CreateRequest{Run: "run-1", Attempt: 1, Target: "https://model.example/v1",
		Purpose: "triage", SourceDigest: hexDigest("hmac-sha256:"), RemoteDeadlineS: 60, ReturnWindowS: 60,
		Lifetime: 30 * time.Minute, Values: sealed})
	if err != nil {
		return err
	}
	ex := exportOf(res.Tokens)
	if err := c.Bind(ctx, res.Lease.ID, "evt:seal", hexDigest("hmac-sha256:"), receipts.SHA256(ex), ex); err != nil {
		return err
	}
	cr := service.ClaimRequest{Run: "run-1", Attempt: 1, Station: "station-a", ReturnDigest: hexDigest("sha256:")}
	if _, err := c.Claim(ctx, res.Lease.ID, cr); err != nil {
		return err
	}
	l, err := c.Consume(ctx, res.Lease.ID, cr)
	if err != nil {
		return err
	}
	if l.State != lease.Consumed || !l.KeyDestroyed {
		return errLifecycle
	}
	return nil
}

var errLifecycle = errors.New("consume did not destroy the key")

// rawBadgerCommits measures a bare Badger database (default options,
// SyncWrites) in a directory on the same file system: writers goroutines
// each commit one small transaction after another for about d; it returns
// commits per second.
func rawBadgerCommits(b *testing.B, writers int, d time.Duration) float64 {
	b.Helper()
	db, err := badger.Open(badger.DefaultOptions(filepath.Join(b.TempDir(), "raw")).WithSyncWrites(true).WithLogger(nil))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var n atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	t0 := time.Now()
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			k := make([]byte, 17)
			v := make([]byte, 512)
			for time.Now().Before(deadline) {
				rand.Read(k)
				if err := db.Update(func(txn *badger.Txn) error { return txn.Set(k, v) }); err != nil {
					b.Error(err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(n.Load()) / time.Since(t0).Seconds()
}
