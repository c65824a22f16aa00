package plugin

import (
	"testing"

	"github.com/privacycut/privacycut/verifier"
	"github.com/privacycut/privacycut/verifier/internal/cuttest"
)

// The tests' cuts are built by cuttest, which shares no code with the
// verifier, and verified at cuttest.Now.
type (
	testPart   = cuttest.Part
	cutOptions = cuttest.Options
	vector     = cuttest.Vector
)

var sampleParts = cuttest.Sample

func makeCut(t testing.TB, parts []testPart, opt cutOptions) verifier.Request {
	t.Helper()
	return requestOf(cuttest.Make(t, parts, opt))
}

func requestOf(c cuttest.Cut) verifier.Request {
	return verifier.Request{
		Source: c.Source, Export: c.Export, ExportDigest: c.ExportDigest, Plan: c.Plan,
		Vocabulary: c.Vocabulary, Receipts: c.Receipts, EvidenceKey: c.Key, Now: cuttest.Now,
		Wire: c.Wire, OutputSchema: c.OutputSchema,
	}
}

// loadVectors reads the verifier's test vectors.
func loadVectors(t *testing.T) []vector { return cuttest.LoadVectors(t, "../testdata/vectors", 14) }

// vectorRequest is the request of a vector, verified at its time.
func vectorRequest(t *testing.T, v vector) verifier.Request {
	t.Helper()
	c, now := v.Cut(t)
	r := requestOf(c)
	r.Now = now
	return r
}

func bigText(n int) string { return cuttest.BigText(n) }
