package grammar

import (
	"crypto/sha256"
	"runtime"
	"testing"
	"time"
)

func TestMinBench(t *testing.T) {
	benchSetup(nil)
	p := NewParser(benchInput.vocab, Options{})
	for _, procs := range []int{1} {
		runtime.GOMAXPROCS(procs)
		var bp, bs time.Duration = 1 << 62, 1 << 62
		for i := 0; i < 25; i++ {
			t0 := time.Now()
			for _, tx := range benchInput.texts {
				p.Parse(tx, nil)
			}
			bp = min(bp, time.Since(t0))
			t0 = time.Now()
			h := sha256.New()
			for _, tx := range benchInput.texts {
				h.Write(tx)
			}
			h.Sum(nil)
			bs = min(bs, time.Since(t0))
		}
		mb := float64(benchInput.size) / 1e6
		t.Logf("procs %d parse %.0f MB/s  sha %.0f MB/s  ratio %.2f", procs, mb/bp.Seconds(), mb/bs.Seconds(), bs.Seconds()/bp.Seconds())
	}
}
