package plugin

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
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

// vectorRequest is the request of a vector, verified at its time. For a
// reversible cut the in-process verifier gets a stand-in for the vault
// (macIssuer), and the plugin the "socket" that testDial opens to the same
// stand-in: a file naming the lease, namespace and key.
func vectorRequest(t *testing.T, v vector) verifier.Request {
	t.Helper()
	c, now := v.Cut(t)
	r := requestOf(c)
	r.Now = now
	if c.NamespaceKey != nil {
		r.Lease = c.Lease
		r.Issuer = &macIssuer{lease: c.Lease, ns: c.Namespace, key: c.NamespaceKey}
		r.VaultSocket = filepath.Join(t.TempDir(), "issuer")
		line := c.Lease + " " + c.Namespace + " " + hex.EncodeToString(c.NamespaceKey)
		if err := os.WriteFile(r.VaultSocket, []byte(line), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// macIssuer stands for the vault of a vector's lease (cuttest.VaultToken).
type macIssuer struct {
	lease, ns string
	key       []byte
}

func (m *macIssuer) Issued(_ context.Context, lease string, pairs []verifier.Pair) ([]bool, error) {
	ok := make([]bool, len(pairs))
	for i, p := range pairs {
		ok[i] = lease == m.lease && p.Token == cuttest.VaultToken(m.ns, m.key, p.Category, p.Value)
	}
	return ok, nil
}

// testDial is the plugin's DialIssuer in the tests: the socket is a file
// written by vectorRequest.
func testDial(_ context.Context, socket string) (verifier.Issuer, func(), error) {
	b, err := os.ReadFile(socket)
	if err != nil {
		return nil, nil, err
	}
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return nil, nil, errors.New("bad issuer file")
	}
	key, err := hex.DecodeString(f[2])
	if err != nil {
		return nil, nil, err
	}
	return &macIssuer{lease: f[0], ns: f[1], key: key}, func() {}, nil
}

func bigText(n int) string { return cuttest.BigText(n) }
