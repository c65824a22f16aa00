package grammar

import (
	"crypto/sha256"
	"sync"
	"testing"

	"github.com/privacycut/privacycut/internal/gen"
)

var benchInput struct {
	once  sync.Once
	vocab *Vocabulary
	doc   []byte
	texts [][]byte
	size  int
}

// benchSetup generates a 64 MiB projection over a vulndb-sized vocabulary.
func benchSetup(b testing.TB) {
	benchInput.once.Do(func() {
		gv := gen.NewVocab()
		v, err := LoadVocabulary(gv.JSON())
		if err != nil {
			b.Fatal(err)
		}
		texts := gv.Records(gen.Options{Seed: 1, Size: 64 << 20})
		benchInput.vocab = v
		benchInput.doc = gen.Projection(texts)
		for _, t := range texts {
			benchInput.texts = append(benchInput.texts, []byte(t))
			benchInput.size += len(t)
		}
	})
}

// BenchmarkCheck parses the text of a 64 MiB projection (the grammar check
// proper, over already-decoded parts).
func BenchmarkCheck(b *testing.B) {
	benchSetup(b)
	p := NewParser(benchInput.vocab, Options{})
	b.SetBytes(int64(benchInput.size))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, t := range benchInput.texts {
			if _, refs := p.Parse(t, nil); refs != nil {
				b.Fatal(refs)
			}
		}
	}
}

// BenchmarkCheckDocument is the whole of `cut check` after reading the file:
// strict JSON decoding, lineage and the grammar.
func BenchmarkCheckDocument(b *testing.B) {
	benchSetup(b)
	p := NewParser(benchInput.vocab, Options{})
	b.SetBytes(int64(len(benchInput.doc)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, refs := LoadProjection(benchInput.doc, LoadOptions{})
		if refs != nil {
			b.Fatal(refs)
		}
		if res := Check(d, p, 0, nil); !res.OK() {
			b.Fatal(res.Refusals)
		}
	}
}

// BenchmarkSHA256Baseline hashes the same text bytes as BenchmarkCheck, in the
// same run: the ratio of the two is the figure that survives a noisy machine.
func BenchmarkSHA256Baseline(b *testing.B) {
	benchSetup(b)
	b.SetBytes(int64(benchInput.size))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h := sha256.New()
		for _, t := range benchInput.texts {
			h.Write(t)
		}
		h.Sum(nil)
	}
}
