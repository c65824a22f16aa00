package osvvocab

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// Limits on what a build reads. A limit refuses the build; nothing is
// truncated.
const (
	MaxEntryBytes          = 16 << 20 // one OSV file
	MaxTotalBytes          = 2 << 30  // all OSV files read, uncompressed
	MaxFiles               = 1 << 20  // files looked at
	MaxModuleVersionsBytes = 64 << 20 // one module-versions file
)

// Statuses are the statuses every built vocabulary holds: the OpenVEX
// status words.
var Statuses = []string{"affected", "not_affected", "fixed", "under_investigation"}

// Questions are the questions every built vocabulary holds.
var Questions = []string{
	"triage.rank-by-severity",
	"triage.suggest-upgrade",
	"triage.explain-reachability",
	"triage.summarize",
}

// Error is a file the build cannot use. Name is the file's path within the
// database (or the module-versions file's name); Reason is fixed text. Err,
// when set, is the strict JSON reader's content-free *canon.SyntaxError.
type Error struct {
	Name   string
	Reason string
	Err    error
}

func (e *Error) Error() string {
	msg := "osvvocab: " + e.Name + ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// ErrLimit is wrapped by errors for a file, archive or build over a limit.
var ErrLimit = errors.New("osvvocab: limit exceeded")

// Stats counts what a build read and what it left out.
type Stats struct {
	Files      int // JSON files read
	Entries    int // OSV entries among them
	NotEntries int // JSON files that are not OSV entries (index files)
	Ignored    int // other files: not *.json, not regular, directories in an archive
	// Skipped counts items that can never be vocabulary items, by class
	// ("diagnostic", "module", "version", "citation").
	Skipped map[string]int
	// OtherRanges counts ranges that are not SEMVER (their events are not
	// versions of a Go module); OtherEcosystems counts affected packages of
	// other ecosystems.
	OtherRanges, OtherEcosystems int
	// Module-versions lines: versions added, lines about modules the entries
	// do not name, lines with a replacement ("=>"), versions that are not
	// "v…" vocabulary items, pseudo-versions left out (without
	// AllowPseudoVersions), and other versions with a prerelease or build
	// metadata part left out (without AllowPrereleaseVersions).
	VersionsAdded, VersionsOutside, VersionsReplaced, VersionsInvalid, VersionsPseudo int
	VersionsPrerelease                                                                int
}

// Builder collects the items of OSV entries. The zero value is not usable;
// call New. A Builder is not safe for concurrent use.
type Builder struct {
	diagnostics map[string]bool
	citations   map[string]bool
	modules     map[string]map[string]bool
	extra       [][]byte // module-versions files, applied by Build
	extraNames  []string
	pseudo      bool // take pseudo-versions from module-versions files
	prerelease  bool // take other prerelease and build-metadata versions from them
	total       int64
	stats       Stats
}

// New returns an empty Builder.
func New() *Builder {
	return &Builder{
		diagnostics: map[string]bool{},
		citations:   map[string]bool{},
		modules:     map[string]map[string]bool{},
		stats:       Stats{Skipped: map[string]int{}},
	}
}

// AddPath adds the entries of a directory (recursively), a zip archive, a
// gzip-compressed tar archive or a single JSON file.
func (b *Builder) AddPath(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return b.addDir(path)
	}
	if !fi.Mode().IsRegular() {
		return &Error{Name: filepath.Base(path), Reason: "not a directory, zip archive, tar.gz archive or JSON file"}
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	f.Close()
	if n == 4 && (string(magic[:]) == "PK\x03\x04" || string(magic[:]) == "PK\x05\x06") {
		return b.addZip(path)
	}
	if n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		return b.addTarGz(path)
	}
	if strings.HasSuffix(path, ".json") {
		data, err := readCapped(path, filepath.Base(path))
		if err != nil {
			return err
		}
		return b.AddEntry(filepath.Base(path), data)
	}
	return &Error{Name: filepath.Base(path), Reason: "not a directory, zip archive, tar.gz archive or JSON file"}
}

func (b *Builder) count() error {
	if b.stats.Files+b.stats.Ignored >= MaxFiles {
		return &Error{Name: "(database)", Reason: fmt.Sprintf("more than %d files", MaxFiles), Err: ErrLimit}
	}
	return nil
}

func (b *Builder) addDir(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if err := b.count(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if !d.Type().IsRegular() || !strings.HasSuffix(p, ".json") {
			b.stats.Ignored++
			return nil
		}
		data, err := readCapped(p, rel)
		if err != nil {
			return err
		}
		return b.AddEntry(rel, data)
	})
}

func (b *Builder) addZip(path string) error {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return &Error{Name: filepath.Base(path), Reason: "not a readable zip archive"}
	}
	defer zr.Close()
	files := append([]*zip.File(nil), zr.File...)
	sort.Slice(files, func(i, j int) bool { return files[i].Name < files[j].Name })
	for _, f := range files {
		if err := b.count(); err != nil {
			return err
		}
		if f.FileInfo().IsDir() || !f.FileInfo().Mode().IsRegular() || !strings.HasSuffix(f.Name, ".json") {
			b.stats.Ignored++
			continue
		}
		if f.UncompressedSize64 > MaxEntryBytes {
			return &Error{Name: f.Name, Reason: fmt.Sprintf("larger than %d bytes", MaxEntryBytes), Err: ErrLimit}
		}
		rc, err := f.Open()
		if err != nil {
			return &Error{Name: f.Name, Reason: "unreadable zip member"}
		}
		// The declared size is not trusted: the read itself is capped.
		data, err := io.ReadAll(io.LimitReader(rc, MaxEntryBytes+1))
		rc.Close()
		if err != nil {
			return &Error{Name: f.Name, Reason: "unreadable zip member"}
		}
		if len(data) > MaxEntryBytes {
			return &Error{Name: f.Name, Reason: fmt.Sprintf("larger than %d bytes", MaxEntryBytes), Err: ErrLimit}
		}
		if err := b.AddEntry(f.Name, data); err != nil {
			return err
		}
	}
	return nil
}

// addTarGz adds the entries of a gzip-compressed tar archive, read as a
// stream in archive order (the result does not depend on the order).
// Members that are not regular *.json files are counted as ignored; all the
// archive's uncompressed bytes, read or skipped, count towards
// MaxTotalBytes.
func (b *Builder) addTarGz(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return &Error{Name: filepath.Base(path), Reason: "not a readable tar.gz archive"}
	}
	defer zr.Close()
	cr := &cappedReader{r: zr, left: MaxTotalBytes}
	tr := tar.NewReader(cr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if cr.over {
			return &Error{Name: filepath.Base(path), Reason: fmt.Sprintf("database larger than %d bytes", int64(MaxTotalBytes)), Err: ErrLimit}
		}
		if err != nil {
			return &Error{Name: filepath.Base(path), Reason: "not a readable tar.gz archive"}
		}
		if err := b.count(); err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg || !strings.HasSuffix(h.Name, ".json") {
			b.stats.Ignored++
			continue
		}
		if h.Size > MaxEntryBytes {
			return &Error{Name: h.Name, Reason: fmt.Sprintf("larger than %d bytes", MaxEntryBytes), Err: ErrLimit}
		}
		data, err := io.ReadAll(io.LimitReader(tr, MaxEntryBytes+1))
		if cr.over {
			return &Error{Name: filepath.Base(path), Reason: fmt.Sprintf("database larger than %d bytes", int64(MaxTotalBytes)), Err: ErrLimit}
		}
		if err != nil {
			return &Error{Name: h.Name, Reason: "unreadable tar member"}
		}
		if err := b.AddEntry(h.Name, data); err != nil {
			return err
		}
	}
}

// cappedReader reads at most left bytes of r, then fails and sets over.
type cappedReader struct {
	r    io.Reader
	left int64
	over bool
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		c.over = true
		return 0, ErrLimit
	}
	if int64(len(p)) > c.left {
		p = p[:c.left+1] // one byte more, to see a larger stream
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		c.over = true
		return 0, ErrLimit
	}
	return n, err
}

func readCapped(path, name string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxEntryBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxEntryBytes {
		return nil, &Error{Name: name, Reason: fmt.Sprintf("larger than %d bytes", MaxEntryBytes), Err: ErrLimit}
	}
	return data, nil
}

// AddEntry adds one JSON file named name (its path within the database). A
// JSON object with an "id" member is an OSV entry; any other JSON document is
// counted as not an entry. Malformed JSON, and an entry whose used fields
// have the wrong JSON types, refuse the build.
func (b *Builder) AddEntry(name string, data []byte) error {
	b.total += int64(len(data))
	if b.total > MaxTotalBytes {
		return &Error{Name: name, Reason: fmt.Sprintf("database larger than %d bytes", int64(MaxTotalBytes)), Err: ErrLimit}
	}
	b.stats.Files++
	tree, err := canon.Parse(data, canon.Options{MaxBytes: MaxEntryBytes})
	if err != nil {
		return &Error{Name: name, Reason: "not strict JSON", Err: err}
	}
	if tree.Kind != canon.Object || member(tree, "id") == nil {
		b.stats.NotEntries++
		return nil
	}
	e, reason := decodeEntry(tree)
	if reason != "" {
		return &Error{Name: name, Reason: reason}
	}
	b.stats.Entries++
	b.diagnostic(e.id)
	for _, a := range e.aliases {
		b.diagnostic(a)
	}
	for _, u := range e.citations {
		b.citation(u)
	}
	for _, a := range e.affected {
		if a.ecosystem != "Go" {
			b.stats.OtherEcosystems++
			continue
		}
		if !validItem(grammar.ClassModule, a.module) {
			b.stats.Skipped["module"]++
			continue
		}
		vers := b.modules[a.module]
		if vers == nil {
			vers = map[string]bool{}
			b.modules[a.module] = vers
		}
		b.stats.OtherRanges += a.otherRanges
		for _, ev := range a.events {
			v := withV(ev)
			if !validItem(grammar.ClassVersion, v) {
				b.stats.Skipped["version"]++
				continue
			}
			vers[v] = true
		}
	}
	return nil
}

func (b *Builder) diagnostic(s string) {
	if !validItem(grammar.ClassDiagnostic, s) {
		b.stats.Skipped["diagnostic"]++
		return
	}
	b.diagnostics[s] = true
}

func (b *Builder) citation(s string) {
	if !validItem(grammar.ClassCitation, s) {
		b.stats.Skipped["citation"]++
		return
	}
	b.citations[s] = true
}

// withV writes an OSV SEMVER version ("0.3.8") as a Go module version
// ("v0.3.8"). A version that already has the "v" is kept.
func withV(s string) string {
	if strings.HasPrefix(s, "v") {
		return s
	}
	return "v" + s
}

// AddModuleVersions adds a module-versions file: lines of a module path
// followed by versions, as `go list -m all` ("path version") and `go list -m
// -versions` ("path v1 v2 …") print them. Empty lines and lines starting
// with "#" are ignored. The file is applied when Build runs, to modules the
// OSV entries name only, so the order of the Add calls does not matter.
func (b *Builder) AddModuleVersions(name string, data []byte) error {
	if len(data) > MaxModuleVersionsBytes {
		return &Error{Name: name, Reason: fmt.Sprintf("larger than %d bytes", MaxModuleVersionsBytes), Err: ErrLimit}
	}
	b.extra = append(b.extra, data)
	b.extraNames = append(b.extraNames, name)
	return nil
}

// AllowPseudoVersions makes Build take pseudo-versions
// ("v0.0.0-20220722155237-a158d28d115b") from module-versions files too.
// By default it leaves them out: a pseudo-version names a commit, and a
// module served under its public path from a private mirror or proxy has
// commits nobody outside knows; as a vocabulary item it would leave in
// every export that names it. Pseudo-versions the OSV entries themselves
// name are public and always kept.
func (b *Builder) AllowPseudoVersions() { b.pseudo = true }

// AllowPrereleaseVersions makes Build take versions with a prerelease or
// build-metadata part ("v1.0.7-acme-payments-ledger.1", "v1.4.0+corp",
// "v1.5.0-rc.1") that are not pseudo-versions from module-versions files
// too. By default it leaves them out, as it leaves out pseudo-versions: a
// fork served under its public path from a private mirror or proxy has
// tags of its own, and their names (often the team's or the product's) are
// private; as a vocabulary item such a tag would leave verbatim in every
// export that names it. Such versions the OSV entries themselves name are
// public and always kept. A release version is taken as it is, also with
// Go's "+incompatible" marker (the go command adds it to a vN tag, N >= 2,
// of a module without a go.mod file; it is not part of the tag).
func (b *Builder) AllowPrereleaseVersions() { b.prerelease = true }

// prereleaseOrBuild reports whether v has a prerelease or build-metadata
// part other than Go's "+incompatible" marker on a release: a '-' or '+'
// after the "v". Versions that are not semantic versions at all are judged
// by the same characters.
func prereleaseOrBuild(v string) bool {
	return strings.ContainsAny(strings.TrimSuffix(v, "+incompatible"), "-+")
}

// pseudoVersion matches Go's three pseudo-version forms (vX.0.0-, vX.Y.Z-pre.0.
// and vX.Y.(Z+1)-0., then a 14-digit UTC time, '-' and a commit prefix,
// optionally +incompatible or other build metadata).
var pseudoVersion = regexp.MustCompile(`^v[0-9]+\.(0\.0-|[0-9]+\.[0-9]+-([^+]*\.)?0\.)[0-9]{14}-[A-Za-z0-9]+(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

func (b *Builder) applyModuleVersions(st *Stats) error {
	for i, data := range b.extra {
		for n, line := range bytes.Split(data, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 || line[0] == '#' {
				continue
			}
			if !utf8Valid(line) {
				return &Error{Name: b.extraNames[i], Reason: fmt.Sprintf("line %d: invalid UTF-8", n+1)}
			}
			fields := strings.Fields(string(line))
			if strings.Contains(string(line), "=>") {
				st.VersionsReplaced++
				continue
			}
			vers := b.modules[fields[0]]
			if vers == nil {
				st.VersionsOutside++
				continue
			}
			for _, v := range fields[1:] {
				if !strings.HasPrefix(v, "v") || !validItem(grammar.ClassVersion, v) {
					st.VersionsInvalid++
					continue
				}
				if vers[v] {
					continue
				}
				if pseudoVersion.MatchString(v) {
					if !b.pseudo {
						st.VersionsPseudo++
						continue
					}
				} else if !b.prerelease && prereleaseOrBuild(v) {
					st.VersionsPrerelease++
					continue
				}
				vers[v] = true
				st.VersionsAdded++
			}
		}
	}
	return nil
}

// Vocabulary is a built Vocabulary@1.
type Vocabulary struct {
	JSON     []byte // the document: indented, sorted, ending in LF
	Digest   string // sha256:<hex> of its canonical form
	Revision string
	Stats    Stats
}

// vocabDoc is Vocabulary@1 as written. Field order does not matter: the
// canonical form sorts keys.
type vocabDoc struct {
	Schema      string              `json:"schema"`
	Revision    string              `json:"revision"`
	Diagnostics []string            `json:"diagnostics"`
	Modules     map[string][]string `json:"modules"`
	Statuses    []string            `json:"statuses"`
	Citations   []string            `json:"citations"`
	Questions   []string            `json:"questions"`
}

// Build writes the vocabulary. An empty revision selects the derived one
// (see the package documentation). Build may be called more than once; the
// module-versions files are applied to a copy each time.
func (b *Builder) Build(revision string) (*Vocabulary, error) {
	st := b.stats
	st.Skipped = map[string]int{}
	for k, n := range b.stats.Skipped {
		st.Skipped[k] = n
	}
	saved := b.modules
	b.modules = map[string]map[string]bool{}
	for m, vs := range saved {
		c := make(map[string]bool, len(vs))
		for v := range vs {
			c[v] = true
		}
		b.modules[m] = c
	}
	err := b.applyModuleVersions(&st)
	mods := b.modules
	b.modules = saved
	if err != nil {
		return nil, err
	}

	doc := vocabDoc{
		Schema:      grammar.VocabularySchema,
		Diagnostics: sortedKeys(b.diagnostics),
		Modules:     make(map[string][]string, len(mods)),
		Statuses:    append([]string(nil), Statuses...),
		Citations:   sortedKeys(b.citations),
		Questions:   append([]string(nil), Questions...),
	}
	sort.Strings(doc.Statuses)
	sort.Strings(doc.Questions)
	for m, vs := range mods {
		doc.Modules[m] = sortedKeys(vs)
	}
	if revision == "" {
		canonical, err := canon.Marshal(doc)
		if err != nil {
			return nil, err
		}
		sum := receipts.SHA256(canonical)
		revision = "osv-" + sum[len(receipts.PrefixSHA256):len(receipts.PrefixSHA256)+12]
	}
	doc.Revision = revision
	canonical, err := canon.Marshal(doc)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, canonical, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	// The grammar is the authority: the document must load, to the same
	// digest.
	v, err := grammar.LoadVocabulary(out.Bytes())
	if err != nil {
		return nil, fmt.Errorf("osvvocab: built vocabulary does not load: %w", err)
	}
	digest := receipts.SHA256(canonical)
	if v.Digest() != digest {
		return nil, errors.New("osvvocab: built vocabulary digest mismatch")
	}
	return &Vocabulary{JSON: out.Bytes(), Digest: digest, Revision: revision, Stats: st}, nil
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
