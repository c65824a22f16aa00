package gateway

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stages of a request, the label values of the stage histogram.
const (
	stagePrepare   = "prepare"   // plan, parse, check and cut (with the vault's grant)
	stageVerify    = "verify"    // the independent verifier
	stageSeal      = "seal"      // the seal (with the lease's binding)
	stageSend      = "send"      // admission and delivery
	stageRehydrate = "rehydrate" // rehydration inside the vault
)

var stages = []string{stagePrepare, stageVerify, stageSeal, stageSend, stageRehydrate}

// buckets are the upper bounds of the latency histograms, in seconds.
var buckets = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}

// metrics are the gateway's counters and histograms. Their labels are
// route names (of loaded routes only: a name a request gives that is no
// route is counted as "-"), API names, codes and stage names: never a
// value, a digest of source material or anything else a request carries.
type metrics struct {
	mu       sync.Mutex
	requests map[[3]string]uint64 // api, route, code → count
	stage    map[[2]string]*histo // route, stage → histogram
	uses     map[string]uint64    // route → admissions
	inFlight atomic.Int64
	peers    atomic.Uint64 // unix peers refused
	restarts func() int64  // verifier plugins replaced
}

type histo struct {
	counts []uint64 // per bucket, cumulative at render time
	count  uint64
	sum    float64
}

func newMetrics(restarts func() int64) *metrics {
	return &metrics{requests: map[[3]string]uint64{}, stage: map[[2]string]*histo{}, uses: map[string]uint64{}, restarts: restarts}
}

func (m *metrics) request(api, route, code string) {
	m.mu.Lock()
	m.requests[[3]string{api, route, code}]++
	m.mu.Unlock()
}

func (m *metrics) observe(route, stage string, d time.Duration) {
	s := d.Seconds()
	m.mu.Lock()
	h := m.stage[[2]string{route, stage}]
	if h == nil {
		h = &histo{counts: make([]uint64, len(buckets))}
		m.stage[[2]string{route, stage}] = h
	}
	for i, b := range buckets {
		if s <= b {
			h.counts[i]++
			break
		}
	}
	h.count++
	h.sum += s
	m.mu.Unlock()
}

func (m *metrics) admitted(route string, n int) {
	m.mu.Lock()
	m.uses[route] += uint64(n)
	m.mu.Unlock()
}

// write renders the Prometheus text exposition format (version 0.0.4),
// families and series in a fixed order.
func (m *metrics) write(w io.Writer) error {
	var b strings.Builder
	m.mu.Lock()
	b.WriteString("# HELP privacycut_gateway_requests_total Requests answered, by API, route and outcome code.\n")
	b.WriteString("# TYPE privacycut_gateway_requests_total counter\n")
	keys := make([][3]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [3]string) int {
		return strings.Compare(a[0]+"\x00"+a[1]+"\x00"+a[2], b[0]+"\x00"+b[1]+"\x00"+b[2])
	})
	for _, k := range keys {
		fmt.Fprintf(&b, "privacycut_gateway_requests_total{api=%s,route=%s,code=%s} %d\n", quote(k[0]), quote(k[1]), quote(k[2]), m.requests[k])
	}
	b.WriteString("# HELP privacycut_gateway_stage_seconds Time spent in each stage of a request, by route.\n")
	b.WriteString("# TYPE privacycut_gateway_stage_seconds histogram\n")
	hk := make([][2]string, 0, len(m.stage))
	for k := range m.stage {
		hk = append(hk, k)
	}
	slices.SortFunc(hk, func(a, b [2]string) int {
		if c := strings.Compare(a[0], b[0]); c != 0 {
			return c
		}
		return slices.Index(stages, a[1]) - slices.Index(stages, b[1])
	})
	for _, k := range hk {
		h := m.stage[k]
		labels := "route=" + quote(k[0]) + ",stage=" + quote(k[1])
		var cum uint64
		for i, ub := range buckets {
			cum += h.counts[i]
			fmt.Fprintf(&b, "privacycut_gateway_stage_seconds_bucket{%s,le=%s} %d\n", labels, quote(strconv.FormatFloat(ub, 'g', -1, 64)), cum)
		}
		fmt.Fprintf(&b, "privacycut_gateway_stage_seconds_bucket{%s,le=\"+Inf\"} %d\n", labels, h.count)
		fmt.Fprintf(&b, "privacycut_gateway_stage_seconds_sum{%s} %s\n", labels, strconv.FormatFloat(h.sum, 'g', -1, 64))
		fmt.Fprintf(&b, "privacycut_gateway_stage_seconds_count{%s} %d\n", labels, h.count)
	}
	b.WriteString("# HELP privacycut_gateway_admissions_total Egress admissions (deliveries, redeliveries included), by route.\n")
	b.WriteString("# TYPE privacycut_gateway_admissions_total counter\n")
	rk := make([]string, 0, len(m.uses))
	for k := range m.uses {
		rk = append(rk, k)
	}
	slices.Sort(rk)
	for _, k := range rk {
		fmt.Fprintf(&b, "privacycut_gateway_admissions_total{route=%s} %d\n", quote(k), m.uses[k])
	}
	m.mu.Unlock()
	b.WriteString("# HELP privacycut_gateway_in_flight Requests being served.\n")
	b.WriteString("# TYPE privacycut_gateway_in_flight gauge\n")
	fmt.Fprintf(&b, "privacycut_gateway_in_flight %d\n", m.inFlight.Load())
	b.WriteString("# HELP privacycut_gateway_peers_refused_total Unix socket connections refused by the peer uid allow-list.\n")
	b.WriteString("# TYPE privacycut_gateway_peers_refused_total counter\n")
	fmt.Fprintf(&b, "privacycut_gateway_peers_refused_total %d\n", m.peers.Load())
	b.WriteString("# HELP privacycut_gateway_verifier_restarts_total Verifier plugin processes replaced after a failure.\n")
	b.WriteString("# TYPE privacycut_gateway_verifier_restarts_total counter\n")
	var r int64
	if m.restarts != nil {
		r = m.restarts()
	}
	fmt.Fprintf(&b, "privacycut_gateway_verifier_restarts_total %d\n", r)
	_, err := io.WriteString(w, b.String())
	return err
}

// quote writes a label value as the exposition format wants it. Label
// values here are route names, API, code and stage words: none needs an
// escape, but one is escaped all the same.
func quote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
