package verifier

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMatcherBuilds: the automaton with a complete table and the one that
// follows fail links find what a naive search finds, whatever the alphabet
// (up to every byte value) and however the patterns overlap.
func TestMatcherBuilds(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 11))
	for iter := range 300 {
		alphabet := 2 + rng.IntN(4)
		if iter%10 == 0 {
			alphabet = 256
		}
		word := func(n int) []byte {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.IntN(alphabet))
			}
			return b
		}
		var pats [][]byte
		seen := map[string]bool{}
		for range 1 + rng.IntN(300) {
			p := word(1 + rng.IntN(6))
			pats = append(pats, p) // duplicates included
			seen[string(p)] = true
		}
		if iter%10 == 0 {
			for c := range 256 {
				pats = append(pats, []byte{byte(c), byte(c)})
				seen[string([]byte{byte(c), byte(c)})] = true
			}
		}
		text := word(rng.IntN(400))
		type m struct{ S, E int }
		var want []m
		for e := 1; e <= len(text); e++ {
			for s := max(0, e-6); s < e; s++ { // longest first, as the matcher reports
				if seen[string(text[s:e])] {
					want = append(want, m{s, e})
				}
			}
		}
		for _, limit := range []int{denseMax, 0} {
			mt := newMatcherLimit(pats, limit)
			if (mt.delta != nil) != (limit > 0) {
				t.Fatalf("limit %d: complete table built: %v", limit, mt.delta != nil)
			}
			var got []m
			mt.scan(text, 0, len(text), func(s, e int) bool {
				got = append(got, m{s, e})
				return true
			})
			mt.release()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("iteration %d, limit %d (-naive +matcher):\n%s", iter, limit, diff)
			}
		}
	}
}
