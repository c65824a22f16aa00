package verifier

import (
	"testing"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier/internal/cuttest"
)

// The cuts of the tests are built by cuttest, which shares no code with the
// verifier.
type cutOptions = cuttest.Options

// testPart is one part of a projection built in code.
type testPart struct {
	Kind, Key, Text string
}

const testVocab = cuttest.Vocab

var testNow = cuttest.Now

func testKey(t testing.TB) *receipts.EvidenceKey { return cuttest.Key(t) }

// makeCut builds the request of a cut made by cuttest.Make, verified at
// testNow.
func makeCut(t testing.TB, parts []testPart, opt cutOptions) Request {
	t.Helper()
	ps := make([]cuttest.Part, len(parts))
	for i, p := range parts {
		ps[i] = cuttest.Part(p)
	}
	return requestOf(cuttest.Make(t, ps, opt))
}

func requestOf(c cuttest.Cut) Request {
	return Request{
		Source: c.Source, Export: c.Export, ExportDigest: c.ExportDigest, Plan: c.Plan,
		Vocabulary: c.Vocabulary, Receipts: c.Receipts, EvidenceKey: c.Key, Now: testNow,
		Wire: c.Wire, OutputSchema: c.OutputSchema,
	}
}

func bigText(n int) string { return cuttest.BigText(n) }

// renderWithCuttest renders a wire body with cuttest's own renderer.
func renderWithCuttest(t testing.TB, w *receipts.Wire, texts []string, schema []byte) []byte {
	t.Helper()
	return cuttest.WireBody(t, w, texts, schema)
}
