package gen_test

import (
	"testing"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/internal/gen"
)

// TestReport: a generated report over the bundled vocabulary is a
// projection the grammar accepts, with the findings asked for, about 240
// bytes each, and the same bytes for the same seed.
func TestReport(t *testing.T) {
	v, err := gen.FromVocabulary(examples.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	doc := v.Report(500, 1)
	if len(doc) < 100<<10 || len(doc) > 150<<10 {
		t.Errorf("a 500-finding report is %d bytes, want about 120 KB", len(doc))
	}
	if string(v.Report(500, 1)) != string(doc) {
		t.Error("the same seed gave another report")
	}
	vocab, err := grammar.LoadVocabulary(examples.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	d, refs := grammar.LoadProjection(doc, grammar.LoadOptions{})
	if refs != nil {
		t.Fatalf("refused: %v", refs)
	}
	res := grammar.Check(d, grammar.NewParser(vocab, grammar.Options{}), grammar.DefaultMaxParents, nil)
	if !res.OK() || res.Stats.Findings != 500 {
		t.Fatalf("ok %v, %d findings: %v", res.OK(), res.Stats.Findings, res.Refusals)
	}
}
