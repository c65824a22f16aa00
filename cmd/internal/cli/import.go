package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/importer"
	"github.com/privacycut/privacycut/receipts"
)

func init() {
	registerGroup("import", "write a Projection@1 from a scanner's output")
	for format, about := range map[string]string{
		"govulncheck": "a Projection@1 from govulncheck -json output",
		"openvex":     "a Projection@1 from an OpenVEX document",
		"osv-scanner": "a Projection@1 from osv-scanner --format json output",
	} {
		synopsis := "--vocab V [--codeowners FILE [--module-dir D] [--repo-root P]] [--on-unknown refuse|drop] [--ask Q]… [-o F] [STREAM|-]"
		if format == "openvex" {
			synopsis = "--vocab V [--on-unknown refuse|drop] [--ask Q]… [-o F] [STREAM|-]"
		}
		register(&command{name: "import " + format,
			synopsis: synopsis,
			summary:  about,
			run: func(ctx context.Context, c *Cmd, args []string) error {
				return runImport(ctx, c, format, args)
			}})
	}
}

var importers = map[string]func([]byte, *grammar.Vocabulary, importer.Options) (*importer.Result, error){
	"govulncheck": importer.Govulncheck,
	"openvex":     importer.OpenVEX,
	"osv-scanner": importer.OSVScanner,
}

func runImport(ctx context.Context, c *Cmd, format string, args []string) error {
	fn := importers[format]
	fs := c.flags("import " + format)
	vocabPath := fs.String("vocab", "", "vocabulary `file` (Vocabulary@1)")
	coPath, moduleDir, repoRoot := new(string), new(string), new(string)
	if format != "openvex" {
		// An OpenVEX document names no files: nothing to match CODEOWNERS
		// against, so these flags are not taken (a usage error, not ignored).
		fs.StringVar(coPath, "codeowners", "", "CODEOWNERS `file`: owner.team and owner.person for each finding's file")
		fs.StringVar(moduleDir, "module-dir", "", "the scanned module's `directory` relative to the repository root (CODEOWNERS matching)")
		fs.StringVar(repoRoot, "repo-root", "", "absolute `path` of the repository checkout, for absolute file names (CODEOWNERS matching)")
	}
	onUnknown := fs.String("on-unknown", "refuse", "a finding with a public item the vocabulary lacks, or an owner value the grammar refuses: refuse the import, or drop the finding")
	out := fs.String("o", "", "write the projection to `file` (default stdout)")
	var asks stringList
	fs.Var(&asks, "ask", "add an `ask` record with this vocabulary question in a query part; repeatable")
	if format == "openvex" {
		for _, a := range args {
			name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
			if strings.HasPrefix(a, "-") && (name == "codeowners" || name == "module-dir" || name == "repo-root") {
				return usagef("--%s does not apply: an OpenVEX document names no files to match CODEOWNERS against", name)
			}
		}
	}
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *vocabPath == "" || len(pos) > 1 {
		return c.usage()
	}
	opt := importer.Options{ModuleDir: *moduleDir, RepoRoot: *repoRoot, Questions: asks}
	switch *onUnknown {
	case "refuse":
		opt.OnUnknown = importer.Refuse
	case "drop":
		opt.OnUnknown = importer.Drop
	default:
		return usagef("--on-unknown is refuse or drop")
	}
	v, err := loadVocabulary(*vocabPath)
	if err != nil {
		return err
	}
	if *coPath != "" {
		data, over, err := readCapped(c, *coPath, importer.MaxCodeOwnersBytes)
		if err != nil {
			return fmt.Errorf("read codeowners: %w", err)
		}
		if over {
			return c.importRefused(&importer.CodeOwnersError{Reason: fmt.Sprintf("larger than %d bytes", importer.MaxCodeOwnersBytes)})
		}
		if opt.CodeOwners, err = importer.ParseCodeOwners(data); err != nil {
			return c.importRefused(err)
		}
	}
	in := "-"
	if len(pos) == 1 {
		in = pos[0]
	}
	data, over, err := readCapped(c, in, importer.MaxInputBytes)
	if err != nil {
		return fmt.Errorf("read input: %w", err)
	}
	if over {
		return c.importRefused(&importer.InputError{Code: receipts.LimitExceeded, Format: format, Line: 1, Column: 1,
			Reason: fmt.Sprintf("input larger than %d bytes", importer.MaxInputBytes)})
	}
	res, err := fn(data, v, opt)
	if err != nil {
		return c.importRefused(err)
	}
	if err := c.writeOutput(*out, res.Projection, 0o600); err != nil {
		return err
	}
	st := res.Stats
	line := fmt.Sprintf("cut: import: %d findings, %d written, %d dropped", st.Findings, st.Written, st.Dropped)
	if st.Unknown.Total() > 0 {
		line += "; not in the vocabulary: " + st.Unknown.String()
	}
	if len(st.Refused) > 0 {
		line += "; owner values refused by the grammar: " + refusedSummary(st.Refused)
	}
	if st.Skipped > 0 {
		line += fmt.Sprintf("; %d packages of other ecosystems skipped", st.Skipped)
	}
	fmt.Fprintln(c.Stderr, line)
	fmt.Fprintf(c.Stderr, "cut: import: owner slots: %s\n", ownerSummary(st.Owners))
	switch {
	case st.Absolute > 0 && *repoRoot == "":
		c.hintf("%d findings name absolute file names, which CODEOWNERS cannot match: no team or person for them; give --repo-root (the checkout's absolute path)", st.Absolute)
	case st.Unplaced > 0:
		c.hintf("%d findings name files outside the repository (of --repo-root, --module-dir): no team or person for them", st.Unplaced)
	}
	return nil
}

// refusedSummary lists findings dropped for an owner value, by slot in
// category order, then a record refused whole.
func refusedSummary(m map[string]int) string {
	var parts []string
	for _, cat := range grammar.Categories() {
		if n := m["owner."+cat.String()]; n > 0 {
			parts = append(parts, fmt.Sprintf("owner.%s %d", cat, n))
		}
	}
	if n := m["record"]; n > 0 {
		parts = append(parts, fmt.Sprintf("record %d", n))
	}
	return strings.Join(parts, ", ")
}

// importRefused prints an importer error (content-free by construction),
// journals it and returns the exit-3 error. Other errors pass through.
func (c *Cmd) importRefused(err error) error {
	var ie *importer.InputError
	var re *importer.RefusedError
	var ce *importer.CodeOwnersError
	reason := receipts.Refusal{Part: -1, Kind: "import"}
	switch {
	case errors.As(err, &ie):
		reason.Code, reason.Line, reason.Column = ie.Code, ie.Line, ie.Column
	case errors.As(err, &re):
		reason.Code = re.Code
	case errors.As(err, &ce):
		reason.Code, reason.Kind, reason.Line = ce.Code(), "codeowners", ce.Line
	default:
		return err
	}
	doc := receipts.RefusalDocument{Refused: true, EventID: receipts.NewEventID(), Reasons: []receipts.Refusal{reason}}
	c.journal(doc.EventID, doc.Reasons)
	c.errorf("%s: %v (event %s)", c.name, err, doc.EventID)
	if re != nil && re.Unknown.Total() > 0 {
		fmt.Fprintf(c.Stderr, "cut: import: findings with items not in the vocabulary: %s\n", re.Unknown)
		c.hintf("rebuild the vocabulary (cut vocab build --module-versions for versions in use), or --on-unknown drop to leave these findings out")
	}
	if re != nil && (strings.HasPrefix(re.Class, "owner.") || re.Class == "record") {
		c.hintf("an owner value is never altered: fix it where the scanner reads it, or --on-unknown drop to leave such findings out")
	}
	// Exit 3 prints the refusal document on stdout, as every refusal does;
	// nothing of the projection is written.
	return c.printRefusal(false, doc)
}

// writeOutput writes data to path in full or not at all (outputFile), or
// to stdout when path is empty.
func (c *Cmd) writeOutput(path string, data []byte, perm os.FileMode) error {
	if path == "" {
		_, err := c.Stdout.Write(data)
		return err
	}
	o, err := createOutput(path, perm)
	if err != nil {
		return err
	}
	defer o.abort()
	return o.commit(data)
}

func ownerSummary(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	var cats []string
	for _, cat := range grammar.Categories() {
		if m[cat.String()] > 0 {
			cats = append(cats, fmt.Sprintf("%s %d", cat, m[cat.String()]))
		}
	}
	return strings.Join(cats, ", ")
}
