package verifier

import (
	"context"
	"os"
	"testing"

	"github.com/privacycut/privacycut/receipts"
)

// benchRequest builds an honest irreversible cut of a 64 MiB projection.
func benchRequest(b *testing.B) Request {
	b.Helper()
	const size = 64 << 20
	text := bigText(size / 4)
	parts := []testPart{{"block", "a", text}, {"history", "b", text}, {"tool", "c", text}, {"artifact", "d", text}}
	req := makeCut(b, parts, cutOptions{})
	if v := Verify(req); v.Verdict != receipts.VerdictPass {
		b.Fatalf("benchmark cut does not verify: %+v", v.Claims)
	}
	return req
}

func BenchmarkVerify(b *testing.B) {
	req := benchRequest(b)
	b.Run("in-process", func(b *testing.B) {
		b.SetBytes(int64(len(req.Source)))
		start := cpuTime()
		for b.Loop() {
			if v := Verify(req); v.Verdict != receipts.VerdictPass {
				b.Fatal(v.Verdict)
			}
		}
		// CPU time, all threads (GC included): a figure that does not
		// depend on how busy the machine is.
		if cpu := cpuTime() - start; cpu > 0 {
			perOp := cpu.Seconds() / float64(b.N)
			b.ReportMetric(perOp*1000, "cpu-ms/op")
			b.ReportMetric(float64(len(req.Source))/1e6/perOp, "MB/cpu-s")
		}
	})
	b.Run("plugin", func(b *testing.B) {
		var log syncBuffer
		c, err := startPlugin(b, &log)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		b.SetBytes(int64(len(req.Source)))
		for b.Loop() {
			v, err := c.Checker().Verify(context.Background(), req)
			if err != nil || v.Verdict != receipts.VerdictPass {
				b.Fatal(err, v.Verdict)
			}
		}
	})
	// One plugin process per verification, inputs in a sealed memfd: what
	// cut prepare does.
	b.Run("plugin-attached", func(b *testing.B) {
		if testing.Short() {
			b.Skip("starts subprocesses")
		}
		exe, err := os.Executable()
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(req.Source)))
		for b.Loop() {
			v, err := Run(context.Background(), exe, []string{"-test.run=^$"}, []string{pluginEnv + "=1"}, nil, req)
			if err != nil || v.Verdict != receipts.VerdictPass {
				b.Fatal(err, v.Verdict)
			}
		}
	})
}
