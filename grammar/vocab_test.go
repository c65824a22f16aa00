package grammar

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/receipts"
)

func TestLoadVocabularyRefuses(t *testing.T) {
	doc := func(diag, mod, ver, cite string) string {
		return `{"schema":"Vocabulary@1","revision":"r","diagnostics":["` + diag + `"],"modules":{"` + mod +
			`":["` + ver + `"]},"statuses":["affected"],"citations":["` + cite + `"],"questions":["q"]}`
	}
	ok := doc("GO-1", "m.example/a", "v1.0.0", "https://x.example/1")
	if _, err := LoadVocabulary([]byte(ok)); err != nil {
		t.Fatalf("good vocabulary refused: %v", err)
	}
	tests := []struct {
		name  string
		doc   string
		class Class
	}{
		{"space in item", doc("GO 1", "m.example/a", "v1.0.0", "https://x.example/1"), ClassDiagnostic},
		{"empty item", doc("", "m.example/a", "v1.0.0", "https://x.example/1"), ClassDiagnostic},
		{"quote in item", doc(`GO\"1`, "m.example/a", "v1.0.0", "https://x.example/1"), ClassDiagnostic},
		{"at in module", doc("GO-1", "m@a", "v1.0.0", "https://x.example/1"), ClassModule},
		{"at in version", doc("GO-1", "m.example/a", "v1@0", "https://x.example/1"), ClassVersion},
		{"citation beginning fixed=", doc("GO-1", "m.example/a", "v1.0.0", "fixed=v1"), ClassCitation},
		{"zero width in item", doc("GO\u200b1", "m.example/a", "v1.0.0", "https://x.example/1"), ClassDiagnostic},
		{"U+180E in item", doc("GO-1", "m.example/a\u180e", "v1.0.0", "https://x.example/1"), ClassModule},
		{"U+FDD0 in item", doc("GO-1", "m.example/a", "v1.0.0", "https://x.example/\ufdd0"), ClassCitation},
		{"U+FFFE in item", doc("GO-1", "m.example/a", "v1.0.0\ufffe", "https://x.example/1"), ClassVersion},
		{"U+10FFFF in item", doc("GO-\U0010ffff", "m.example/a", "v1.0.0", "https://x.example/1"), ClassDiagnostic},
		{"NFD item", doc("Jose\u0301", "m.example/a", "v1.0.0", "https://x.example/1"), ClassDiagnostic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadVocabulary([]byte(tt.doc))
			var ve *VocabularyError
			if !errors.As(err, &ve) || ve.Class != tt.class {
				t.Fatalf("err = %v, want a %s item refused", err, tt.class)
			}
		})
	}
	for name, d := range map[string]string{
		"duplicate key": strings.Replace(ok, `"revision":"r"`, `"revision":"r","revision":"s"`, 1),
		"unknown field": strings.Replace(ok, `"revision":"r"`, `"revision":"r","extra":1`, 1),
		"wrong schema":  strings.Replace(ok, "Vocabulary@1", "Vocabulary@2", 1),
		"trailing data": ok + "x",
	} {
		if _, err := LoadVocabulary([]byte(d)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestVocabularyDigest(t *testing.T) {
	a := `{"schema":"Vocabulary@1","revision":"r","diagnostics":["GO-1"],"modules":{"m.example/a":["v1.0.0"]},"statuses":["affected"],"citations":["https://x.example/1"],"questions":["q"]}`
	b := "{\n  \"questions\": [\"q\"], \"citations\": [\"https://x.example/1\"],\n  \"statuses\": [\"affected\"], \"modules\": {\"m.example/a\": [\"v1.0.0\"]},\n  \"diagnostics\": [\"GO\\u002d1\"], \"revision\": \"r\", \"schema\": \"Vocabulary@1\"\n}\n"
	va, err := LoadVocabulary([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	vb, err := LoadVocabulary([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	if va.Digest() != vb.Digest() || !strings.HasPrefix(va.Digest(), receipts.PrefixSHA256) {
		t.Fatalf("digests %s and %s", va.Digest(), vb.Digest())
	}
	vc, _ := LoadVocabulary([]byte(strings.Replace(a, "v1.0.0", "v1.0.1", 1)))
	if vc.Digest() == va.Digest() {
		t.Fatal("different vocabulary, same digest")
	}
}

func TestDevVocabulary(t *testing.T) {
	// The real development vocabulary shipped in examples/ loads, and its
	// items are found.
	data, err := os.ReadFile("../examples/vocabulary.json")
	if err != nil {
		t.Skip("examples/vocabulary.json not present")
	}
	v, err := LoadVocabulary(data)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Contains([]byte("GO-2022-1059")) || !v.Contains([]byte("golang.org/x/text")) {
		t.Fatal("known items missing")
	}
}

func TestVocabularyClasses(t *testing.T) {
	v := testVocab(t)
	checks := []struct {
		name string
		got  bool
		want bool
	}{
		{"diagnostic", v.HasDiagnostic("GO-2023-2102"), true},
		{"diagnostic as module", v.HasModule("GO-2023-2102"), false},
		{"module", v.HasModule("golang.org/x/net"), true},
		{"version of module", v.HasVersion("golang.org/x/net", "v0.15.0"), true},
		{"version of another module", v.HasVersion("golang.org/x/text", "v0.15.0"), false},
		{"status", v.HasStatus("affected"), true},
		{"citation", v.HasCitation("https://go.dev/issue/63417"), true},
		{"question", v.HasQuestion("triage.rank-by-severity"), true},
		{"question as status", v.HasStatus("triage.rank-by-severity"), false},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}
