package route

import (
	"os"
	"strings"
	"testing"
)

// docRoute is the route of the package documentation's worked example.
const docRoute = `{
  "schema": "DisclosureRoute@1",
  "name": "payments-triage",
  "consumer": {"kind": "model", "id": "triage-bot"},
  "purpose": "dependency-triage",
  "target": "https://model.example/v1/answer",
  "mode": "irreversible",
  "categories": {
    "allowed": ["module", "package", "function", "file", "team", "person", "host"],
    "prohibited": ["credential"]
  },
  "vocabulary_digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
  "max_uses": 2,
  "max_lifetime_s": 3600,
  "threat_model": "remote-model-honest-but-curious",
  "retention": "no-retention",
  "max_parents": 64
}
`

// TestDocExample: the worked example of the package documentation is
// what this package does: the route document, its note signed with
// testdata/reviewer.key, and its digest, each as doc.go shows them.
func TestDocExample(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseSignerKey(readVector(t, "reviewer.key"))
	if err != nil {
		t.Fatal(err)
	}
	defer k.Wipe()
	msg, err := Approve(k, []byte(docRoute))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse([]byte(docRoute))
	if err != nil {
		t.Fatal(err)
	}
	block := func(s string) string {
		var b strings.Builder
		for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			if line == "" {
				b.WriteString("//\n")
			} else {
				b.WriteString("//\t" + line + "\n")
			}
		}
		return b.String()
	}
	for name, want := range map[string]string{
		"route":    block(docRoute),
		"note":     block(wrapNote(string(msg))),
		"digest":   block(mustDigest(t, r)),
		"verifier": block(k.VerifierKey()),
	} {
		if !strings.Contains(string(src), want) {
			t.Errorf("doc.go does not show the %s:\n%s", name, want)
		}
	}
}

// wrapNote shows a note's one-line text in pieces of 72 bytes, each piece
// but the last ending in a backslash, as doc.go prints it.
func wrapNote(msg string) string {
	text, sigs, _ := strings.Cut(msg, "\n\n")
	var b strings.Builder
	for len(text) > 72 {
		b.WriteString(text[:72] + "\\\n")
		text = text[72:]
	}
	b.WriteString(text + "\n\n" + sigs)
	return b.String()
}
