package verifier

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier/internal/cuttest"
)

// vectorRequest is the request of a vector.
func vectorRequest(t *testing.T, v cuttest.Vector) Request {
	t.Helper()
	c, now := v.Cut(t)
	r := requestOf(c)
	r.Now = now
	return r
}

// TestVectors runs every vector: the good ones pass with every claim held,
// each corrupted one fails and names at least its expected claims.
func TestVectors(t *testing.T) {
	for _, v := range cuttest.LoadVectors(t, "testdata/vectors", 14) {
		t.Run(v.Name, func(t *testing.T) {
			got := Verify(vectorRequest(t, v))
			checkShape(t, got)
			failed := got.Failed()
			if v.Pass {
				if got.Verdict != receipts.VerdictPass || len(failed) != 0 {
					t.Fatalf("verdict %s, failed claims %v: %+v", got.Verdict, failed, got.Claims)
				}
				return
			}
			if got.Verdict != "fail" {
				t.Fatalf("verdict %s, want fail", got.Verdict)
			}
			for _, c := range v.Claims {
				if !slices.Contains(failed, c) {
					t.Errorf("claim %s holds, want it to fail; failed: %v; claims: %+v", c, failed, got.Claims)
				}
			}
		})
	}
}

// checkShape checks what every CutVerification@1 must carry.
func checkShape(t *testing.T, v receipts.Verification) {
	t.Helper()
	if v.Schema != receipts.SchemaVerification || v.Verifier != Revision {
		t.Errorf("schema %q verifier %q", v.Schema, v.Verifier)
	}
	var names []string
	for _, c := range v.Claims {
		names = append(names, c.Name)
	}
	if !slices.Equal(names, receipts.Claims()) {
		t.Errorf("claims %v, want %v", names, receipts.Claims())
	}
	pass := true
	for _, c := range v.Claims {
		pass = pass && c.OK
	}
	if want := map[bool]string{true: "pass", false: "fail"}[pass]; v.Verdict != want {
		t.Errorf("verdict %s with all-ok=%v", v.Verdict, pass)
	}
}

// TestVectorsUpToDate regenerates the vectors and compares them with the
// committed files: the generator is deterministic.
func TestVectorsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	cmd := exec.Command(gobin, "run", "./internal/vecgen", "-out", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("vecgen: %v\n%s", err, out)
	}
	fresh, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	committed, _ := filepath.Glob("testdata/vectors/*.txt")
	if len(fresh) != len(committed) {
		t.Fatalf("generator writes %d vectors, %d committed", len(fresh), len(committed))
	}
	for _, f := range fresh {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join("testdata/vectors", filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s is stale: run go generate ./verifier", filepath.Base(f))
		}
	}
}

// TestWireVectors: each seeded corruption of a wire body, made by the
// generator with every other digest rebound, fails exactly its claim, and
// the honest wire vectors pass with the wire digest of their bodies.
func TestWireVectors(t *testing.T) {
	want := map[string][]string{
		"good-openai-chat":           {},
		"good-anthropic-messages":    {},
		"good-openai-chat-nonstrict": {},
		"wire-byte-changed":          {receipts.ClaimWireMatch},
		"wire-instruction-swapped":   {receipts.ClaimWireMatch},
		"wire-part-reordered":        {receipts.ClaimWireMatch},
		"wire-owner-in-instruction":  {receipts.ClaimNoResidual},
		"wire-schema-altered":        {receipts.ClaimWireMatch},
		"wire-model-changed":         {receipts.ClaimWireMatch},
	}
	seen := 0
	for _, v := range cuttest.LoadVectors(t, "testdata/vectors", 14) {
		claims, ok := want[v.Name]
		if !ok {
			continue
		}
		seen++
		t.Run(v.Name, func(t *testing.T) {
			req := vectorRequest(t, v)
			if len(req.Wire) == 0 || len(req.OutputSchema) == 0 {
				t.Fatal("the vector has no wire body or no schema")
			}
			got := Verify(req)
			if diff := cmp.Diff(claims, failedClaims(got)); diff != "" {
				t.Fatalf("failed claims (-want +got):\n%s\n%+v", diff, got.Claims)
			}
			if got.WireDigest != receipts.SHA256(req.Wire) {
				t.Errorf("wire digest %s", got.WireDigest)
			}
		})
	}
	if seen != len(want) {
		t.Fatalf("found %d of the %d wire vectors", seen, len(want))
	}
}
