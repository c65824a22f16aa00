package verifier

import (
	"bytes"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

// vector is one CCTV-style test vector of testdata/vectors.
type vector struct {
	name   string
	pass   bool
	claims []string // claims that must fail
	files  map[string][]byte
}

// parseVector reads a txtar archive: a comment whose first line is
// "expect: pass" or "expect: fail <claim>[,<claim>…]", then files, each
// holding its data followed by one LF that is not part of the data.
func parseVector(t *testing.T, path string) vector {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := vector{name: strings.TrimSuffix(filepath.Base(path), ".txt"), files: map[string][]byte{}}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	switch head := string(first); {
	case head == "expect: pass":
		v.pass = true
	case strings.HasPrefix(head, "expect: fail "):
		v.claims = strings.Split(strings.TrimPrefix(head, "expect: fail "), ",")
	default:
		t.Fatalf("%s: bad header", path)
	}
	chunks := bytes.Split(data, []byte("\n-- "))
	for _, c := range chunks[1:] {
		name, body, ok := bytes.Cut(c, []byte(" --\n"))
		if !ok {
			t.Fatalf("%s: bad file marker", path)
		}
		v.files[string(name)] = bytes.TrimSuffix(body, []byte("\n"))
	}
	// The last file keeps the archive's final LF; the others lost theirs to
	// the split. Restore the rule "data + one LF" for every file.
	for name, body := range v.files {
		if !strings.HasSuffix(string(data), "\n-- "+name+" --\n"+string(body)+"\n") &&
			!bytes.Contains(data, []byte("\n-- "+name+" --\n"+string(body)+"\n-- ")) {
			t.Fatalf("%s: file %s is not followed by exactly one LF", path, name)
		}
	}
	return v
}

// request builds the verifier request of a vector.
func (v vector) request(t *testing.T) Request {
	t.Helper()
	kb, err := hex.DecodeString(string(v.files["key.hex"]))
	if err != nil {
		t.Fatalf("%s: key.hex: %v", v.name, err)
	}
	key, err := receipts.NewEvidenceKey(kb)
	if err != nil {
		t.Fatal(err)
	}
	now, err := time.Parse(time.RFC3339, string(v.files["now"]))
	if err != nil {
		t.Fatalf("%s: now: %v", v.name, err)
	}
	return Request{
		Source:       v.files["source.json"],
		Export:       v.files["export.json"],
		ExportDigest: string(v.files["export_digest"]),
		Plan:         v.files["plan.json"],
		Vocabulary:   v.files["vocab.json"],
		Receipts:     v.files["receipts.json"],
		EvidenceKey:  key,
		Now:          now,
	}
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	paths, err := filepath.Glob("testdata/vectors/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 14 {
		t.Fatalf("found %d vectors, want at least 14", len(paths))
	}
	var vs []vector
	for _, p := range paths {
		vs = append(vs, parseVector(t, p))
	}
	return vs
}

// TestVectors runs every vector: the good ones pass with every claim held,
// each corrupted one fails and names at least its expected claims.
func TestVectors(t *testing.T) {
	for _, v := range loadVectors(t) {
		t.Run(v.name, func(t *testing.T) {
			got := Verify(v.request(t))
			checkShape(t, got)
			failed := got.Failed()
			if v.pass {
				if got.Verdict != receipts.VerdictPass || len(failed) != 0 {
					t.Fatalf("verdict %s, failed claims %v: %+v", got.Verdict, failed, got.Claims)
				}
				return
			}
			if got.Verdict != "fail" {
				t.Fatalf("verdict %s, want fail", got.Verdict)
			}
			for _, c := range v.claims {
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
