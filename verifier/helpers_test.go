package verifier

import (
	"bytes"
	"context"
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
	r := Request{
		Source: c.Source, Export: c.Export, ExportDigest: c.ExportDigest, Plan: c.Plan,
		Vocabulary: c.Vocabulary, Receipts: c.Receipts, EvidenceKey: c.Key, Now: testNow,
		Wire: c.Wire, OutputSchema: c.OutputSchema,
	}
	switch {
	case c.Issued != nil:
		r.Issuer, r.Lease = &fakeIssuer{issued: map[string]map[[2]string]string{c.Lease: c.Issued}}, c.Lease
	case c.NamespaceKey != nil:
		r.Issuer, r.Lease = &macIssuer{lease: c.Lease, ns: c.Namespace, key: c.NamespaceKey}, c.Lease
	}
	return r
}

// macIssuer stands for the vault of a vector's lease: it recomputes the
// token of each value as the vault issues it (cuttest.VaultToken).
type macIssuer struct {
	lease, ns string
	key       []byte
}

func (m *macIssuer) Issued(_ context.Context, lease string, pairs []Pair) ([]bool, error) {
	ok := make([]bool, len(pairs))
	if lease != m.lease {
		return ok, nil
	}
	for i, p := range pairs {
		ok[i] = p.Token == cuttest.VaultToken(m.ns, m.key, p.Category, p.Value)
	}
	return ok, nil
}

// fakeIssuer is a vault's answer from a table of the tokens each lease
// issued: lease → (category, value) → token. It records what it was asked.
type fakeIssuer struct {
	issued map[string]map[[2]string]string
	err    error // returned instead of an answer
	short  bool  // answers one pair fewer than asked
	asked  [][]Pair
}

func (f *fakeIssuer) Issued(_ context.Context, lease string, pairs []Pair) ([]bool, error) {
	// A copy: the verifier clears the values once the call returns.
	cp := make([]Pair, len(pairs))
	for i, p := range pairs {
		cp[i] = Pair{Category: p.Category, Value: receipts.Plaintext(bytes.Clone(p.Value)), Token: p.Token}
	}
	f.asked = append(f.asked, cp)
	if f.err != nil {
		return nil, f.err
	}
	ok := make([]bool, len(pairs))
	for i, p := range pairs {
		tok, found := f.issued[lease][[2]string{p.Category, string(p.Value)}]
		ok[i] = found && tok == p.Token
	}
	if f.short {
		ok = ok[:len(ok)-1]
	}
	return ok, nil
}

func bigText(n int) string { return cuttest.BigText(n) }

// renderWithCuttest renders a wire body with cuttest's own renderer.
func renderWithCuttest(t testing.TB, w *receipts.Wire, texts []string, schema []byte) []byte {
	t.Helper()
	return cuttest.WireBody(t, w, texts, schema)
}
