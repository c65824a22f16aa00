package verifier

import (
	"strings"
	"testing"

	"github.com/privacycut/privacycut/canon"
)

// TestParseVocabularyTree: one parse gives what Unmarshal and Canonicalize
// give: the same refusal, word for word, and the same canonical form.
func TestParseVocabularyTree(t *testing.T) {
	for name, doc := range map[string]string{
		"valid":          testVocab,
		"reordered":      `{"questions":[],"schema":"Vocabulary@1","revision":"r","diagnostics":[],"modules":{},"statuses":[],"citations":[]}`,
		"schema":         strings.Replace(testVocab, "Vocabulary@1", "Vocabulary@2", 1),
		"unknown field":  strings.Replace(testVocab, `"revision"`, `"extra":1,"revision"`, 1),
		"wrong type":     strings.Replace(testVocab, `"statuses":["affected","fixed"]`, `"statuses":"affected"`, 1),
		"duplicate key":  strings.Replace(testVocab, `"revision":"t/1"`, `"revision":"t/1","revision":"t/2"`, 1),
		"trailing data":  testVocab + "x",
		"array":          `[]`,
		"number too big": strings.Replace(testVocab, `"revision":"t/1"`, `"revision":1e400`, 1),
	} {
		v, tree, err := parseVocabularyTree([]byte(doc))
		var d vocabDoc
		want := canon.Unmarshal([]byte(doc), &d, canon.Options{})
		if want == nil && d.Schema != "Vocabulary@1" {
			want = errVocabSchema
		}
		if (err == nil) != (want == nil) || (err != nil && err.Error() != want.Error()) {
			t.Errorf("%s: error %v, Unmarshal says %v", name, err, want)
		}
		if (v != nil) != (err == nil) {
			t.Errorf("%s: vocabulary %v with error %v", name, v != nil, err)
		}
		canonical, cerr := canon.Canonicalize([]byte(doc))
		var got []byte
		var gerr error = errVocabSchema
		if tree != nil {
			got, gerr = tree.Canonical()
		}
		if (cerr == nil) != (gerr == nil) || string(canonical) != string(got) {
			t.Errorf("%s: canonical form %q (%v), Canonicalize gives %q (%v)", name, got, gerr, canonical, cerr)
		}
	}
}
