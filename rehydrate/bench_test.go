package rehydrate

import (
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

const benchSchemaDoc = `{"type":"object","additionalProperties":false,"required":["findings"],"properties":{
  "findings":{"type":"array","items":{"type":"object","required":["owner_module","advice"],"properties":{
    "owner_module":{"type":"string","maxLength":64,"x-privacycut-rehydrate":{"category":"module","purpose":"dependency-triage","max":1000000}},
    "owner_team":{"type":"string","x-privacycut-rehydrate":{"category":"team","purpose":"dependency-triage","max":1000000}},
    "severity":{"type":"string","maxLength":16},
    "advice":{"type":"string","maxLength":4000}}}},
  "summary":{"type":"string"}}}`

// benchReturn builds a return of at least size bytes: findings that echo
// 64 modules and 16 teams, with a paragraph of advice each that quotes a
// token in prose.
func benchReturn(tb testing.TB, size int) ([]byte, *fakeIssued) {
	iss := newFake()
	var mods, teams []string
	for i := 0; i < 64; i++ {
		mods = append(mods, iss.issue(testNS, "module", "git.corp.example/svc/"+strings.Repeat("m", i%7)+"-"+string(rune('a'+i%26))))
	}
	for i := 0; i < 16; i++ {
		teams = append(teams, iss.issue(testNS, "team", "team-"+string(rune('a'+i))+" \"core\""))
	}
	advice := "Upgrade golang.org/x/net to v0.17.0; the HTTP/2 rapid reset (GO-2023-2102) affects every server built from this module. " +
		"Owner noted in " + mods[0] + " and the change log \u00e9\\n."
	var b strings.Builder
	b.Grow(size + 1024)
	b.WriteString("{\"summary\": \"bench\", \"findings\": [\n")
	for i := 0; b.Len() < size; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(`  {"owner_module": "`)
		b.WriteString(mods[i%len(mods)])
		if i%3 == 0 {
			b.WriteString(`", "owner_team": "`)
			b.WriteString(teams[i%len(teams)])
		}
		b.WriteString(`", "severity": "high", "advice": "`)
		b.WriteString(advice)
		b.WriteString(`"}`)
	}
	b.WriteString("\n]}\n")
	return []byte(b.String()), iss
}

// mapIssued is a lean Issued over a Go map, for benchmarks: it records
// nothing, so that the figures measure this package.
type mapIssued map[string]entry

func (m mapIssued) Lookup(tok []byte) (string, bool) {
	e, ok := m[string(tok)]
	return e.category, ok && e.disclosed
}

func (m mapIssued) AppendValue(dst, tok []byte) ([]byte, error) {
	e, ok := m[string(tok)]
	if !ok {
		return dst, errNoToken
	}
	return append(dst, e.value...), nil
}

func BenchmarkRehydrate(b *testing.B) {
	s := mustSchema(b, benchSchemaDoc)
	ret, fake := benchReturn(b, 16<<20)
	iss := mapIssued(fake.m)
	b.SetBytes(int64(len(ret)))
	b.ReportAllocs()
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		res, err := Rehydrate(ret, s, testLease, iss)
		if err != nil {
			b.Fatal(err)
		}
		clear(res.Output)
	}
	reportCPU(b, cpu0, cpuOK, len(ret))
}

// reportCPU reports MB per CPU-second (all threads, GC included): on a
// shared machine wall time measures the neighbours too.
func reportCPU(b *testing.B, cpu0 time.Duration, ok bool, size int) {
	cpu1, ok1 := processCPU()
	if ok && ok1 && cpu1 > cpu0 {
		b.ReportMetric(float64(size)*float64(b.N)/1e6/(cpu1-cpu0).Seconds(), "MB/cpu-s")
	}
}

func BenchmarkValidate(b *testing.B) {
	s := mustSchema(b, benchSchemaDoc)
	ret, fake := benchReturn(b, 16<<20)
	iss := mapIssued(fake.m)
	b.SetBytes(int64(len(ret)))
	b.ReportAllocs()
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		if _, err := Validate(ret, s, testLease, iss); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu0, cpuOK, len(ret))
}

func BenchmarkApply(b *testing.B) {
	s := mustSchema(b, benchSchemaDoc)
	ret, fake := benchReturn(b, 16<<20)
	iss := mapIssued(fake.m)
	p, err := Validate(ret, s, testLease, iss)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(ret)))
	b.ReportAllocs()
	cpu0, cpuOK := processCPU()
	for b.Loop() {
		res, err := p.Apply(iss)
		if err != nil {
			b.Fatal(err)
		}
		clear(res.Output)
	}
	reportCPU(b, cpu0, cpuOK, len(ret))
}

// BenchmarkRehydrateSHA256Baseline hashes the 16 MiB return of
// BenchmarkRehydrate: the same-run baseline scripts/bench reports the
// rehydration figures against.
func BenchmarkRehydrateSHA256Baseline(b *testing.B) {
	ret, _ := benchReturn(b, 16<<20)
	b.SetBytes(int64(len(ret)))
	for b.Loop() {
		receipts.SHA256(ret)
	}
}
