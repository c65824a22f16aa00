package importer

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/grammar"
)

func loadVocab(t testing.TB) *grammar.Vocabulary {
	t.Helper()
	data, err := os.ReadFile("testdata/vocab.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := grammar.LoadVocabulary(data)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fuzzOwners is the CODEOWNERS the import fuzz targets match against; its
// private names carry "ZQX", which no error may hold.
func fuzzOwners(f *testing.F) *CodeOwners {
	co, err := ParseCodeOwners([]byte("* @corp/all\n/internal/ @ZQXteam dana@ZQX.example\n"))
	if err != nil {
		f.Fatal(err)
	}
	return co
}

// fuzzSeeds adds the files matching pattern, their private names marked
// with "ZQX".
func fuzzSeeds(f *testing.F, pattern string) {
	files, _ := filepath.Glob(pattern)
	for _, p := range files {
		data, _ := os.ReadFile(p)
		f.Add(bytes.ReplaceAll(data, []byte("git.corp.example"), []byte("git.ZQX.example")))
	}
}

// checkImport is the property every import fuzz target holds: any bytes
// either refuse with a content-free typed error and no result, or import —
// deterministically — to a projection the grammar accepts with as many
// finding records as were written.
func checkImport(t *testing.T, imp func([]byte, *grammar.Vocabulary, Options) (*Result, error), data []byte, v *grammar.Vocabulary, opt Options) {
	res, err := imp(data, v, opt)
	if err != nil {
		var ie *InputError
		var re *RefusedError
		if !errors.As(err, &ie) && !errors.As(err, &re) {
			t.Fatalf("untyped error %v", err)
		}
		if res != nil {
			t.Fatal("error with a result")
		}
		if strings.Contains(err.Error(), "ZQX") {
			t.Fatalf("error holds input: %q", err)
		}
		return
	}
	doc, refs := grammar.LoadProjection(res.Projection, grammar.LoadOptions{})
	if refs != nil {
		t.Fatalf("projection refused: %v", refs)
	}
	r := grammar.Check(doc, grammar.NewParser(v, grammar.Options{}), 0, nil)
	if !r.OK() || r.Stats.Findings != res.Stats.Written || res.Stats.Written+res.Stats.Dropped != res.Stats.Findings {
		t.Fatalf("check %v, stats %+v, findings parsed %d", r.Refusals, res.Stats, r.Stats.Findings)
	}
	again, err := imp(data, v, opt)
	if err != nil || !bytes.Equal(again.Projection, res.Projection) {
		t.Fatal("a second import differs")
	}
}

// FuzzGovulncheckStream: checkImport for govulncheck -json streams.
func FuzzGovulncheckStream(f *testing.F) {
	fuzzSeeds(f, "testdata/govulncheck/*.json")
	f.Add([]byte(`{"config":{"protocol_version":"v1.0.0","scan_level":"symbol"}}
{"osv":{"id":"GO-2022-1059","database_specific":{"url":"https://pkg.go.dev/vuln/GO-2022-1059"}}}
{"finding":{"osv":"GO-2022-1059","trace":[{"module":"golang.org/x/text","version":"v0.3.7","function":"Parse"},{"module":"ZQX","function":"F","receiver":"*T[ZQX]","position":{"filename":"ZQX.go"}}]}}`))
	f.Add([]byte(`{"config":{"protocol_version":"v1.0.0"}} {"finding":{"osv":"GO-1","trace":[{"module":"m","version":"v1"}]}} ZQX`))
	v, co := loadVocab(f), fuzzOwners(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkImport(t, Govulncheck, data, v, Options{CodeOwners: co, OnUnknown: Drop, Questions: []string{"triage.summarize"}})
	})
}

// FuzzOpenVEX: checkImport for OpenVEX documents.
func FuzzOpenVEX(f *testing.F) {
	fuzzSeeds(f, "testdata/openvex/*.json")
	f.Add([]byte(`{"@context":"https://openvex.dev/ns/v0.2.0","@id":"x","author":"a","statements":[
	 {"vulnerability":{"@id":"https://pkg.go.dev/vuln/GO-2022-1059","name":"GO-2022-1059"},"status":"affected",
	  "products":[{"@id":"pkg:golang/git.ZQX.example/a@v1.0.0","subcomponents":[{"@id":"pkg:golang/golang.org/x/text@v0.3.7"}]},
	   {"@id":"pkg:golang/ZQX%zz@v1","subcomponents":[{"@id":"pkg:golang/stdlib@v1.19.2"}]}]}]}`))
	v := loadVocab(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkImport(t, OpenVEX, data, v, Options{OnUnknown: Drop})
	})
}

// FuzzOSVScanner: checkImport for osv-scanner JSON output.
func FuzzOSVScanner(f *testing.F) {
	fuzzSeeds(f, "testdata/osv-scanner/*.json")
	f.Add([]byte(`{"results":[{"source":{"path":"/src/ZQX/go.mod","type":"lockfile"},"packages":[{"package":{"name":"golang.org/x/text","version":"0.3.7","ecosystem":"Go"},"vulnerabilities":[{"id":"GO-2022-1059","database_specific":{"url":"https://pkg.go.dev/vuln/GO-2022-1059"}}],"groups":[{"ids":["GO-2022-1059"]}]}]}]}`))
	v, co := loadVocab(f), fuzzOwners(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkImport(t, OSVScanner, data, v, Options{CodeOwners: co, RepoRoot: "/src", OnUnknown: Drop, Questions: []string{"triage.summarize"}})
	})
}

// FuzzCodeOwners: any file either parses or refuses with a content-free
// error naming a line; a parsed file matches any path without panic, and a
// line added at the end for exactly that path decides its owners (the last
// matching line wins).
func FuzzCodeOwners(f *testing.F) {
	data, _ := os.ReadFile("testdata/CODEOWNERS")
	f.Add(data, "internal/i18n/negotiate.go")
	f.Add([]byte("* @a\n/docs/ @b\ndocs/* x@y.z\n**/logs @c\n/a/**/b @d\n"), "docs/x/logs/y")
	f.Add([]byte("!ZQX @a\n"), "a")
	f.Add([]byte("/**/**/** @a\n*.go\n"), "a/b/c.go")
	f.Fuzz(func(t *testing.T, data []byte, path string) {
		co, err := ParseCodeOwners(data)
		if err != nil {
			var ce *CodeOwnersError
			if !errors.As(err, &ce) {
				t.Fatalf("untyped error %v", err)
			}
			if strings.Contains(err.Error(), "ZQX") {
				t.Fatalf("error holds input: %q", err)
			}
			return
		}
		for _, o := range co.Match(path) {
			if o.cat != grammar.CategoryTeam && o.cat != grammar.CategoryPerson {
				t.Fatalf("owner of category %s", o.cat)
			}
		}
		clean := strings.TrimPrefix(filepath.ToSlash(filepath.Clean("/"+path)), "/")
		// Match looks at no path longer than PATH_MAX (MaxMatchPath).
		if clean == "" || len(clean) > MaxMatchPath || strings.ContainsAny(clean, "*?[]\\!# \t\r\n\v\f\u0085\u00a0") || strings.HasPrefix(clean, "#") {
			return
		}
		for _, r := range clean {
			if r > 0x7f {
				return
			}
		}
		extended := append(append(append([]byte(nil), data...), '\n'), "/"+clean+" @fuzz-last\n"...)
		co2, err := ParseCodeOwners(extended)
		if err != nil {
			if len(extended) > MaxCodeOwnersBytes {
				return
			}
			t.Fatalf("adding a plain line broke the file: %v", err)
		}
		if got := co2.Owners(clean); len(got) != 1 || got[0][1] != "@fuzz-last" {
			t.Fatalf("last line does not decide %q: %v", clean, got)
		}
	})
}

// benchStream generates a govulncheck stream of n symbol-level findings in
// a private module of many packages, each with a four-frame trace.
func benchStream(n int) []byte {
	var b bytes.Buffer
	b.WriteString("{\n  \"config\": {\n    \"protocol_version\": \"v1.0.0\",\n    \"scanner_name\": \"govulncheck\",\n    \"scan_level\": \"symbol\",\n    \"scan_mode\": \"source\"\n  }\n}\n")
	entries, _ := filepath.Glob("testdata/osv/*.json")
	for _, p := range entries {
		data, _ := os.ReadFile(p)
		b.WriteString("{\n  \"osv\": ")
		b.Write(bytes.TrimSpace(data))
		b.WriteString("\n}\n")
	}
	vulns := []struct{ id, mod, ver, fixed, pkg, fn string }{
		{"GO-2022-1059", "golang.org/x/text", "v0.3.7", "v0.3.8", "golang.org/x/text/language", "ParseAcceptLanguage"},
		{"GO-2022-1144", "stdlib", "v1.19.2", "v1.19.4", "net/http", "ListenAndServe"},
		{"GO-2020-0036", "gopkg.in/yaml.v2", "v2.2.2", "v2.2.8", "gopkg.in/yaml.v2", "Unmarshal"},
		{"GO-2022-0969", "golang.org/x/net", "v0.0.0-20220722155237-a158d28d115b", "v0.0.0-20220906165146-f3363e06e74c", "golang.org/x/net/http2", "ServeConn"},
	}
	for i := 0; i < n; i++ {
		vu := vulns[i%len(vulns)]
		fmt.Fprintf(&b, `{
  "finding": {
    "osv": %q,
    "fixed_version": %q,
    "trace": [
      {"module": %q, "version": %q, "package": %q, "function": %q, "position": {"filename": "x.go", "offset": 10, "line": 2, "column": 1}},
      {"module": "git.corp.example/payments/ledger", "package": "git.corp.example/payments/ledger/internal/p%d", "function": "Handle%d", "receiver": "*Server[T%d]", "position": {"filename": "internal/p%d/f%d.go", "offset": %d, "line": %d, "column": 3}},
      {"module": "git.corp.example/payments/ledger", "package": "git.corp.example/payments/ledger/internal/api", "function": "Serve", "position": {"filename": "internal/api/serve.go", "offset": 99, "line": 7, "column": 2}},
      {"module": "git.corp.example/payments/ledger", "package": "git.corp.example/payments/ledger/cmd/ledgerd", "function": "main", "position": {"filename": "cmd/ledgerd/main.go", "offset": 1210, "line": 48, "column": 15}}
    ]
  }
}
`, vu.id, vu.fixed, vu.mod, vu.ver, vu.pkg, vu.fn, i%37, i, i%5, i%37, i, 100+i, 10+i)
	}
	return b.Bytes()
}

func TestBenchStreamImports(t *testing.T) {
	v := loadVocab(t)
	data, _ := os.ReadFile("testdata/CODEOWNERS")
	co, err := ParseCodeOwners(data)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Govulncheck(benchStream(500), v, Options{CodeOwners: co})
	if err != nil {
		t.Fatal(err)
	}
	if res.Stats.Written != 500 || res.Stats.Owners["function"] != 500 || res.Stats.Owners["team"] != 500 {
		t.Fatalf("stats %+v", res.Stats)
	}
}

// BenchmarkImportGovulncheck imports a generated 500-finding stream with
// CODEOWNERS: reading, checking every record with the grammar, writing and
// re-checking the projection. The budget is 100 ms per import.
func BenchmarkImportGovulncheck(b *testing.B) {
	v := loadVocab(b)
	data, _ := os.ReadFile("testdata/CODEOWNERS")
	co, err := ParseCodeOwners(data)
	if err != nil {
		b.Fatal(err)
	}
	stream := benchStream(500)
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Govulncheck(stream, v, Options{CodeOwners: co}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1e6, "ms/op")
}

// TestImportPolicy: the importer and the vocabulary builder depend on no
// project package but the grammar and receipts (docs/DESIGN.md#package-boundaries style; see
// internal/deps for the whole module's table).
func TestImportPolicy(t *testing.T) {
	const module = "github.com/privacycut/privacycut/"
	for _, pkg := range []string{"importer", "osvvocab"} {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+pkg).Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		for _, dep := range strings.Fields(string(out)) {
			rel, ok := strings.CutPrefix(dep, module)
			if !ok || rel == pkg {
				continue
			}
			if rel != "grammar" && rel != "receipts" && rel != "canon" {
				t.Errorf("%s depends on %s; only grammar, receipts and canon are allowed", pkg, rel)
			}
		}
	}
}
