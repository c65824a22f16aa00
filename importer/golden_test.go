package importer_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/importer"
	"github.com/privacycut/privacycut/osvvocab"
	"github.com/privacycut/privacycut/receipts"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testVocab is the fixture vocabulary: `cut vocab build` over the fixture
// OSV entries and module-versions file. TestVocabFixture keeps the
// committed copy (which the fuzz targets and the benchmark read) current.
func testVocab(t testing.TB) (*grammar.Vocabulary, []byte) {
	t.Helper()
	data, err := os.ReadFile("testdata/vocab.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := grammar.LoadVocabulary(data)
	if err != nil {
		t.Fatal(err)
	}
	return v, data
}

func TestVocabFixture(t *testing.T) {
	b := osvvocab.New()
	if err := b.AddPath("testdata/osv"); err != nil {
		t.Fatal(err)
	}
	mv, err := os.ReadFile("testdata/modversions.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddModuleVersions("modversions.txt", mv); err != nil {
		t.Fatal(err)
	}
	// The scans use golang.org/x/net at a pseudo-version of its public
	// repository: the fixture's user takes pseudo-versions.
	b.AllowPseudoVersions()
	v, err := b.Build("importer-fixture")
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("testdata/vocab.json", v.JSON, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, have := testVocab(t)
	if d := cmp.Diff(string(have), string(v.JSON)); d != "" {
		t.Fatalf("testdata/vocab.json is stale (run with -update):\n%s", d)
	}
}

func codeOwners(t testing.TB) *importer.CodeOwners {
	t.Helper()
	data, err := os.ReadFile("testdata/CODEOWNERS")
	if err != nil {
		t.Fatal(err)
	}
	co, err := importer.ParseCodeOwners(data)
	if err != nil {
		t.Fatal(err)
	}
	return co
}

type importFunc func([]byte, *grammar.Vocabulary, importer.Options) (*importer.Result, error)

type goldenCase struct {
	name   string
	fn     importFunc
	input  string
	owners bool // with testdata/CODEOWNERS
	opt    importer.Options
}

func goldenCases() []goldenCase {
	return []goldenCase{
		{"govulncheck-symbol", importer.Govulncheck, "govulncheck/source-symbol.json", true,
			importer.Options{Questions: []string{"triage.rank-by-severity", "triage.suggest-upgrade"}}},
		{"govulncheck-symbol-plain", importer.Govulncheck, "govulncheck/source-symbol.json", false, importer.Options{}},
		{"govulncheck-package", importer.Govulncheck, "govulncheck/source-package.json", false, importer.Options{}},
		{"govulncheck-module", importer.Govulncheck, "govulncheck/source-module.json", false, importer.Options{}},
		{"govulncheck-binary", importer.Govulncheck, "govulncheck/binary.json", true, importer.Options{}},
		{"govulncheck-legacy", importer.Govulncheck, "govulncheck/legacy.json", true,
			importer.Options{RepoRoot: `C:\src\ledger`}},
		{"govulncheck-unknown-drop", importer.Govulncheck, "govulncheck/unknown.json", true,
			importer.Options{OnUnknown: importer.Drop}},
		{"openvex", importer.OpenVEX, "openvex/govulncheck.json", false, importer.Options{}},
		{"osv-scanner", importer.OSVScanner, "osv-scanner/report.json", true,
			importer.Options{RepoRoot: "/home/dana/src/ledger", Questions: []string{"triage.summarize"}}},
	}
}

func runCase(t *testing.T, c goldenCase, v *grammar.Vocabulary) (*importer.Result, []byte) {
	t.Helper()
	input, err := os.ReadFile(filepath.Join("testdata", c.input))
	if err != nil {
		t.Fatal(err)
	}
	opt := c.opt
	if c.owners {
		opt.CodeOwners = codeOwners(t)
	}
	res, err := c.fn(input, v, opt)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	return res, input
}

func statsText(s importer.Stats) string {
	var cats []string
	for k := range s.Owners {
		cats = append(cats, k)
	}
	sort.Strings(cats)
	var owners []string
	for _, k := range cats {
		owners = append(owners, fmt.Sprintf("%s %d", k, s.Owners[k]))
	}
	return fmt.Sprintf("findings %d\nwritten %d\ndropped %d\nunknown %s\nskipped %d\nowners %s\n",
		s.Findings, s.Written, s.Dropped, s.Unknown, s.Skipped, strings.Join(owners, ", "))
}

// TestGolden imports every fixture and compares projection and counts with
// the golden files (-update rewrites them). Each projection must pass the
// grammar with the same vocabulary, the import must be deterministic, and
// the lineage must be the input's digest.
func TestGolden(t *testing.T) {
	v, _ := testVocab(t)
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			res, input := runCase(t, c, v)
			again, _ := runCase(t, c, v)
			if !bytes.Equal(res.Projection, again.Projection) {
				t.Fatal("two imports of one input differ")
			}
			stats := statsText(res.Stats)
			pj, st := filepath.Join("testdata", "golden", c.name+".json"), filepath.Join("testdata", "golden", c.name+".stats")
			if *update {
				os.WriteFile(pj, res.Projection, 0o644)
				os.WriteFile(st, []byte(stats), 0o644)
			}
			wantP, err := os.ReadFile(pj)
			if err != nil {
				t.Fatal(err)
			}
			wantS, _ := os.ReadFile(st)
			if d := cmp.Diff(string(wantP), string(res.Projection)); d != "" {
				t.Errorf("projection (-want +got):\n%s", d)
			}
			if d := cmp.Diff(string(wantS), stats); d != "" {
				t.Errorf("stats (-want +got):\n%s", d)
			}
			doc, refs := grammar.LoadProjection(res.Projection, grammar.LoadOptions{})
			if refs != nil {
				t.Fatalf("projection refused: %v", refs)
			}
			if r := grammar.Check(doc, grammar.NewParser(v, grammar.Options{}), 0, nil); !r.OK() {
				t.Fatalf("projection refused by the grammar: %v", r.Refusals)
			}
			digest := receipts.SHA256(input)
			if res.Stats.InputDigest != digest {
				t.Fatalf("input digest %s, want %s", res.Stats.InputDigest, digest)
			}
			for _, p := range doc.Parts {
				if len(p.Lineage) != 1 || p.Lineage[0] != digest || p.Label.Parents[0] != digest {
					t.Fatalf("part %s lineage %v parents %v", p.Key, p.Lineage, p.Label.Parents)
				}
			}
		})
	}
}

// TestExpectations pins, independently of the golden files, the decisions
// the package documentation states.
func TestExpectations(t *testing.T) {
	v, _ := testVocab(t)
	cases := map[string]goldenCase{}
	for _, c := range goldenCases() {
		cases[c.name] = c
	}
	lines := func(name string) []string {
		res, _ := runCase(t, cases[name], v)
		doc, _ := grammar.LoadProjection(res.Projection, grammar.LoadOptions{})
		var out []string
		for _, p := range doc.Parts {
			out = append(out, strings.Split(strings.TrimSuffix(string(p.Text), "\n"), "\n")...)
		}
		return out
	}
	sym := lines("govulncheck-symbol")
	want := []string{
		// Module- and package-level findings of a called vulnerability carry
		// its status, affected, and no owner (their trace has one frame).
		`finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://pkg.go.dev/vuln/GO-2022-1059`,
		// Imported, never called, in a symbol scan: not_affected.
		`finding GO-2022-0969 golang.org/x/net@v0.0.0-20220722155237-a158d28d115b not_affected fixed=v0.0.0-20220906165146-f3363e06e74c https://pkg.go.dev/vuln/GO-2022-0969`,
		`finding GO-2022-1144 stdlib@v1.19.2 affected fixed=v1.19.4 https://pkg.go.dev/vuln/GO-2022-1144`,
		`finding GO-2020-0036 gopkg.in/yaml.v2@v2.2.2 affected fixed=v2.2.8 https://pkg.go.dev/vuln/GO-2020-0036`,
		`finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://pkg.go.dev/vuln/GO-2022-1059`,
		`finding GO-2022-0969 golang.org/x/net@v0.0.0-20220722155237-a158d28d115b not_affected fixed=v0.0.0-20220906165146-f3363e06e74c https://pkg.go.dev/vuln/GO-2022-0969`,
		`finding GO-2022-1144 stdlib@v1.19.2 affected fixed=v1.19.4 https://pkg.go.dev/vuln/GO-2022-1144`,
		`finding GO-2020-0036 gopkg.in/yaml.v2@v2.2.2 affected fixed=v2.2.8 https://pkg.go.dev/vuln/GO-2020-0036`,
		// The first private frame, with a pointer receiver; CODEOWNERS on its file.
		`finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://pkg.go.dev/vuln/GO-2022-1059 owner.module="git.corp.example/payments/ledger" owner.package="git.corp.example/payments/ledger/internal/i18n" owner.function="(*Negotiator).Pick" owner.file="internal/i18n/negotiate.go" owner.team="@corp/payments-core" owner.person="dana.okafor@corp.example"`,
		// A private dependency (not in the vocabulary) is the first private
		// frame; a receiver with a type parameter.
		`finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://pkg.go.dev/vuln/GO-2022-1059 owner.module="git.corp.example/payments/shared" owner.package="git.corp.example/payments/shared/queue" owner.function="(*Queue[T]).Push" owner.file="queue/queue.go" owner.team="@corp/platform"`,
		// stdlib: the entry point itself is the first private frame.
		`finding GO-2022-1144 stdlib@v1.19.2 affected fixed=v1.19.4 https://pkg.go.dev/vuln/GO-2022-1144 owner.module="git.corp.example/payments/ledger" owner.package="git.corp.example/payments/ledger/cmd/ledgerd" owner.function="main" owner.file="cmd/ledgerd/main.go" owner.team="@corp/payments-core" owner.person="@lmoreau"`,
		// A value receiver with a type argument; a CODEOWNERS line without
		// owners leaves the file without them.
		`finding GO-2020-0036 gopkg.in/yaml.v2@v2.2.2 affected fixed=v2.2.8 https://pkg.go.dev/vuln/GO-2020-0036 owner.module="git.corp.example/payments/ledger" owner.package="git.corp.example/payments/ledger/internal/config" owner.function="Loader[Settings].Load" owner.file="internal/config/load.go"`,
		// A file name written with \u escapes in the stream, decoded.
		`finding GO-2022-1144 stdlib@v1.19.2 affected fixed=v1.19.4 https://pkg.go.dev/vuln/GO-2022-1144 owner.module="git.corp.example/payments/ledger" owner.package="git.corp.example/payments/ledger/internal/i18n" owner.function="serveCatalog" owner.file="internal/i18n/résumé.go" owner.team="@corp/payments-core" owner.person="dana.okafor@corp.example"`,
		`ask triage.rank-by-severity`,
		`ask triage.suggest-upgrade`,
	}
	if d := cmp.Diff(want, sym); d != "" {
		t.Errorf("symbol scan (-want +got):\n%s", d)
	}

	checks := []struct {
		name, fixture string
		want          []string // substrings, each of some line, in order
	}{
		{"package scan: imported is affected, required only is not", "govulncheck-package", []string{
			"GO-2022-1059 golang.org/x/text@v0.3.7 affected",
			"GO-2022-0969 golang.org/x/net@v0.0.0-20220722155237-a158d28d115b not_affected",
			"GO-2022-1059 golang.org/x/text@v0.3.7 affected"}},
		{"module scan: every finding affected", "govulncheck-module", []string{
			"GO-2022-1144 stdlib@v1.19.2 affected", "GO-2020-0036 gopkg.in/yaml.v2@v2.2.2 affected"}},
		{"binary: a symbol in the binary is affected, no owners", "govulncheck-binary", []string{
			"GO-2022-1059 golang.org/x/text@v0.3.7 not_affected fixed=v0.3.8 https://pkg.go.dev/vuln/GO-2022-1059",
			"GO-2022-1144 stdlib@v1.19.2 affected fixed=v1.19.4 https://pkg.go.dev/vuln/GO-2022-1144"}},
		{"no scan level: called affected, else under_investigation; backslashes escaped", "govulncheck-legacy", []string{
			`GO-2020-0036 gopkg.in/yaml.v2@v2.2.2 affected fixed=v2.2.8 https://pkg.go.dev/vuln/GO-2020-0036 owner.module="git.corp.example/payments/ledger" owner.package="git.corp.example/payments/ledger/internal/config" owner.function="Load" owner.file="C:\\src\\ledger\\internal\\config\\load.go"`,
			"GO-2022-1059 golang.org/x/text@v0.3.7 under_investigation"}},
		{"openvex: statuses as stated, private product as owner.module, percent-encoded purls", "openvex", []string{
			`GO-2020-0036 gopkg.in/yaml.v2@v2.2.2 affected https://pkg.go.dev/vuln/GO-2020-0036 owner.module="git.corp.example/payments/ledger"`,
			`GO-2022-0969 golang.org/x/net@v0.0.0-20220722155237-a158d28d115b not_affected https://pkg.go.dev/vuln/GO-2022-0969 owner.module=`,
			"GO-2022-1059 golang.org/x/text@v0.3.7 affected https://pkg.go.dev/vuln/GO-2022-1059\n",
			"GO-2022-1144 stdlib@v1.19.2 under_investigation https://pkg.go.dev/vuln/GO-2022-1144\n"}},
		{"osv-scanner: GO id preferred, v added, fix of the holding range, call analysis", "osv-scanner", []string{
			`GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://pkg.go.dev/vuln/GO-2022-1059 owner.file="/home/dana/src/ledger/go.mod" owner.team="@corp/platform" owner.person="@rgupta"`,
			"GO-2022-0969 golang.org/x/net@v0.0.0-20220722155237-a158d28d115b not_affected fixed=v0.0.0-20220906165146-f3363e06e74c",
			"GO-2022-1144 golang.org/x/net@v0.0.0-20220722155237-a158d28d115b affected fixed=v0.4.0",
			"GO-2022-1144 stdlib@v1.19.2 affected fixed=v1.19.4",
			"ask triage.summarize"}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Join(lines(c.fixture), "\n") + "\n"
			at := 0
			for _, w := range c.want {
				i := strings.Index(text[at:], w)
				if i < 0 {
					t.Fatalf("missing, in order, %q in\n%s", w, text)
				}
				at += i + len(w)
			}
		})
	}
}

var tokenRE = regexp.MustCompile(`^redacted:(module|package|function|file|team|person):[0-9]+$`)

type spanText struct {
	class grammar.Class
	item  string
}

// TestCensorRoundTripNoLeak runs every fixture through import, the grammar
// and the censor: the export holds no owner value (module, package,
// function, file, team, person) outside public items — only tokens — and
// every public item of the projection survives, in order.
func TestCensorRoundTripNoLeak(t *testing.T) {
	v, _ := testVocab(t)
	key, err := receipts.NewEvidenceKey(bytes.Repeat([]byte{3}, 32))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			res, _ := runCase(t, c, v)
			doc, refs := grammar.LoadProjection(res.Projection, grammar.LoadOptions{})
			if refs != nil {
				t.Fatal(refs)
			}
			parser := grammar.NewParser(v, grammar.Options{})
			candidate := grammar.NewParser(v, grammar.Options{Candidate: true}) // the export holds tokens
			var private []string
			var publicIn []spanText
			r := grammar.Check(doc, parser, 0, func(part int, s grammar.Span) {
				text := doc.Parts[part].Text
				switch s.Kind {
				case grammar.SpanOwner:
					private = append(private, string(grammar.Unescape(text[s.Off:s.Off+s.Len])))
				case grammar.SpanPublic:
					publicIn = append(publicIn, spanText{s.Class, string(text[s.Off : s.Off+s.Len])})
				}
			})
			if !r.OK() {
				t.Fatal(r.Refusals)
			}
			if c.name != "govulncheck-module" && c.name != "govulncheck-package" && c.name != "govulncheck-binary" && len(private) == 0 {
				t.Fatal("fixture has no owner values; the leak test would prove nothing")
			}
			plan, err := censor.NewPlan(doc, v, key, censor.PlanOptions{
				Consumer: receipts.Consumer{Kind: "model", ID: "triage"}, Purpose: "triage",
				Target: "https://model.example/v1/triage", Now: now})
			if err != nil {
				t.Fatal(err)
			}
			out, err := censor.Cut(context.Background(), censor.Input{Doc: doc, Vocabulary: v, Plan: plan, Key: key})
			if err != nil {
				t.Fatalf("censor: %v", err)
			}
			var export struct {
				Profile string `json:"profile"`
				Parts   []struct {
					Kind string `json:"kind"`
					Text string `json:"text"`
				} `json:"parts"`
			}
			if err := canon.Unmarshal(out.Export, &export, canon.Options{}); err != nil {
				t.Fatal(err)
			}
			var publicOut []spanText
			var publicItems []string
			for _, p := range export.Parts {
				text := []byte(p.Text)
				var spans []grammar.Span
				if _, refs := candidate.Parse(text, func(s grammar.Span) { spans = append(spans, s) }); len(refs) > 0 {
					t.Fatalf("export part refused: %v", refs)
				}
				masked := []byte(p.Text)
				for _, s := range spans {
					seg := text[s.Off : s.Off+s.Len]
					switch s.Kind {
					case grammar.SpanOwner:
						if !tokenRE.Match(seg) {
							t.Fatalf("owner slot in the export is not a token: %d bytes", len(seg))
						}
						for i := s.Off; i < s.Off+s.Len; i++ {
							masked[i] = 0
						}
					case grammar.SpanPublic:
						publicOut = append(publicOut, spanText{s.Class, string(seg)})
						publicItems = append(publicItems, string(seg))
						for i := s.Off; i < s.Off+s.Len; i++ {
							masked[i] = 0
						}
					}
				}
				for _, val := range private {
					if bytes.Contains(masked, []byte(val)) {
						t.Fatalf("an owner value (%d bytes) occurs in the export outside public items and tokens", len(val))
					}
				}
			}
			for _, val := range private {
				if bytes.Contains(out.Export, []byte(val)) && !inAny(val, publicItems) {
					t.Fatalf("an owner value (%d bytes) occurs in the export bytes", len(val))
				}
			}
			if d := cmp.Diff(publicIn, publicOut, cmp.AllowUnexported(spanText{})); d != "" {
				t.Fatalf("public items differ after the cut (-projection +export):\n%s", d)
			}
		})
	}
}

func inAny(s string, items []string) bool {
	for _, it := range items {
		if strings.Contains(it, s) {
			return true
		}
	}
	return false
}

// TestUnknownRefused: by default a finding with a public item the
// vocabulary lacks refuses the import, naming the first finding and class
// and counting all of them.
func TestUnknownRefused(t *testing.T) {
	v, _ := testVocab(t)
	input, _ := os.ReadFile("testdata/govulncheck/unknown.json")
	res, err := importer.Govulncheck(input, v, importer.Options{})
	var re *importer.RefusedError
	if !errors.As(err, &re) || res != nil {
		t.Fatalf("res %v err %v, want a refusal", res, err)
	}
	if re.Finding != 2 || re.Class != "diagnostic" || re.Code != receipts.UnknownDiagnostic {
		t.Fatalf("refusal %+v", re)
	}
	if got := re.Unknown.String(); got != "diagnostic 1, module 1, version 1, fixed 1, citation 1" {
		t.Fatalf("counts %q", got)
	}
	if want := "importer: finding 2: diagnostic not in the vocabulary (UNKNOWN_DIAGNOSTIC)"; err.Error() != want {
		t.Fatalf("message %q", err.Error())
	}

	vex, _ := os.ReadFile("testdata/openvex/no-subcomponents.json")
	_, err = importer.OpenVEX(vex, v, importer.Options{})
	if !errors.As(err, &re) || re.Class != "dependency" || re.Finding != 1 || re.Code != receipts.MalformedRecord {
		t.Fatalf("openvex without subcomponents: %v", err)
	}
	res, err = importer.OpenVEX(vex, v, importer.Options{OnUnknown: importer.Drop})
	if err != nil || res.Stats.Dropped != 1 || res.Stats.Written != 0 {
		t.Fatalf("drop: %v %+v", err, res)
	}

	_, err = importer.Govulncheck(input, v, importer.Options{OnUnknown: importer.Drop, Questions: []string{"triage.dump-source"}})
	if !errors.As(err, &re) || re.Class != "question" || re.Code != receipts.UnknownQuestion {
		t.Fatalf("unknown question: %v", err)
	}
}
