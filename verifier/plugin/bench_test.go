package plugin

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/privacycut/privacycut/internal/syncbuf"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
)

// BenchmarkVerify verifies a 64 MiB cut through a running plugin, and
// through one plugin process per verification with the inputs in a sealed
// memfd (what cut prepare does), beside SHA-256 of the same source bytes
// in the same run.
func BenchmarkVerify(b *testing.B) {
	const size = 64 << 20
	text := bigText(size / 4)
	parts := []testPart{{Kind: "block", Key: "a", Text: text}, {Kind: "history", Key: "b", Text: text},
		{Kind: "tool", Key: "c", Text: text}, {Kind: "artifact", Key: "d", Text: text}}
	req := makeCut(b, parts, cutOptions{})
	if v := verifier.Verify(req); v.Verdict != receipts.VerdictPass {
		b.Fatalf("benchmark cut does not verify: %+v", v.Claims)
	}
	b.Run("plugin", func(b *testing.B) {
		var log syncbuf.Buffer
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
	b.Run("plugin-attached", func(b *testing.B) {
		exe := selfExe(b)
		b.SetBytes(int64(len(req.Source)))
		for b.Loop() {
			v, err := Run(context.Background(), exe, []string{Arg}, nil, nil, req)
			if err != nil || v.Verdict != receipts.VerdictPass {
				b.Fatal(err, v.Verdict)
			}
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(req.Source)))
		for b.Loop() {
			sha256.Sum256(req.Source)
		}
	})
}

// benchSchema is the output schema of BenchmarkVerifyWarm's cut.
const benchSchema = `{"type":"object","additionalProperties":false,"required":["findings"],"properties":{"findings":{"type":"array","items":{"type":"string"}}}}`

// BenchmarkVerifyWarm verifies a 120 KB cut sent as openai-chat@1 (a
// 500-finding report's size) through a warm plugin, as a gateway does for
// each request, with the plugin's GOGC at the runtime's default and at the
// warm plugin's own. Custom metrics (Linux): the plugin process's CPU per
// verification and its resident memory after the run.
func BenchmarkVerifyWarm(b *testing.B) {
	text := bigText(30 << 10)
	parts := []testPart{{Kind: "block", Key: "a", Text: text}, {Kind: "history", Key: "b", Text: text},
		{Kind: "tool", Key: "c", Text: text}, {Kind: "artifact", Key: "d", Text: text}}
	req := makeCut(b, parts, cutOptions{Wire: &receipts.Wire{Profile: receipts.WireOpenAIChat, Model: "model-1",
		Instruction: "Rank the findings.", MaxOutputTokens: 1024}, Schema: []byte(benchSchema)})
	for _, gogc := range []int{100, warmGOGC} {
		b.Run(fmt.Sprintf("gogc=%d", gogc), func(b *testing.B) {
			w, err := StartWarm(context.Background(), selfExe(b), []string{Arg}, []string{"GOGC=" + strconv.Itoa(gogc)}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer w.Close()
			if v, err := w.Verify(context.Background(), req); err != nil || v.Verdict != receipts.VerdictPass {
				b.Fatal(err, v.Verdict)
			}
			cpu0, _ := procUsage(w.Pid())
			b.SetBytes(int64(len(req.Source)))
			for b.Loop() {
				if _, err := w.Verify(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
			if cpu1, rss := procUsage(w.Pid()); cpu1 > 0 {
				b.ReportMetric(float64((cpu1-cpu0).Microseconds())/1000/float64(b.N), "plugin-cpu-ms/op")
				b.ReportMetric(float64(rss)/(1<<20), "plugin-rss-MiB")
			}
		})
	}
}

// procUsage returns the CPU time (user and system) and the resident bytes
// of process pid; zeros where /proc cannot be read.
func procUsage(pid int) (time.Duration, int64) {
	f, ok := procFields(pid)
	if !ok || len(f) < 22 {
		return 0, 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	pages, _ := strconv.ParseInt(f[21], 10, 64)
	// Clock ticks are 100 a second on Linux (USER_HZ).
	return time.Duration(utime+stime) * 10 * time.Millisecond, pages * int64(os.Getpagesize())
}
