package censor

import (
	"context"
	"crypto/sha256"
	"sync"
	"testing"
	"time"

	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/internal/gen"
	"github.com/privacycut/privacycut/receipts"
)

var cutBench struct {
	once  sync.Once
	vocab *grammar.Vocabulary
	doc   []byte
}

func cutBenchSetup(b *testing.B) {
	cutBench.once.Do(func() {
		gv := gen.NewVocab()
		v, err := grammar.LoadVocabulary(gv.JSON())
		if err != nil {
			b.Fatal(err)
		}
		cutBench.vocab = v
		cutBench.doc = gen.Projection(gv.Records(gen.Options{Seed: 1, Size: 64 << 20}))
	})
}

// BenchmarkCut is the censor alone on a 64 MiB projection: decode, grammar,
// tokens, export, digests, receipts.
func BenchmarkCut(b *testing.B) {
	cutBenchSetup(b)
	k := testKey(b, 1)
	d, refs := grammar.LoadProjection(cutBench.doc, grammar.LoadOptions{})
	if refs != nil {
		b.Fatal(refs)
	}
	p, err := NewPlan(d, cutBench.vocab, k, PlanOptions{Consumer: receipts.Consumer{Kind: "m", ID: "m"}, Purpose: "p",
		Target: "https://m.example/", Now: time.Now()})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(cutBench.doc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, refs := grammar.LoadProjection(cutBench.doc, grammar.LoadOptions{})
		if refs != nil {
			b.Fatal(refs)
		}
		if _, err := Cut(context.Background(), Input{Doc: d, Vocabulary: cutBench.vocab, Plan: p, Key: k}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCutSHA256Baseline(b *testing.B) {
	cutBenchSetup(b)
	b.SetBytes(int64(len(cutBench.doc)))
	for i := 0; i < b.N; i++ {
		sha256.Sum256(cutBench.doc)
	}
}
