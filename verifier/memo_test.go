package verifier

import (
	"testing"

	"github.com/privacycut/privacycut/receipts"
)

// TestLookupMemoSharedAcrossTexts: two recognizers sharing one memo, as the
// walk's do, still refuse a version of another module and an item that only
// looks like the remembered one.
func TestLookupMemoSharedAcrossTexts(t *testing.T) {
	voc := testVocabulary(t)
	a, b := newRecognizer(voc, false), newRecognizer(voc, true)
	b.memo = a.memo
	for _, tt := range []struct {
		r    *recognizer
		text string
		want *firstRefusal
	}{
		{a, "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417\n", nil},
		{b, "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417\n", nil},
		// v0.15.0 is remembered as a version of golang.org/x/net only.
		{b, "finding GO-2023-2102 golang.org/x/crypto@v0.15.0 affected https://go.dev/issue/63417\n", &firstRefusal{receipts.UnknownVersion, 1, 42, 7}},
		{a, "finding GO-2023-2102 golang.org/x/crypto@v0.14.0 affected fixed=v0.17.0 https://go.dev/issue/63417\n", &firstRefusal{receipts.UnknownVersion, 1, 65, 7}},
		{b, "finding GO-2023-210 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417\n", &firstRefusal{receipts.UnknownDiagnostic, 1, 9, 11}},
		{a, "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/6341\n", &firstRefusal{receipts.UnknownCitation, 1, 56, 25}},
		{b, "ask triage.explain\nask triage.explainx\n", &firstRefusal{receipts.UnknownQuestion, 2, 5, 15}},
	} {
		got, _ := recognize(tt.r, []byte(tt.text))
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("%q: refusal %+v, want %+v", tt.text, got, tt.want)
		}
	}
}
