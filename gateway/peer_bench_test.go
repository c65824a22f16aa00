package gateway_test

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"testing"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/internal/gen"
)

// peerCorpusEnv names a file BenchmarkPeerCorpus writes its corpus to
// (JSON: each report's text and planted owner values), for
// scripts/bench-peer to run the peer detector over the same texts.
const peerCorpusEnv = "PRIVACYCUT_PEER_CORPUS"

// peerReport is one report of the corpus.
type peerReport struct {
	Findings   int      `json:"findings"`
	Text       string   `json:"text"`   // its parts' texts, concatenated
	Owners     []string `json:"owners"` // the distinct owner values planted in it
	projection []byte
}

var ownerRE = regexp.MustCompile(`owner\.[a-z]+="([^"]+)"`)

// peerCorpus is 50 reports over the bundled vocabulary, of 1 to 500
// findings each, as cut import govulncheck writes them.
func peerCorpus(tb testing.TB) []peerReport {
	tb.Helper()
	v, err := gen.FromVocabulary(examples.Vocabulary)
	if err != nil {
		tb.Fatal(err)
	}
	const reports = 50
	out := make([]peerReport, 0, reports)
	for i := range reports {
		n := 1 + i*499/(reports-1)
		doc := v.Report(n, uint64(1000+i))
		var d struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		}
		if err := json.Unmarshal(doc, &d); err != nil {
			tb.Fatal(err)
		}
		r := peerReport{Findings: n, projection: doc}
		for _, p := range d.Parts {
			r.Text += p.Text
		}
		for _, m := range ownerRE.FindAllStringSubmatch(r.Text, -1) {
			if !slices.Contains(r.Owners, m[1]) {
				r.Owners = append(r.Owners, m[1])
			}
		}
		out = append(out, r)
	}
	return out
}

// BenchmarkPeerCorpus sends each report of the corpus to the gateway, one
// native request a report, on the irreversible openai-chat@1 route, one
// client; MB/s is of report text. owner-left-% is the share of planted
// owner values found verbatim in what reached the provider stand-in.
func BenchmarkPeerCorpus(b *testing.B) {
	corpus := peerCorpus(b)
	if path := os.Getenv(peerCorpusEnv); path != "" {
		data, err := json.Marshal(corpus)
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	e := newEnv(b, envOptions{plugins: 2})
	var text, owners int64
	for _, r := range corpus {
		text += int64(len(r.Text))
		owners += int64(len(r.Owners))
	}
	b.SetBytes(text)
	sent0 := len(e.provider.Requests())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for j, r := range corpus {
			if err := e.cut("chat-irr", uniqueKeys(r.projection, int64(i*len(corpus)+j))); err != nil {
				b.Fatalf("report %d (%d findings): %v", j, r.Findings, err)
			}
		}
	}
	b.StopTimer()
	sent := e.provider.Requests()[sent0:]
	if len(sent) != b.N*len(corpus) {
		b.Fatalf("the stand-in got %d requests, want %d", len(sent), b.N*len(corpus))
	}
	var left int64
	for k, req := range sent {
		for _, o := range corpus[k%len(corpus)].Owners {
			// No owner value holds a character JSON escapes.
			if bytes.Contains(req.Body, []byte(o)) {
				left++
			}
		}
	}
	b.ReportMetric(100*float64(left)/float64(owners*int64(b.N)), "owner-left-%")
	b.ReportMetric(float64(owners), "owners")
	b.ReportMetric(float64(len(corpus)), "reports")
	if left != 0 {
		b.Errorf("%d planted owner values reached the provider verbatim", left)
	}
}
