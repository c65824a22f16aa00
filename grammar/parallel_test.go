package grammar

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/internal/gen"
	"github.com/privacycut/privacycut/receipts"
)

// TestParallelMatchesSequential: the chunked parallel parse gives exactly the
// stats, owner spans and refusals (with their line numbers) of one pass.
func TestParallelMatchesSequential(t *testing.T) {
	gv := gen.NewVocab()
	v, err := LoadVocabulary(gv.JSON())
	if err != nil {
		t.Fatal(err)
	}
	text := gv.Records(gen.Options{Seed: 7, Size: 3 * parallelMin, Parts: 1})[0]
	// Plant refusals at scattered records, including near the chunk bounds.
	lines := strings.SplitAfter(text, "\n")
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 40; i++ {
		k := r.IntN(len(lines) - 1)
		lines[k] = "prose line " + strings.Repeat("x", i) + "\n"
	}
	text = strings.Join(lines, "")
	p := NewParser(v, Options{Limits: Limits{MaxRefusals: 1000}})

	seq := recParser{p: p, v: v, text: []byte(text), mode: spansOwners}
	var wantSpans []Span
	var wantRefs []receipts.Refusal
	wantSt := seq.run(0, len(text), 0, func(s []Span) { wantSpans = append(wantSpans, s...) }, &wantRefs)

	gotSt, gotOwners, gotRefs := p.parallel([]byte(text), spansOwners)
	gotSpans := slices.Collect(gotOwners.All())
	if diff := cmp.Diff(wantSt, gotSt); diff != "" {
		t.Errorf("stats (-seq +par):\n%s", diff)
	}
	if diff := cmp.Diff(wantRefs, gotRefs); diff != "" {
		t.Errorf("refusals (-seq +par):\n%s", diff)
	}
	if diff := cmp.Diff(wantSpans, gotSpans); diff != "" {
		t.Errorf("owner spans (-seq +par):\n%s", diff)
	}
	// Each of two CPUs' shares fills more than one chunk of spanChunks,
	// and records' spans straddle the chunk bounds.
	if len(wantRefs) != 40 || len(wantSpans) < 3*spanChunk {
		t.Fatalf("%d refusals, %d spans", len(wantRefs), len(wantSpans))
	}
	// Owners and Parse agree with the one-pass parse too.
	owners, st, refs := p.Owners([]byte(text))
	if spans := slices.Collect(owners.All()); owners.Len() != len(spans) || !cmp.Equal(spans, wantSpans) || !cmp.Equal(st, wantSt) || !cmp.Equal(refs, wantRefs) {
		t.Error("Owners differs from the sequential parse")
	}
	// A loop may stop early: All then yields no more (the runtime panics if
	// an iterator goes on after its loop has ended).
	n := 0
	for range owners.All() {
		if n++; n == spanChunk+1 {
			break
		}
	}
	if n != spanChunk+1 {
		t.Errorf("stopped after %d spans", n)
	}
}

// TestPlainWord checks the word-at-a-time value scan against the byte table.
func TestPlainWord(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var b [8]byte
	for i := 0; i < 200000; i++ {
		for j := range b {
			switch r.IntN(4) {
			case 0:
				b[j] = byte(r.IntN(256))
			default:
				b[j] = byte(0x20 + r.IntN(0x5f))
			}
		}
		want := true
		for _, c := range b {
			if valueByte[c] != vbPlain {
				want = false
			}
		}
		if got := plainWord(binary.LittleEndian.Uint64(b[:])); got != want {
			t.Fatalf("plainWord(%q) = %v, want %v", b, got, want)
		}
	}
}

// TestSpaceIndex checks the word-at-a-time field scan.
func TestSpaceIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 100000; i++ {
		b := make([]byte, r.IntN(40))
		for j := range b {
			b[j] = byte(r.IntN(256))
			if b[j] == ' ' {
				b[j] = 'x'
			}
		}
		want := -1
		if len(b) > 0 && r.IntN(2) == 0 {
			want = r.IntN(len(b))
			b[want] = ' '
			if r.IntN(2) == 0 && want+1 < len(b) {
				b[want+1] = ' '
			}
		}
		if got := spaceIndex(b); got != want {
			t.Fatalf("spaceIndex(%q) = %d, want %d", b, got, want)
		}
	}
}

// TestStrsetModes: duplicate keys do not push a set into whole-key hashing,
// keys sharing a sketch beyond the bound do, and lookups agree either way.
func TestStrsetModes(t *testing.T) {
	var dups [][]byte
	for i := 0; i < 20; i++ {
		dups = append(dups, []byte("v1.0.0"), []byte("golang.org/x/net"))
	}
	if s := newStrset(dups, true); s.full || s.len() != 2 || !s.has([]byte("v1.0.0")) || s.has([]byte("v1.0.1")) {
		t.Fatalf("duplicates: full=%v len=%d", s.full, s.len())
	}
	// Same length, same first, middle and last eight bytes: one sketch.
	var same [][]byte
	for _, c := range "abcdefghij" {
		same = append(same, []byte("0123456789abcdef"+string(c)+"----------------0123456789abcdef"))
	}
	s := newStrset(same, false)
	if !s.full {
		t.Fatal("ten keys sharing a sketch did not switch to whole-key hashing")
	}
	for i, k := range same {
		if s.lookup(k) != int32(i) {
			t.Fatalf("lookup of key %d", i)
		}
	}
	if s.has([]byte("0123456789abcdefz----------------0123456789abcdef")) {
		t.Fatal("absent key found")
	}
}
