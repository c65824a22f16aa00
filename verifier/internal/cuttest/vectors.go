package cuttest

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

// Vector is one test vector of verifier/testdata/vectors: a txtar archive
// whose comment's first line is "expect: pass" or
// "expect: fail <claim>[,<claim>…]", then files, each holding its data
// followed by one LF that is not part of the data.
type Vector struct {
	Name   string
	Pass   bool
	Claims []string // claims that must fail
	Files  map[string][]byte
}

// LoadVectors reads every vector in dir; it fails the test on fewer than
// min.
func LoadVectors(t testing.TB, dir string, min int) []Vector {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < min {
		t.Fatalf("found %d vectors in %s, want at least %d", len(paths), dir, min)
	}
	var vs []Vector
	for _, p := range paths {
		vs = append(vs, ParseVector(t, p))
	}
	return vs
}

// ParseVector reads the vector at path.
func ParseVector(t testing.TB, path string) Vector {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := Vector{Name: strings.TrimSuffix(filepath.Base(path), ".txt"), Files: map[string][]byte{}}
	first, _, _ := bytes.Cut(data, []byte("\n"))
	switch head := string(first); {
	case head == "expect: pass":
		v.Pass = true
	case strings.HasPrefix(head, "expect: fail "):
		v.Claims = strings.Split(strings.TrimPrefix(head, "expect: fail "), ",")
	default:
		t.Fatalf("%s: bad header", path)
	}
	chunks := bytes.Split(data, []byte("\n-- "))
	for _, c := range chunks[1:] {
		name, body, ok := bytes.Cut(c, []byte(" --\n"))
		if !ok {
			t.Fatalf("%s: bad file marker", path)
		}
		v.Files[string(name)] = bytes.TrimSuffix(body, []byte("\n"))
	}
	// The last file keeps the archive's final LF; the others lost theirs to
	// the split. Check the rule "data + one LF" for every file.
	for name, body := range v.Files {
		if !strings.HasSuffix(string(data), "\n-- "+name+" --\n"+string(body)+"\n") &&
			!bytes.Contains(data, []byte("\n-- "+name+" --\n"+string(body)+"\n-- ")) {
			t.Fatalf("%s: file %s is not followed by exactly one LF", path, name)
		}
	}
	return v
}

// Cut returns the vector's cut and the time it is verified at.
func (v Vector) Cut(t testing.TB) (Cut, time.Time) {
	t.Helper()
	kb, err := hex.DecodeString(string(v.Files["key.hex"]))
	if err != nil {
		t.Fatalf("%s: key.hex: %v", v.Name, err)
	}
	key, err := receipts.NewEvidenceKey(kb)
	if err != nil {
		t.Fatal(err)
	}
	now, err := time.Parse(time.RFC3339, string(v.Files["now"]))
	if err != nil {
		t.Fatalf("%s: now: %v", v.Name, err)
	}
	c := Cut{
		Source:       v.Files["source.json"],
		Export:       v.Files["export.json"],
		ExportDigest: string(v.Files["export_digest"]),
		Plan:         v.Files["plan.json"],
		Vocabulary:   v.Files["vocab.json"],
		Receipts:     v.Files["receipts.json"],
		Key:          key,
		Wire:         v.Files["wire.json"],
		OutputSchema: v.Files["schema.json"],
		Lease:        string(v.Files["lease"]),
	}
	if is, ok := v.Files["issuer"]; ok {
		ns, k, _ := bytes.Cut(is, []byte(" "))
		if c.NamespaceKey, err = hex.DecodeString(string(k)); err != nil {
			t.Fatalf("%s: issuer: %v", v.Name, err)
		}
		c.Namespace = string(ns)
	}
	return c, now
}

// VaultToken is the token a vault issues for a value of a category in the
// namespace ns under the namespace key: pcv:<ns>:<category>:<mac>, the mac
// the first 100 bits, in lower-case base32, of HMAC-SHA256 over
// "privacycut/token/v1" 0x00 category 0x00 value. The vectors' stand-ins
// for the vault recompute tokens with it.
func VaultToken(ns string, key []byte, category string, value []byte) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte("privacycut/token/v1\x00" + category + "\x00"))
	h.Write(value)
	return "pcv:" + ns + ":" + category + ":" + strings.ToLower(base32.StdEncoding.EncodeToString(h.Sum(nil)))[:20]
}
