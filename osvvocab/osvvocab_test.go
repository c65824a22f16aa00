package osvvocab

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/semver"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

var update = flag.Bool("update", false, "rewrite golden files")

const dbDir = "testdata/db"

func build(t *testing.T, add func(b *Builder)) *Vocabulary {
	t.Helper()
	b := New()
	add(b)
	v, err := b.Build("")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func withModuleVersions(t *testing.T, b *Builder) {
	t.Helper()
	data, err := os.ReadFile("testdata/modversions.txt")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddModuleVersions("modversions.txt", data); err != nil {
		t.Fatal(err)
	}
}

// TestBuildGolden builds the fixture database and module-versions file and
// compares the document with the golden file; the printed digest must be
// what the grammar computes for the document.
func TestBuildGolden(t *testing.T) {
	v := build(t, func(b *Builder) {
		if err := b.AddPath(dbDir); err != nil {
			t.Fatal(err)
		}
		withModuleVersions(t, b)
	})
	golden := "testdata/vocab.golden.json"
	if *update {
		if err := os.WriteFile(golden, v.JSON, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(string(want), string(v.JSON)); d != "" {
		t.Fatalf("vocabulary differs from %s (-want +got):\n%s", golden, d)
	}
	gv, err := grammar.LoadVocabulary(v.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if gv.Digest() != v.Digest {
		t.Fatalf("digest %s, grammar says %s", v.Digest, gv.Digest())
	}
	if !strings.HasPrefix(v.Revision, "osv-") || len(v.Revision) != 16 || gv.Revision() != v.Revision {
		t.Fatalf("revision %q", v.Revision)
	}

	wantStats := Stats{
		Files: 8, Entries: 5, NotEntries: 3, Ignored: 1,
		Skipped:     map[string]int{"diagnostic": 2, "citation": 4, "module": 1, "version": 2},
		OtherRanges: 1, OtherEcosystems: 1,
		VersionsAdded: 5, VersionsOutside: 3, VersionsReplaced: 1, VersionsInvalid: 2, VersionsPseudo: 1,
	}
	if d := cmp.Diff(wantStats, v.Stats); d != "" {
		t.Errorf("stats (-want +got):\n%s", d)
	}

	// What the grammar sees.
	checks := []struct {
		name string
		ok   bool
	}{
		{"diagnostic GO-2022-1059", gv.HasDiagnostic("GO-2022-1059")},
		{"alias CVE-2022-32149", gv.HasDiagnostic("CVE-2022-32149")},
		{"alias GHSA-69ch-w2m2-3vjp", gv.HasDiagnostic("GHSA-69ch-w2m2-3vjp")},
		{"withdrawn entry kept", gv.HasDiagnostic("GHSA-9xq2-quirks-0001")},
		{"module golang.org/x/text", gv.HasModule("golang.org/x/text")},
		{"fixed version gets its v", gv.HasVersion("golang.org/x/text", "v0.3.8")},
		{"introduced 0 is no version", !gv.HasVersion("golang.org/x/text", "v0")},
		{"stdlib prerelease event", gv.HasVersion("stdlib", "v1.19.0-0")},
		{"pseudo-version event", gv.HasVersion("golang.org/x/net", "v0.0.0-20220906165146-f3363e06e74c")},
		{"v already present is kept", gv.HasVersion("github.com/example/quirks", "v1.2.5")},
		{"last_affected", gv.HasVersion("github.com/example/quirks", "v1.4.2")},
		{"limit is no version", !gv.HasVersion("github.com/example/quirks", "v3.0.0")},
		{"ECOSYSTEM range ignored", !gv.HasVersion("github.com/example/quirks", "v9.9.9")},
		{"versions[] ignored", !gv.HasVersion("github.com/example/quirks", "v1.2.1")},
		{"npm package ignored", !gv.HasModule("left-pad")},
		{"module-versions: in-use version", gv.HasVersion("golang.org/x/text", "v0.3.7")},
		{"module-versions: pseudo-version left out", !gv.HasVersion("golang.org/x/net", "v0.0.0-20220722155237-a158d28d115b")},
		{"module-versions: stdlib", gv.HasVersion("stdlib", "v1.19.2")},
		{"module-versions: private module never", !gv.HasModule("git.corp.example/payments/shared")},
		{"module-versions: main module never", !gv.HasModule("git.corp.example/payments/ledger")},
		{"module-versions: unknown public module never", !gv.HasModule("gopkg.in/yaml.v3")},
		{"module-versions: replaced line dropped", !gv.HasVersion("golang.org/x/crypto", "v0.17.0")},
		{"module-versions: version without v dropped", !gv.HasVersion("github.com/example/quirks", "v1.3.1")},
		{"citation from references", gv.HasCitation("https://go.dev/issue/56152")},
		{"citation from database_specific", gv.HasCitation("https://pkg.go.dev/vuln/GO-2022-1059")},
		{"NFC citation kept", gv.HasCitation("https://example.test/caf\u00e9")},
		{"non-NFC citation skipped", !gv.HasCitation("https://example.test/cafe\u0301")},
		{"status", gv.HasStatus("under_investigation")},
		{"question", gv.HasQuestion("triage.explain-reachability")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: does not hold", c.name)
		}
	}
}

// dbFiles returns the fixture database as name → content.
func dbFiles(t *testing.T) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dbDir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dbDir, p)
		data, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestOrderIndependence adds the same entries in many orders, from a
// directory and from zip archives with other layouts: the bytes are equal.
func TestOrderIndependence(t *testing.T) {
	files := dbFiles(t)
	var names []string
	for n := range files {
		if strings.HasSuffix(n, ".json") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	ref := build(t, func(b *Builder) {
		if err := b.AddPath(dbDir); err != nil {
			t.Fatal(err)
		}
		withModuleVersions(t, b)
	})
	r := rand.New(rand.NewPCG(7, 9))
	for i := 0; i < 20; i++ {
		r.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
		got := build(t, func(b *Builder) {
			withModuleVersions(t, b) // before the entries: applied at Build
			for _, n := range names {
				if err := b.AddEntry(n, files[n]); err != nil {
					t.Fatal(err)
				}
			}
		})
		if !bytes.Equal(got.JSON, ref.JSON) || got.Digest != ref.Digest {
			t.Fatalf("order %v gives other bytes", names)
		}
	}

	// A zip with a prefix directory and reversed member order, as osv.dev's
	// all.zip (flat) or vuln.go.dev's vulndb.zip (ID/, index/) lay them out.
	for _, layout := range []string{"flat", "nested"} {
		zpath := filepath.Join(t.TempDir(), "db.zip")
		var buf bytes.Buffer
		zw := zip.NewWriter(&buf)
		for i := len(names) - 1; i >= 0; i-- {
			n := names[i]
			name := n
			if layout == "flat" {
				name = filepath.Base(n)
			}
			w, err := zw.Create(name)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(files[n])
		}
		if _, err := zw.Create("README.txt"); err != nil {
			t.Fatal(err)
		}
		zw.Close()
		if err := os.WriteFile(zpath, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		got := build(t, func(b *Builder) {
			if err := b.AddPath(zpath); err != nil {
				t.Fatal(err)
			}
			withModuleVersions(t, b)
		})
		if !bytes.Equal(got.JSON, ref.JSON) {
			t.Fatalf("zip (%s) gives other bytes", layout)
		}
	}
}

// writeTarGz writes a gzip-compressed tar archive of members (name, data)
// in order; a name ending in "/" is a directory, "->" a symbolic link.
func writeTarGz(t *testing.T, path string, members [][2]string) {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, m := range members {
		h := &tar.Header{Name: m[0], Mode: 0o644, Size: int64(len(m[1])), Typeflag: tar.TypeReg}
		switch {
		case strings.HasSuffix(m[0], "/"):
			h.Typeflag, h.Size, h.Mode = tar.TypeDir, 0, 0o755
		case strings.Contains(m[0], "->"):
			name, target, _ := strings.Cut(m[0], "->")
			h.Name, h.Linkname, h.Typeflag, h.Size = name, target, tar.TypeSymlink, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(m[1])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTarGz: the database as a tar.gz (a prefix directory, members in
// reverse order, directories, a symbolic link and a non-JSON file) gives
// the bytes of the directory form; the other members are counted as
// ignored.
func TestTarGz(t *testing.T) {
	files := dbFiles(t)
	var names []string
	for n := range files {
		if strings.HasSuffix(n, ".json") {
			names = append(names, n)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(names)))
	ref := build(t, func(b *Builder) {
		if err := b.AddPath(dbDir); err != nil {
			t.Fatal(err)
		}
		withModuleVersions(t, b)
	})
	members := [][2]string{{"vulndb/", ""}, {"vulndb/ID/", ""}, {"vulndb/README.txt", "not an entry"},
		{"vulndb/ID/LINK.json->GO-2022-1059.json", ""}}
	for _, n := range names {
		members = append(members, [2]string{"vulndb/" + n, string(files[n])})
	}
	path := filepath.Join(t.TempDir(), "vulndb.tar.gz")
	writeTarGz(t, path, members)
	got := build(t, func(b *Builder) {
		if err := b.AddPath(path); err != nil {
			t.Fatal(err)
		}
		withModuleVersions(t, b)
	})
	if !bytes.Equal(got.JSON, ref.JSON) || got.Digest != ref.Digest {
		t.Fatal("tar.gz gives other bytes than the directory")
	}
	if got.Stats.Files != ref.Stats.Files || got.Stats.Entries != ref.Stats.Entries {
		t.Fatalf("tar.gz: %d files, %d entries; directory %d, %d", got.Stats.Files, got.Stats.Entries, ref.Stats.Files, ref.Stats.Entries)
	}
	if want := 4; got.Stats.Ignored != want {
		t.Fatalf("tar.gz: %d ignored, want %d (2 directories, a link, a text file)", got.Stats.Ignored, want)
	}

	// A malformed entry in the archive refuses the build, naming the member.
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	writeTarGz(t, bad, [][2]string{{"ID/GO-1.json", `{"id": `}})
	var e *Error
	if err := New().AddPath(bad); !errors.As(err, &e) || e.Name != "ID/GO-1.json" || e.Reason != "not strict JSON" {
		t.Fatalf("malformed member: err %v", err)
	}

	// A gzip stream that is not a tar archive, and a truncated gzip stream.
	notTar := filepath.Join(t.TempDir(), "x.tar.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(bytes.Repeat([]byte("not a tar header "), 64))
	zw.Close()
	os.WriteFile(notTar, buf.Bytes(), 0o644)
	if err := New().AddPath(notTar); !errors.As(err, &e) || e.Reason != "not a readable tar.gz archive" {
		t.Fatalf("gzip of no tar: err %v", err)
	}
	os.WriteFile(notTar, buf.Bytes()[:12], 0o644)
	if err := New().AddPath(notTar); !errors.As(err, &e) || e.Reason != "not a readable tar.gz archive" {
		t.Fatalf("truncated gzip: err %v", err)
	}
}

// TestBuildTwice checks that Build does not consume the module-versions
// files or change the builder.
func TestBuildTwice(t *testing.T) {
	b := New()
	if err := b.AddPath(dbDir); err != nil {
		t.Fatal(err)
	}
	withModuleVersions(t, b)
	v1, err := b.Build("r1")
	if err != nil {
		t.Fatal(err)
	}
	v2, err := b.Build("r1")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(v1.JSON, v2.JSON) || v1.Revision != "r1" {
		t.Fatal("second Build differs")
	}
	if d := cmp.Diff(v1.Stats, v2.Stats); d != "" {
		t.Fatalf("stats differ:\n%s", d)
	}
}

func TestEmptyBuild(t *testing.T) {
	v := build(t, func(*Builder) {})
	gv, err := grammar.LoadVocabulary(v.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if !gv.HasStatus("affected") || !gv.HasQuestion("triage.summarize") || gv.Size()["diagnostics"] != 0 {
		t.Fatalf("sizes %v", gv.Size())
	}
}

// TestRefusals: malformed files refuse the build with the file's name and a
// fixed reason; the message never holds file content.
func TestRefusals(t *testing.T) {
	const secret = "ZQXSECRET"
	tests := []struct {
		name, data string
		want       string // in the message
		code       receipts.Code
	}{
		{"dup.json", `{"id":"GO-1","id":"GO-2","summary":"` + secret + `"}`, "not strict JSON", receipts.MalformedRecord},
		{"trailing.json", `{"id":"GO-1"} ` + secret, "not strict JSON", receipts.MalformedRecord},
		{"utf8.json", "{\"id\":\"GO-1\",\"summary\":\"" + secret + "\xff\"}", "not strict JSON", receipts.InvalidUTF8},
		{"type.json", `{"id":"GO-1","aliases":"` + secret + `"}`, "aliases: expected array", ""},
		{"type2.json", `{"id":"GO-1","affected":[{"package":{"name":"m","ecosystem":"Go"},"ranges":[{"type":"SEMVER","events":[{"fixed":7}]}]}]}`, "affected[0].ranges[0].events[0].fixed: expected string", ""},
		{"ref.json", `{"id":"GO-1","references":[{"url":["` + secret + `"]}]}`, "references[0].url: expected string", ""},
		{"ds.json", `{"id":"GO-1","database_specific":"` + secret + `"}`, "database_specific: expected object", ""},
		{"id.json", `{"id":""}`, "id: empty", ""},
		{"idtype.json", `{"id":{"x":"` + secret + `"}}`, "id: expected string", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := New().AddEntry("ID/"+tt.name, []byte(tt.data))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err %v, want *Error", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, "ID/"+tt.name) || !strings.Contains(msg, tt.want) {
				t.Fatalf("message %q lacks name or %q", msg, tt.want)
			}
			if strings.Contains(msg, "ZQX") {
				t.Fatalf("message holds input: %q", msg)
			}
			if tt.code != "" {
				var se *canon.SyntaxError
				if !errors.As(err, &se) || receipts.Code(se.Class) != tt.code {
					t.Fatalf("err %v, want a syntax error %s", err, tt.code)
				}
			}
		})
	}
}

// TestSizeCaps: a zip or tar.gz member over the per-file cap is refused
// from its declared size, a file on disk from its read size.
func TestSizeCaps(t *testing.T) {
	dir := t.TempDir()
	big := append([]byte(`{"id":"GO-1","details":"`), bytes.Repeat([]byte{'a'}, MaxEntryBytes)...)
	big = append(big, `"}`...)

	zpath := filepath.Join(dir, "bomb.zip")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("ID/GO-1.json")
	w.Write(big)
	zw.Close()
	if buf.Len() > 1<<20 {
		t.Fatalf("test zip is %d bytes; expected a small compressed member", buf.Len())
	}
	os.WriteFile(zpath, buf.Bytes(), 0o644)
	if err := New().AddPath(zpath); !errors.Is(err, ErrLimit) {
		t.Fatalf("zip: err %v, want ErrLimit", err)
	}

	tpath := filepath.Join(dir, "bomb.tar.gz")
	writeTarGz(t, tpath, [][2]string{{"ID/GO-1.json", string(big)}})
	if fi, _ := os.Stat(tpath); fi.Size() > 1<<20 {
		t.Fatalf("test tar.gz is %d bytes; expected a small compressed member", fi.Size())
	}
	if err := New().AddPath(tpath); !errors.Is(err, ErrLimit) {
		t.Fatalf("tar.gz: err %v, want ErrLimit", err)
	}

	sub := filepath.Join(dir, "db", "ID")
	os.MkdirAll(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "GO-1.json"), big, 0o644)
	if err := New().AddPath(filepath.Join(dir, "db")); !errors.Is(err, ErrLimit) {
		t.Fatalf("dir: err %v, want ErrLimit", err)
	}

	mv := bytes.Repeat([]byte("m v1.0.0\n"), MaxModuleVersionsBytes/9+1)
	if err := New().AddModuleVersions("mv", mv); !errors.Is(err, ErrLimit) {
		t.Fatalf("module versions: err %v, want ErrLimit", err)
	}
}

func TestAddPathKinds(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "GO-2022-1059.json")
	data, _ := os.ReadFile(filepath.Join(dbDir, "ID", "GO-2022-1059.json"))
	os.WriteFile(one, data, 0o644)
	v := build(t, func(b *Builder) {
		if err := b.AddPath(one); err != nil {
			t.Fatal(err)
		}
	})
	gv, _ := grammar.LoadVocabulary(v.JSON)
	if !gv.HasDiagnostic("GO-2022-1059") || v.Stats.Entries != 1 {
		t.Fatal("single JSON file not read")
	}
	other := filepath.Join(dir, "notes.txt")
	os.WriteFile(other, []byte("x"), 0o644)
	var e *Error
	if err := New().AddPath(other); !errors.As(err, &e) {
		t.Fatalf("text file: err %v", err)
	}
	badzip := filepath.Join(dir, "bad.zip")
	os.WriteFile(badzip, []byte("PK\x03\x04 truncated"), 0o644)
	if err := New().AddPath(badzip); !errors.As(err, &e) {
		t.Fatalf("bad zip: err %v", err)
	}
	if err := New().AddPath(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("missing path accepted")
	}

	// A symbolic link inside a directory is not followed.
	ld := filepath.Join(dir, "linked")
	os.MkdirAll(ld, 0o755)
	if err := os.Symlink(one, filepath.Join(ld, "GO-2022-1059.json")); err == nil {
		v := build(t, func(b *Builder) {
			if err := b.AddPath(ld); err != nil {
				t.Fatal(err)
			}
		})
		if v.Stats.Entries != 0 || v.Stats.Ignored != 1 {
			t.Fatalf("symlink followed: %+v", v.Stats)
		}
	}
}

// TestValidItemAgreesWithGrammar checks the ASCII fast path against the
// grammar on a table of edge cases, for every class.
func TestValidItemAgreesWithGrammar(t *testing.T) {
	items := []string{
		"GO-2022-1059", "", " ", "a b", "a\tb", "a\"b", `a\b`, "a\x7fb", "a\x01b",
		"a@b", "fixed=x", "fixed", "https://go.dev/issue/1", "é", "e\u0301", "a\u200bb",
		"a\u00a0b", "a\u2028b", "\ufdd0", "ok\u00e9", strings.Repeat("x", 4096), strings.Repeat("x", 4097),
		"v1.2.3", "v1.2.3+incompatible", "~", "!",
	}
	classes := []grammar.Class{grammar.ClassDiagnostic, grammar.ClassModule, grammar.ClassVersion, grammar.ClassCitation}
	for _, c := range classes {
		for _, s := range items {
			if got, want := validItem(c, s), probe(c, s); got != want {
				t.Errorf("%s %q: validItem %v, grammar %v", c, s, got, want)
			}
		}
	}
}

func FuzzValidItem(f *testing.F) {
	for _, s := range []string{"GO-2022-1059", "a b", "é", "e\u0301", "a@b", "fixed=1", "\x00"} {
		f.Add(s, uint8(0))
	}
	classes := []grammar.Class{grammar.ClassDiagnostic, grammar.ClassModule, grammar.ClassVersion, grammar.ClassCitation}
	f.Fuzz(func(t *testing.T, s string, ci uint8) {
		c := classes[int(ci)%len(classes)]
		if got, want := validItem(c, s), probe(c, s); got != want {
			t.Fatalf("%s %q: validItem %v, grammar %v", c, s, got, want)
		}
	})
}

// FuzzAddEntry: any bytes as an entry either refuse with an *Error or build
// a vocabulary the grammar loads.
func FuzzAddEntry(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(dbDir, "*", "*.json"))
	for _, p := range files {
		data, _ := os.ReadFile(p)
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		b := New()
		if err := b.AddEntry("x.json", data); err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v is not an *Error", err)
			}
			return
		}
		if _, err := b.Build(""); err != nil {
			t.Fatalf("accepted entry does not build: %v", err)
		}
	})
}

// TestPseudoVersions: pseudo-versions from a module-versions file are left
// out unless allowed; one the OSV entries name is kept either way; release
// and prerelease versions are not pseudo-versions (a prerelease needs its
// own flag, TestPrereleaseVersions).
func TestPseudoVersions(t *testing.T) {
	const x = "golang.org/x/net"
	mv := []byte(x + " v0.0.0-20220722155237-a158d28d115b v0.0.0-20220906165146-f3363e06e74c v0.3.1-0.20220101000000-0123456789ab v0.4.0-rc.1.0.20220101000000-0123456789ab v1.2.3-rc.1 v0.1.0\n")
	for _, allow := range []bool{false, true} {
		v := build(t, func(b *Builder) {
			if err := b.AddPath(dbDir); err != nil {
				t.Fatal(err)
			}
			if err := b.AddModuleVersions("mv", mv); err != nil {
				t.Fatal(err)
			}
			if allow {
				b.AllowPseudoVersions()
			}
		})
		gv, err := grammar.LoadVocabulary(v.JSON)
		if err != nil {
			t.Fatal(err)
		}
		for ver, want := range map[string]bool{
			"v0.0.0-20220722155237-a158d28d115b":        allow,
			"v0.3.1-0.20220101000000-0123456789ab":      allow,
			"v0.4.0-rc.1.0.20220101000000-0123456789ab": allow,
			"v0.0.0-20220906165146-f3363e06e74c":        true,  // an OSV event
			"v1.2.3-rc.1":                               false, // a prerelease, not a pseudo-version
			"v0.1.0":                                    true,
		} {
			if gv.HasVersion(x, ver) != want {
				t.Errorf("allow %v: %s in the vocabulary: %v, want %v", allow, ver, !want, want)
			}
		}
		if wantSkipped := map[bool]int{false: 3, true: 0}[allow]; v.Stats.VersionsPseudo != wantSkipped {
			t.Errorf("allow %v: %d pseudo-versions left out, want %d", allow, v.Stats.VersionsPseudo, wantSkipped)
		}
		if v.Stats.VersionsPrerelease != 1 {
			t.Errorf("allow %v: %d prerelease versions left out, want 1", allow, v.Stats.VersionsPrerelease)
		}
	}
}

// TestPrereleaseVersions: the forgery of testdata/fork-tags.txt. A fork's
// own prerelease and build-metadata tags, in a module-versions file, are
// left out of the vocabulary unless allowed, and counted; a finding at such
// a version is then refused UNKNOWN_VERSION instead of passing as public
// text. Release versions (also with "+incompatible") are taken; prerelease
// versions an OSV entry names are kept either way.
func TestPrereleaseVersions(t *testing.T) {
	mv, err := os.ReadFile("testdata/fork-tags.txt")
	if err != nil {
		t.Fatal(err)
	}
	forkTags := map[string][]string{
		"golang.org/x/text": {"v0.3.8-acme-payments-ledger.1", "v0.3.7+corp"},
		"golang.org/x/net":  {"v0.0.1-acme-payments-ledger.2+build.7", "v0.2.0-rc.1"},
	}
	for _, allow := range []bool{false, true} {
		v := build(t, func(b *Builder) {
			if err := b.AddPath(dbDir); err != nil {
				t.Fatal(err)
			}
			if err := b.AddModuleVersions("fork-tags.txt", mv); err != nil {
				t.Fatal(err)
			}
			if allow {
				b.AllowPrereleaseVersions()
			}
		})
		gv, err := grammar.LoadVocabulary(v.JSON)
		if err != nil {
			t.Fatal(err)
		}
		for mod, tags := range forkTags {
			for _, tag := range tags {
				if gv.HasVersion(mod, tag) != allow {
					t.Errorf("allow %v: %s@%s in the vocabulary: %v", allow, mod, tag, !allow)
				}
			}
		}
		if !gv.HasVersion("github.com/example/quirks", "v2.0.0+incompatible") {
			t.Errorf("allow %v: a release with +incompatible left out", allow)
		}
		if !gv.HasVersion("stdlib", "v1.19.0-0") {
			t.Errorf("allow %v: a prerelease OSV event left out", allow)
		}
		if bytes.Contains(v.JSON, []byte("acme-payments-ledger")) != allow {
			t.Errorf("allow %v: the fork's name in the vocabulary: %v", allow, !allow)
		}
		wantStats := map[bool][2]int{false: {1, 4}, true: {5, 0}}[allow]
		if got := [2]int{v.Stats.VersionsAdded, v.Stats.VersionsPrerelease}; got != wantStats {
			t.Errorf("allow %v: added, prerelease left out = %v, want %v", allow, got, wantStats)
		}

		// What the cut makes of a finding at the fork's tag.
		text := "finding GO-2022-1059 golang.org/x/text@v0.3.8-acme-payments-ledger.1 affected https://go.dev/issue/56152\n"
		proj, _ := json.Marshal(map[string]any{"schema": "Projection@1", "profile": "closed-diagnostic@1",
			"parts": []any{map[string]any{"kind": "block", "key": "k", "text": text,
				"label":   map[string]any{"class": "private", "weight": 1, "categories": []string{}, "subjects": []string{}, "parents": []string{}, "handling": []string{}},
				"lineage": []string{"sha256:" + strings.Repeat("0", 64)}}}})
		doc, refs := grammar.LoadProjection(proj, grammar.LoadOptions{})
		if refs != nil {
			t.Fatal(refs)
		}
		res := grammar.Check(doc, grammar.NewParser(gv, grammar.Options{}), 0, nil)
		if allow {
			if !res.OK() {
				t.Errorf("allowed: the finding is refused: %v", res.Refusals)
			}
		} else if res.OK() || res.Refusals[0].Code != receipts.UnknownVersion {
			t.Errorf("not allowed: the fork's tag passes as public text (refusals %v)", res.Refusals)
		}
	}
}

// TestPrereleaseOrBuild: for semantic versions, the rule is semver's
// prerelease and build metadata, "+incompatible" on a release aside.
func TestPrereleaseOrBuild(t *testing.T) {
	for _, v := range []string{"v1.2.3", "v1.2.3-rc.1", "v1.2.3+corp", "v1.2.3-rc.1+corp", "v2.0.0+incompatible",
		"v2.0.0-rc.1+incompatible", "v2.0.0+corp.incompatible", "v1.0.7-acme-payments-ledger.1", "v0.0.0-20220722155237-a158d28d115b",
		"v1.19.0-0", "v3.1.4+incompatible"} {
		if !semver.IsValid(v) {
			t.Fatalf("%s is not a semantic version", v)
		}
		want := semver.Prerelease(v) != "" || semver.Build(v) != "" && semver.Build(v) != "+incompatible"
		if got := prereleaseOrBuild(v); got != want {
			t.Errorf("prereleaseOrBuild(%s) = %v, semver says %v", v, got, want)
		}
	}
}

// FuzzModuleVersions: a module-versions file of any content either refuses
// the build with the content-free *Error of its first line that is not
// UTF-8, or builds a vocabulary with the same modules as without it, to
// which it adds exactly the "v…" version items on its lines (not comments,
// not replacements) about those modules, pseudo-versions only when allowed,
// other versions with a prerelease or build-metadata part (but a release's
// "+incompatible") only when those are allowed,
// as many as Stats.VersionsAdded counts. The build is deterministic.
func FuzzModuleVersions(f *testing.F) {
	const canary = "CANARY-2b7c-ledger"
	mv, err := os.ReadFile("testdata/modversions.txt")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(mv, false, false)
	f.Add(mv, true, true)
	if forks, err := os.ReadFile("testdata/fork-tags.txt"); err == nil {
		f.Add(forks, false, false)
		f.Add(forks, false, true)
	}
	for _, s := range []string{
		"golang.org/x/net v0.5.0 v0.6.0\r\n# golang.org/x/net v9.9.9\n\tgolang.org/x/text  v0.3.9\t\n",
		"golang.org/x/net v0.0.0-20230101000000-0123456789ab v0.7.1-0.20230101000000-0123456789ab\n",
		"golang.org/x/net v0.8.0\u00a0v0.9.0\u2028v0.10.0\n",
		"golang.org/x/net v0.8.0 => ../net\n",
		"golang.org/x/net v0.8.0 v0.8.0@x v0.8.0\"x v0.8.0\\x x0.8.0 v " + canary + "\n",
		"golang.org/x/net v" + canary + "\xff\n",
		"# " + canary + "\xff\n" + canary + " \xfe\n",
		"stdlib v1.21.0\n" + canary + " v1.0.0\n",
		"golang.org/x/net e\u0301v1.0.0 v1.0.0-e\u0301\n",
		"golang.org/x/net v0.9.0-" + canary + ".1 v0.9.0+corp v2.0.0+incompatible v2.0.0+corp+incompatible\n",
		"", "\n\n", "\xff", "golang.org/x/net",
	} {
		f.Add([]byte(s), false, false)
		f.Add([]byte(s), true, false)
		f.Add([]byte(s), false, true)
	}
	b := New()
	if err := b.AddPath(dbDir); err != nil {
		f.Fatal(err)
	}
	base, err := b.Build("")
	if err != nil {
		f.Fatal(err)
	}
	var bd vocabDoc
	if err := canon.Unmarshal(base.JSON, &bd, canon.Options{}); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, pseudo, prerelease bool) {
		b.extra, b.extraNames, b.pseudo, b.prerelease = nil, nil, pseudo, prerelease
		if err := b.AddModuleVersions("mv", data); err != nil {
			t.Fatalf("AddModuleVersions: %v", err)
		}
		v, err := b.Build("")
		v2, err2 := b.Build("")
		if (err == nil) != (err2 == nil) || err != nil && err.Error() != err2.Error() || err == nil && !bytes.Equal(v.JSON, v2.JSON) {
			t.Fatalf("two builds differ: %v / %v", err, err2)
		}

		// The reference: the file's lines as documented.
		add := map[string]map[string]bool{}
		for m := range bd.Modules {
			add[m] = map[string]bool{}
		}
		bad := 0
		for n, line := range bytes.Split(data, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 || line[0] == '#' {
				continue
			}
			if !utf8.Valid(line) {
				bad = n + 1
				break
			}
			fields := strings.Fields(string(line))
			if strings.Contains(string(line), "=>") || add[fields[0]] == nil {
				continue
			}
			for _, ver := range fields[1:] {
				if !strings.HasPrefix(ver, "v") || !validItem(grammar.ClassVersion, ver) {
					continue
				}
				// A pseudo-version only when allowed; any other version
				// with a '-' or '+' (but a release's "+incompatible")
				// only when prereleases are allowed.
				isPseudo := pseudoVersion.MatchString(ver)
				core := strings.TrimSuffix(ver, "+incompatible")
				if isPseudo && !pseudo || !isPseudo && !prerelease && strings.ContainsAny(core, "-+") {
					continue
				}
				add[fields[0]][ver] = true
			}
		}
		if bad > 0 {
			var e *Error
			if !errors.As(err, &e) || e.Err != nil {
				t.Fatalf("line %d is not UTF-8: error %v", bad, err)
			}
			if want := "osvvocab: mv: line " + strconv.Itoa(bad) + ": invalid UTF-8"; err.Error() != want {
				t.Fatalf("error text %q, want %q", err.Error(), want)
			}
			return
		}
		if err != nil {
			t.Fatalf("build refused: %v", err)
		}
		var d vocabDoc
		if err := canon.Unmarshal(v.JSON, &d, canon.Options{}); err != nil {
			t.Fatal(err)
		}
		if len(d.Modules) != len(bd.Modules) {
			t.Fatalf("%d modules, %d without the file", len(d.Modules), len(bd.Modules))
		}
		added := 0
		for m, vers := range d.Modules {
			want := add[m]
			if want == nil {
				t.Fatalf("module %q added", m)
			}
			for _, ver := range bd.Modules[m] {
				want[ver] = true
			}
			got := map[string]bool{}
			for _, ver := range vers {
				got[ver] = true
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("versions of %s (-want +got):\n%s", m, diff)
			}
			added += len(vers) - len(bd.Modules[m])
		}
		if added != v.Stats.VersionsAdded {
			t.Fatalf("%d versions added, Stats says %d", added, v.Stats.VersionsAdded)
		}
	})
}
