package importer_test

import (
	"os"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/importer"
)

// TestOpenVEXOwnerPerProduct: a statement naming two private products, each
// with its own vulnerable subcomponent, gives each dependency's record the
// owner of its own product only (before, every record carried both).
func TestOpenVEXOwnerPerProduct(t *testing.T) {
	v, _ := testVocab(t)
	doc := `{"@context":"https://openvex.dev/ns/v0.2.0","@id":"x","author":"a","statements":[
	 {"vulnerability":{"@id":"https://pkg.go.dev/vuln/GO-2022-1059","name":"GO-2022-1059"},"status":"affected",
	  "products":[
	   {"@id":"pkg:golang/git.corp.example/payments/ledger@v0.0.0-20240101000000-abcdefabcdef",
	    "subcomponents":[{"@id":"pkg:golang/golang.org/x/text@v0.3.7"}]},
	   {"@id":"pkg:golang/git.corp.example/payments/shared@v1.4.0",
	    "subcomponents":[{"@id":"pkg:golang/stdlib@v1.19.2"}]}]}]}`
	res, err := importer.OpenVEX([]byte(doc), v, importer.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, refs := grammar.LoadProjection(res.Projection, grammar.LoadOptions{})
	if refs != nil {
		t.Fatal(refs)
	}
	text := string(d.Parts[0].Text)
	want := []string{
		`finding GO-2022-1059 golang.org/x/text@v0.3.7 affected https://pkg.go.dev/vuln/GO-2022-1059 owner.module="git.corp.example/payments/ledger"` + "\n",
		`finding GO-2022-1059 stdlib@v1.19.2 affected https://pkg.go.dev/vuln/GO-2022-1059 owner.module="git.corp.example/payments/shared"` + "\n",
	}
	if text != strings.Join(want, "") {
		t.Fatalf("text:\n%s\nwant:\n%s", text, strings.Join(want, ""))
	}
}

// TestOSVScannerSourceTypes: the source of every type is an owner.file value,
// but only a file in the repository (lockfile, sbom, or no type) is matched
// against CODEOWNERS; an image reference got the team of the catch-all rule.
func TestOSVScannerSourceTypes(t *testing.T) {
	v, _ := testVocab(t)
	report, err := os.ReadFile("testdata/osv-scanner/report.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		typ, path string
		team      bool
	}{
		{"lockfile", "/home/dana/src/ledger/go.mod", true},
		{"sbom", "/home/dana/src/ledger/go.mod", true},
		{"docker", "registry.corp.example/acme/billing:latest", false},
		{"git", "/home/dana/src/ledger", false},
	} {
		doc := strings.Replace(string(report), `"type": "lockfile"`, `"type": "`+tc.typ+`"`, 1)
		doc = strings.Replace(doc, `"path": "/home/dana/src/ledger/go.mod"`, `"path": "`+tc.path+`"`, 1)
		res, err := importer.OSVScanner([]byte(doc), v, importer.Options{RepoRoot: "/home/dana/src/ledger", CodeOwners: codeOwners(t)})
		if err != nil {
			t.Fatalf("%s: %v", tc.typ, err)
		}
		d, refs := grammar.LoadProjection(res.Projection, grammar.LoadOptions{})
		if refs != nil {
			t.Fatal(refs)
		}
		text := string(d.Parts[0].Text)
		if !strings.Contains(text, `owner.file="`+tc.path+`"`) {
			t.Errorf("%s: the source is not an owner value:\n%s", tc.typ, text)
		}
		if got := strings.Contains(text, `owner.team=`); got != tc.team {
			t.Errorf("%s: owner.team present %v, want %v:\n%s", tc.typ, got, tc.team, text)
		}
	}
}
