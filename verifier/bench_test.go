package verifier

import (
	"crypto/sha256"
	"testing"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

// benchRequest builds an honest irreversible cut of a projection of size
// bytes, sent as profile (nil: export@1).
func benchRequest(b *testing.B, size int, wire *receipts.Wire) Request {
	b.Helper()
	text := bigText(size / 4)
	parts := []testPart{{"block", "a", text}, {"history", "b", text}, {"tool", "c", text}, {"artifact", "d", text}}
	opt := cutOptions{Wire: wire}
	if wire != nil {
		opt.Schema = []byte(testSchema)
	}
	req := makeCut(b, parts, opt)
	if v := Verify(req); v.Verdict != receipts.VerdictPass {
		b.Fatalf("benchmark cut does not verify: %+v", v.Claims)
	}
	return req
}

// BenchmarkVerify verifies a 64 MiB cut in process, and hashes the same
// source bytes with SHA-256 in the same run: the ratio of the two MB/s
// figures (and sha256s/op, the verification's time in SHA-256s of the
// source hashed beside each one) is the one to compare across machines.
func BenchmarkVerify(b *testing.B) {
	req := benchRequest(b, 64<<20, nil)
	b.Run("in-process", func(b *testing.B) { benchVerify(b, req) })
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(req.Source)))
		for b.Loop() {
			sha256.Sum256(req.Source)
		}
	})
}

// BenchmarkVerifyWire is BenchmarkVerify for the cut sent as
// openai-chat@1: the wire body (the 64 MiB of texts again) is rendered,
// compared and searched too.
func BenchmarkVerifyWire(b *testing.B) {
	req := benchRequest(b, 64<<20, wireOf(receipts.WireOpenAIChat))
	b.Run("in-process", func(b *testing.B) { benchVerify(b, req) })
}

// BenchmarkVerifyReport is BenchmarkVerifyWire for a projection of 120 KB,
// the size of a 500-finding report: what a gateway's verifier does for
// each request, where the costs that do not grow with the text (the plan,
// the receipts, the wire body's rendering and its own strings) count.
//
// after-pause is the same with a millisecond's pause before each
// verification (not timed), as a warm plugin sits idle while its gateway
// cuts and sends: caches and the runtime cool in between.
func BenchmarkVerifyReport(b *testing.B) {
	req := benchRequest(b, 120<<10, wireOf(receipts.WireOpenAIChat))
	b.Run("in-process", func(b *testing.B) { benchVerify(b, req) })
	b.Run("after-pause", func(b *testing.B) {
		b.SetBytes(int64(len(req.Source)))
		for b.Loop() {
			b.StopTimer()
			time.Sleep(time.Millisecond)
			b.StartTimer()
			if v := Verify(req); v.Verdict != receipts.VerdictPass {
				b.Fatal(v.Verdict)
			}
		}
	})
}

func benchVerify(b *testing.B, req Request) {
	b.SetBytes(int64(len(req.Source)))
	start := cpuTime()
	var hashing time.Duration // SHA-256 of the same bytes, beside each verification
	for b.Loop() {
		b.StopTimer()
		t := time.Now()
		sha256.Sum256(req.Source)
		hashing += time.Since(t)
		b.StartTimer()
		if v := Verify(req); v.Verdict != receipts.VerdictPass {
			b.Fatal(v.Verdict)
		}
	}
	// The time of a verification in SHA-256s of the source, measured
	// under the same load.
	b.ReportMetric(float64(b.Elapsed())/float64(hashing), "sha256s/op")
	// CPU time, all threads (GC included, SHA-256 runs excluded): a
	// figure that depends less on how busy the machine is.
	if cpu := cpuTime() - start - hashing; cpu > 0 {
		perOp := cpu.Seconds() / float64(b.N)
		b.ReportMetric(perOp*1000, "cpu-ms/op")
		b.ReportMetric(float64(len(req.Source))/1e6/perOp, "MB/cpu-s")
	}
}
