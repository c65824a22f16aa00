package verifier

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestScanStraddlingUnits: cutting the export texts into units, however
// small, finds the same occurrences, counted and located in text order, as
// scanning each text whole.
func TestScanStraddlingUnits(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	voc := testVocabulary(t)
	words := []string{"ask triage.explain", " owner.team=\"", "redacted:team:1", "a b", "\"", "\n", " ", "a", "b", "@", "="}
	found := 0
	for iter := range 200 {
		c := &check{voc: voc, src: &projection{Parts: make([]srcPart, 1+rng.IntN(2))}}
		for range 1 + rng.IntN(3) {
			var text []byte
			for range rng.IntN(60) {
				text = append(text, words[rng.IntN(len(words))]...)
			}
			c.exp = append(c.exp, exportPart{kind: "block", text: text})
		}
		values := [][]byte{[]byte("a b"), []byte("b\na"), []byte("\" a"), []byte("a@b=")}
		// Merge the units of each part, as exportResidual reads them.
		merge := func(rs []scanResult) []scanResult {
			merged := make([]scanResult, len(c.exp))
			for p := range merged {
				merged[p].part = p
			}
			for _, r := range rs {
				m := &merged[r.part]
				if m.found == 0 && r.found > 0 {
					m.s, m.e = r.s, r.e
				}
				m.found += r.found
			}
			return merged
		}
		want := merge(c.scanStraddling(values, 1<<30))
		for _, chunk := range []int{1, 2, 3, 7, 64} {
			got := merge(c.scanStraddling(values, chunk))
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(scanResult{})); diff != "" {
				t.Fatalf("iteration %d, units of %d bytes (-whole +units):\n%s", iter, chunk, diff)
			}
		}
		found += want[0].found
	}
	if found == 0 {
		t.Fatal("no occurrence found: the test searches for nothing")
	}
}
