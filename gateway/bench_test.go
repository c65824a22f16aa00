package gateway_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/internal/gen"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/pipeline"
)

// report500 is a 500-finding report over the bundled vocabulary (about
// 120 KB), as cut import govulncheck writes one.
func report500(tb testing.TB) []byte {
	tb.Helper()
	v, err := gen.FromVocabulary(examples.Vocabulary)
	if err != nil {
		tb.Fatal(err)
	}
	return v.Report(500, 1)
}

// uniqueKeys gives the parts of doc keys of request n: each request is
// then its own projection, with its own plan and seal (identical ones would
// share a seal and its uses).
func uniqueKeys(doc []byte, n int64) []byte {
	return bytes.ReplaceAll(doc, []byte(`"key":"part/`), []byte(`"key":"r`+strconv.FormatInt(n, 10)+`/part/`))
}

// latencies runs n requests over c clients and returns each one's
// duration and the wall time of all.
func latencies(b *testing.B, n, c int, do func(i int64) error) ([]time.Duration, time.Duration) {
	b.Helper()
	d := make([]time.Duration, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				t0 := time.Now()
				if err := do(i); err != nil {
					failed.CompareAndSwap(nil, err)
					return
				}
				d[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	slices.Sort(d)
	return d, wall
}

// quantile is the q-quantile of sorted durations, in milliseconds.
func quantile(d []time.Duration, q float64) float64 {
	if len(d) == 0 {
		return 0
	}
	i := int(q*float64(len(d))+0.5) - 1
	i = min(max(i, 0), len(d)-1)
	return float64(d[i]) / float64(time.Millisecond)
}

// stageSums reads the gateway's stage histograms of route: the sum of
// seconds and the count of each stage.
func stageSums(e *env, route string) map[string][2]float64 {
	_, m := e.get("/metrics")
	out := map[string][2]float64{}
	sc := bufio.NewScanner(bytes.NewReader(m))
	sc.Buffer(nil, 1<<20)
	prefix := `privacycut_gateway_stage_seconds_`
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) || !strings.Contains(line, `route="`+route+`"`) {
			continue
		}
		kind, rest, _ := strings.Cut(line[len(prefix):], "{")
		_, stage, _ := strings.Cut(rest, `stage="`)
		stage, _, _ = strings.Cut(stage, `"`)
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		s := out[stage]
		switch kind {
		case "sum":
			s[0] = v
		case "count":
			s[1] = v
		}
		out[stage] = s
	}
	return out
}

// directP50 and directP99 are the direct calls' quantiles of this run, by
// concurrency, and directCPU their CPU time a request: the gateway's
// overhead is measured against them.
var directP50, directP99, directCPU = map[int]float64{}, map[int]float64{}, map[int]float64{}

// cpuUsed is the CPU time, user and system, of this process (clients,
// stand-in, gateway, vault) and of its verifier plugins.
func cpuUsed(tb testing.TB) time.Duration {
	tb.Helper()
	pids := plugins(tb)
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	d := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	for _, pid := range pids {
		// utime and stime are fields 14 and 15 of the line, in clock
		// ticks of 10 ms (USER_HZ).
		f := procStat(pid)
		if len(f) < 13 {
			continue // gone since it was listed
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		d += time.Duration(utime+stime) * 10 * time.Millisecond
	}
	return d
}

// BenchmarkGateway500 measures, in one run, the 500-finding report cut by
// the gateway (native API, verifier out of process in a warm plugin,
// openai-chat@1 to the stand-in) on an irreversible route and on a
// reversible one (a durable lease in the vault over its socket), against
// POSTing the same wire body to the stand-in directly, at 1 and 16
// concurrent clients. Custom metrics: p50-ms, p99-ms, req/s, cpu-ms/req
// (the CPU time of this process and of the plugins a request), and for
// the gateway overhead-p50-ms, overhead-p99-ms and overhead-cpu-ms/req (the
// gateway's figure less the direct call's at the same concurrency: the
// CPU a request costs the gateway, its vault and its plugins, the stand-in
// and the clients taken out) and the mean milliseconds of each stage
// (prepare includes the vault's grant, seal the lease's binding,
// rehydrate is in the vault).
func BenchmarkGateway500(b *testing.B) {
	// The example's schema with room for an answer of 500 findings.
	schema := bytes.ReplaceAll(bytes.ReplaceAll(examples.Schema, []byte(`"maxItems": 200`), []byte(`"maxItems": 1000`)),
		[]byte(`"max": 200`), []byte(`"max": 1000`))
	e := newEnv(b, envOptions{plugins: 2, schema: schema})
	doc := report500(b)
	// The wire body the gateway sends for the report: what a runtime
	// holding the key would POST itself.
	before := len(e.provider.Requests())
	if err := e.cut("chat-irr", uniqueKeys(doc, -1)); err != nil {
		b.Fatal(err)
	}
	reqs := e.provider.Requests()
	if len(reqs) != before+1 {
		b.Fatalf("the stand-in got %d requests, want 1", len(reqs)-before)
	}
	wire := reqs[len(reqs)-1].Body
	direct := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprintf("direct/c%d", c), func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			cpu0 := cpuUsed(b)
			d, wall := latencies(b, b.N, c, func(int64) error {
				req, _ := http.NewRequest(http.MethodPost, e.upstream+standin.OpenAIPath, bytes.NewReader(wire))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+e.cred)
				resp, err := direct.Do(req)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("direct: HTTP %d", resp.StatusCode)
				}
				return nil
			})
			directCPU[c] = float64(cpuUsed(b)-cpu0) / float64(time.Millisecond) / float64(b.N)
			directP50[c], directP99[c] = quantile(d, 0.50), quantile(d, 0.99)
			b.ReportMetric(directCPU[c], "cpu-ms/req")
			b.ReportMetric(directP50[c], "p50-ms")
			b.ReportMetric(directP99[c], "p99-ms")
			b.ReportMetric(float64(b.N)/wall.Seconds(), "req/s")
		})
	}
	var seq atomic.Int64
	for _, rt := range []struct{ name, route string }{{"irreversible", "chat-irr"}, {"reversible", "chat"}} {
		for _, c := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/c%d", rt.name, c), func(b *testing.B) {
				bodies := make([][]byte, b.N)
				for i := range bodies {
					bodies[i] = uniqueKeys(doc, seq.Add(1))
				}
				s0 := stageSums(e, rt.route)
				b.SetBytes(int64(len(doc)))
				b.ResetTimer()
				cpu0 := cpuUsed(b)
				d, wall := latencies(b, b.N, c, func(i int64) error { return e.cut(rt.route, bodies[i]) })
				cpu := float64(cpuUsed(b)-cpu0) / float64(time.Millisecond) / float64(b.N)
				b.StopTimer()
				b.ReportMetric(cpu, "cpu-ms/req")
				p50, p99 := quantile(d, 0.50), quantile(d, 0.99)
				b.ReportMetric(p50, "p50-ms")
				b.ReportMetric(p99, "p99-ms")
				b.ReportMetric(float64(b.N)/wall.Seconds(), "req/s")
				if _, ok := directP50[c]; ok {
					b.ReportMetric(p50-directP50[c], "overhead-p50-ms")
					b.ReportMetric(p99-directP99[c], "overhead-p99-ms")
					b.ReportMetric(cpu-directCPU[c], "overhead-cpu-ms/req")
				}
				s1 := stageSums(e, rt.route)
				for stage, v := range s1 {
					if n := v[1] - s0[stage][1]; n > 0 {
						b.ReportMetric(1000*(v[0]-s0[stage][0])/n, stage+"-ms")
					}
				}
			})
		}
	}
	// The verifier's share: the same irreversible cut with the verifier in
	// the gateway's process (what the plugin's process boundary costs).
	b.Run("irreversible-verifier-in-process/c1", func(b *testing.B) {
		ei := newEnv(b, envOptions{schema: schema, verifier: pipeline.InProcess()})
		b.SetBytes(int64(len(doc)))
		b.ResetTimer()
		d, wall := latencies(b, b.N, 1, func(int64) error { return ei.cut("chat-irr", uniqueKeys(doc, seq.Add(1))) })
		b.StopTimer()
		b.ReportMetric(quantile(d, 0.50), "p50-ms")
		b.ReportMetric(quantile(d, 0.99), "p99-ms")
		b.ReportMetric(float64(b.N)/wall.Seconds(), "req/s")
		if s := stageSums(ei, "chat-irr")["verify"]; s[1] > 0 {
			b.ReportMetric(1000*s[0]/s[1], "verify-ms")
		}
	})
}
