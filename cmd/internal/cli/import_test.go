package cli

import (
	"archive/zip"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/grammar"
)

const importerTestdata = "../../../importer/testdata"

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(importerTestdata, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestVocabBuild builds the importer's fixture vocabulary with the command:
// the bytes equal the committed fixture, the digest on stderr is the
// grammar's, and a zip of the same entries gives the same bytes.
func TestVocabBuild(t *testing.T) {
	e := newTestEnv(t)
	osvDir := filepath.Join(importerTestdata, "osv")
	mv := filepath.Join(importerTestdata, "modversions.txt")
	code, out, errb := e.run(t, "vocab", "build", "--osv", osvDir, "--module-versions", mv, "--pseudo-versions", "--revision", "importer-fixture")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	want := fixture(t, "vocab.json")
	if d := cmp.Diff(string(want), string(out)); d != "" {
		t.Fatalf("vocabulary (-fixture +command):\n%s", d)
	}
	v, err := grammar.LoadVocabulary(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(errb), "cut: vocab: digest "+v.Digest()+" (revision importer-fixture)\n") {
		t.Fatalf("stderr lacks the digest %s:\n%s", v.Digest(), errb)
	}
	for _, w := range []string{"4 entries from 4 JSON files", "module versions: 4 added; dropped 2 lines"} {
		if !strings.Contains(string(errb), w) {
			t.Errorf("stderr lacks %q:\n%s", w, errb)
		}
	}

	// A zip of the entries, in another order, to a file.
	zpath := filepath.Join(e.dir, "vulndb.zip")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	names, _ := filepath.Glob(filepath.Join(osvDir, "*.json"))
	for i := len(names) - 1; i >= 0; i-- {
		w, _ := zw.Create("ID/" + filepath.Base(names[i]))
		data, _ := os.ReadFile(names[i])
		w.Write(data)
	}
	w, _ := zw.Create("index/db.json")
	w.Write([]byte(`{"modified":"2024-06-03T19:13:30Z"}`))
	zw.Close()
	os.WriteFile(zpath, buf.Bytes(), 0o644)
	outPath := filepath.Join(e.dir, "vocab.json")
	code, out, errb = e.run(t, "vocab", "build", "--osv", zpath, "--module-versions", mv, "--pseudo-versions", "--revision", "importer-fixture", "-o", outPath)
	if code != ExitOK || len(out) != 0 {
		t.Fatalf("exit %d, stdout %d bytes: %s", code, len(out), errb)
	}
	got, _ := os.ReadFile(outPath)
	if !bytes.Equal(got, want) {
		t.Fatal("the zip gives other bytes than the directory")
	}

	// Without --pseudo-versions the scans' x/net pseudo-version is left
	// out, counted, with a hint.
	code, out, errb = e.run(t, "vocab", "build", "--osv", osvDir, "--module-versions", mv, "--revision", "importer-fixture")
	if code != ExitOK || bytes.Contains(out, []byte("v0.0.0-20220722155237-a158d28d115b")) ||
		!strings.Contains(string(errb), "1 pseudo-versions") || !strings.Contains(string(errb), "--pseudo-versions takes them") {
		t.Fatalf("default: exit %d\n%s", code, errb)
	}

	for _, args := range [][]string{{"vocab"}, {"vocab", "make"}, {"vocab", "build"}, {"vocab", "build", "--osv", osvDir, "extra"}} {
		if code, _, _ := e.run(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := e.run(t, "vocab", "build", "--osv", filepath.Join(e.dir, "missing")); code != ExitError {
		t.Errorf("missing database: exit %d, want 1", code)
	}
	bad := filepath.Join(e.dir, "bad")
	os.MkdirAll(bad, 0o755)
	os.WriteFile(filepath.Join(bad, "GO-1.json"), []byte(`{"id":"GO-1","id":"GO-2"}`), 0o644)
	if code, _, errb := e.run(t, "vocab", "build", "--osv", bad); code != ExitError || !strings.Contains(string(errb), "GO-1.json: not strict JSON") {
		t.Errorf("malformed entry: exit %d: %s", code, errb)
	}
}

// importEnv is a test environment whose vocabulary is the importer's
// fixture vocabulary.
func importEnv(t *testing.T) *testEnv {
	e := newTestEnv(t)
	if err := os.WriteFile(e.vocab, fixture(t, "vocab.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestImportGovulncheck: the command writes the golden projection, which
// `cut check` accepts with the same vocabulary; counts go to stderr.
func TestImportGovulncheck(t *testing.T) {
	e := importEnv(t)
	stream := filepath.Join(importerTestdata, "govulncheck", "source-symbol.json")
	co := filepath.Join(importerTestdata, "CODEOWNERS")
	code, out, errb := e.run(t, "import", "govulncheck", "--vocab", e.vocab, "--codeowners", co,
		"--ask", "triage.rank-by-severity", "--ask", "triage.suggest-upgrade", stream)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if d := cmp.Diff(string(fixture(t, "golden/govulncheck-symbol.json")), string(out)); d != "" {
		t.Fatalf("projection (-golden +command):\n%s", d)
	}
	wantErr := "cut: import: 13 findings, 13 written, 0 dropped\ncut: import: owner slots: module 5, package 5, function 5, file 5, team 4, person 3\n"
	if string(errb) != wantErr {
		t.Fatalf("stderr %q, want %q", errb, wantErr)
	}

	// To a file (0600, nothing on stdout), from stdin, then through check.
	proj := filepath.Join(e.dir, "proj.json")
	var o, eb bytes.Buffer
	code = Run(context.Background(), []string{"import", "govulncheck", "--vocab", e.vocab, "-o", proj, "-"},
		Env{Stdin: bytes.NewReader(fixture(t, "govulncheck/source-symbol.json")), Stdout: &o, Stderr: &eb, Getenv: e.getenv})
	if code != ExitOK || o.Len() != 0 {
		t.Fatalf("exit %d, stdout %q: %s", code, o.String(), eb.String())
	}
	fi, err := os.Stat(proj)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("projection file: %v %v", err, fi.Mode())
	}
	code, out, errb = e.run(t, "check", "--vocab", e.vocab, "--json", proj)
	if code != ExitOK || !strings.Contains(string(out), `"owner_spans":{"file":5,"function":5,"module":5,"package":5}`) {
		t.Fatalf("check: exit %d %s %s", code, out, errb)
	}
}

func TestImportOtherFormats(t *testing.T) {
	e := importEnv(t)
	co := filepath.Join(importerTestdata, "CODEOWNERS")
	for _, tt := range []struct {
		format, input, golden string
		flags                 []string
	}{
		{"openvex", "openvex/govulncheck.json", "golden/openvex.json", nil},
		{"osv-scanner", "osv-scanner/report.json", "golden/osv-scanner.json",
			[]string{"--codeowners", co, "--repo-root", "/home/dana/src/ledger", "--ask", "triage.summarize"}},
	} {
		args := append([]string{"import", tt.format, "--vocab", e.vocab}, tt.flags...)
		code, out, errb := e.run(t, append(args, filepath.Join(importerTestdata, tt.input))...)
		if code != ExitOK {
			t.Fatalf("%s: exit %d: %s", tt.format, code, errb)
		}
		if d := cmp.Diff(string(fixture(t, tt.golden)), string(out)); d != "" {
			t.Fatalf("%s (-golden +command):\n%s", tt.format, d)
		}
	}
	_, _, errb := e.run(t, "import", "osv-scanner", "--vocab", e.vocab, filepath.Join(importerTestdata, "osv-scanner/report.json"))
	if !strings.Contains(string(errb), "1 packages of other ecosystems skipped") {
		t.Fatalf("stderr: %s", errb)
	}
}

var eventRE = regexp.MustCompile(`\(event (evt:[^)]+)\)`)

// TestImportRefusals: malformed streams and unknown items exit 3 with a
// content-free message and the refusal document on stdout, write nothing of
// the projection (-o untouched) and are journalled.
func TestImportRefusals(t *testing.T) {
	e := importEnv(t)
	good := bytes.ReplaceAll(fixture(t, "govulncheck/source-symbol.json"), []byte("git.corp.example/payments/ledger"), []byte(canary))
	unknown := bytes.ReplaceAll(fixture(t, "govulncheck/unknown.json"), []byte("git.corp.example/payments/ledger"), []byte(canary))
	tests := []struct {
		name  string
		input []byte
		flags []string
		words []string
	}{
		{"truncated", good[:len(good)/2], nil, []string{"truncated message", "MALFORMED_RECORD"}},
		{"trailing garbage", append(append([]byte(nil), good...), canary...), nil, []string{"trailing data"}},
		{"duplicate key", bytes.Replace(good, []byte(`"osv": "GO-2022-1144",`), []byte(`"osv": "GO-2022-1144", "osv": "`+canary+`",`), 1), nil, []string{"duplicate key"}},
		{"two kinds", bytes.Replace(good, []byte(`{
  "progress": {`), []byte(`{
  "osv": {"id": "`+canary+`"},
  "progress": {`), 1), nil, []string{"message 2", "more than one kind"}},
		{"wrong type", bytes.Replace(good, []byte(`"receiver": "*Negotiator"`), []byte(`"receiver": ["`+canary+`"]`), 1), nil, []string{".receiver: expected string"}},
		{"unknown kind", append(append([]byte(nil), good...), `{"vulnerability":{"x":"`+canary+`"}}`...), nil, []string{"unknown message kind"}},
		{"unknown module", unknown, nil, []string{"finding 2: diagnostic not in the vocabulary (UNKNOWN_DIAGNOSTIC)",
			"findings with items not in the vocabulary: diagnostic 1, module 1, version 1, fixed 1, citation 1", "--on-unknown drop"}},
		{"owner value", bytes.Replace(good, []byte(`"function": "Pick",
        "receiver": "*Negotiator",`), []byte(`"function": "affected",`), 1), nil, []string{"finding 9: owner.function is equal to a vocabulary item (AMBIGUOUS_SPAN)",
			"cut: hint: an owner value is never altered: fix it where the scanner reads it, or --on-unknown drop to leave such findings out"}},
		{"owner character", bytes.Replace(good, []byte(`"filename": "internal/i18n/negotiate.go"`), []byte(`"filename": "internal/i18n/nego\ttiate.go"`), 1), nil,
			[]string{"finding 9: U+0009 TAB (a control character) at byte 18 of owner.file (UNCOVERED_TEXT)"}},
		{"codeowners", good, []string{"--codeowners", "bad-codeowners"}, []string{"codeowners: line 2: negated patterns"}},
	}
	os.WriteFile(filepath.Join(e.dir, "bad-codeowners"), []byte("* @a\n!"+canary+" @b\n"), 0o644)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := e.write(t, "stream.json", string(tt.input))
			outPath := filepath.Join(e.dir, "out.json")
			os.WriteFile(outPath, []byte("previous"), 0o600)
			flags := tt.flags
			for i := range flags {
				if flags[i] == "bad-codeowners" {
					flags[i] = filepath.Join(e.dir, "bad-codeowners")
				}
			}
			for _, toFile := range []bool{false, true} {
				args := append([]string{"import", "govulncheck", "--vocab", e.vocab}, flags...)
				if toFile {
					args = append(args, "-o", outPath)
				}
				code, out, errb := e.run(t, append(args, in)...)
				if code != ExitRefused {
					t.Fatalf("exit %d, want 3: %s", code, errb)
				}
				assertNoCanary(t, "stdout", out)
				if prev, _ := os.ReadFile(outPath); string(prev) != "previous" {
					t.Fatal("-o file changed")
				}
				for _, w := range tt.words {
					if !strings.Contains(string(errb), w) {
						t.Fatalf("stderr lacks %q:\n%s", w, errb)
					}
				}
				assertNoCanary(t, "stderr", errb)
				m := eventRE.FindSubmatch(errb)
				if m == nil {
					t.Fatalf("no event id on stderr:\n%s", errb)
				}
				if !regexp.MustCompile(`^refused: 1 reason \(event ` + string(m[1]) + `\)\n(import|codeowners)( line \d+ col \d+ len \d+)?: [A-Z_]+\n$`).Match(out) {
					t.Fatalf("stdout is not the refusal document of %s:\n%s", m[1], out)
				}
				j, err := os.ReadFile(e.journal)
				if err != nil || !bytes.Contains(j, m[1]) {
					t.Fatalf("journal lacks the refusal: %v", err)
				}
				assertNoCanary(t, "journal", j)
			}
			if tmp, _ := filepath.Glob(filepath.Join(e.dir, ".cut-*")); len(tmp) != 0 {
				t.Fatalf("temporary files left: %v", tmp)
			}
		})
	}

	// Drop: the unknown findings are left out and counted.
	in := e.write(t, "unknown.json", string(unknown))
	code, out, errb := e.run(t, "import", "govulncheck", "--vocab", e.vocab, "--on-unknown", "drop", in)
	if code != ExitOK || !strings.Contains(string(errb), "cut: import: 4 findings, 1 written, 3 dropped; not in the vocabulary: diagnostic 1, module 1, version 1, fixed 1, citation 1\n") {
		t.Fatalf("drop: exit %d: %s", code, errb)
	}
	if strings.Count(string(out), "finding GO-") != 1 {
		t.Fatalf("drop wrote:\n%s", out)
	}

	// Drop: a finding with an owner value the grammar refuses is left out
	// and counted by slot.
	bad := bytes.Replace(good, []byte(`"filename": "internal/i18n/negotiate.go"`), []byte(`"filename": "internal/i18n/nego\ttiate.go"`), 1)
	in = e.write(t, "bad.json", string(bad))
	code, out, errb = e.run(t, "import", "govulncheck", "--vocab", e.vocab, "--on-unknown", "drop", in)
	if code != ExitOK || !regexp.MustCompile(`^cut: import: (\d+) findings, (\d+) written, 1 dropped; owner values refused by the grammar: owner.file 1\n`).Match(errb) {
		t.Fatalf("drop of an owner value: exit %d: %s", code, errb)
	}
	if bytes.Contains(out, []byte("nego")) {
		t.Fatalf("the dropped finding was written:\n%s", out)
	}
	assertNoCanary(t, "stderr", errb)
}

// TestImportOwnerHints: CODEOWNERS with absolute file names and no
// --repo-root hints at --repo-root; OpenVEX refuses the CODEOWNERS flags
// (it names no files) as a usage error.
func TestImportOwnerHints(t *testing.T) {
	e := importEnv(t)
	co := filepath.Join(importerTestdata, "CODEOWNERS")
	report := filepath.Join(importerTestdata, "osv-scanner/report.json")
	const hint = "cut: hint: 4 findings name absolute file names, which CODEOWNERS cannot match: no team or person for them; give --repo-root (the checkout's absolute path)\n"
	code, _, errb := e.run(t, "import", "osv-scanner", "--vocab", e.vocab, "--codeowners", co, report)
	if code != ExitOK || !strings.HasSuffix(string(errb), hint) || !strings.Contains(string(errb), "owner slots: file 4\n") {
		t.Fatalf("no --repo-root: exit %d:\n%s", code, errb)
	}
	code, _, errb = e.run(t, "import", "osv-scanner", "--vocab", e.vocab, "--codeowners", co, "--repo-root", "/home/dana/src/ledger", report)
	if code != ExitOK || strings.Contains(string(errb), "hint") || !strings.Contains(string(errb), "team") {
		t.Fatalf("with --repo-root: exit %d:\n%s", code, errb)
	}
	code, _, errb = e.run(t, "import", "osv-scanner", "--vocab", e.vocab, "--codeowners", co, "--repo-root", "/srv/other", report)
	if code != ExitOK || !strings.Contains(string(errb), "cut: hint: 4 findings name files outside the repository (of --repo-root, --module-dir): no team or person for them\n") {
		t.Fatalf("another --repo-root: exit %d:\n%s", code, errb)
	}
	vex := filepath.Join(importerTestdata, "openvex/govulncheck.json")
	for _, flag := range [][]string{{"--codeowners", co}, {"--module-dir=svc"}, {"-repo-root", "/x"}} {
		code, out, errb := e.run(t, append(append([]string{"import", "openvex", "--vocab", e.vocab}, flag...), vex)...)
		name := strings.TrimLeft(strings.SplitN(flag[0], "=", 2)[0], "-")
		want := "cut: error: cut import openvex: --" + name + " does not apply: an OpenVEX document names no files to match CODEOWNERS against\n"
		if code != ExitUsage || len(out) != 0 || string(errb) != want {
			t.Errorf("openvex %v: exit %d: %s", flag, code, errb)
		}
	}
}

func TestImportUsage(t *testing.T) {
	e := importEnv(t)
	for _, args := range [][]string{
		{"import"},
		{"import", "sarif", "--vocab", e.vocab},
		{"import", "govulncheck"},
		{"import", "govulncheck", "--vocab", e.vocab, "--on-unknown", "ignore"},
		{"import", "govulncheck", "--vocab", e.vocab, "a.json", "b.json"},
	} {
		if code, _, _ := e.run(t, args...); code != ExitUsage {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	if code, _, _ := e.run(t, "import", "govulncheck", "--vocab", e.vocab, filepath.Join(e.dir, "missing.json")); code != ExitError {
		t.Errorf("missing stream: exit %d, want 1", code)
	}
	in := e.write(t, "s.json", string(fixture(t, "govulncheck/source-module.json")))
	code, _, errb := e.run(t, "import", "govulncheck", "--vocab", e.vocab, "--ask", "triage.dump-source", in)
	if code != ExitRefused || !strings.Contains(string(errb), "question not in the vocabulary (UNKNOWN_QUESTION)") {
		t.Errorf("unknown question: exit %d: %s", code, errb)
	}
}
