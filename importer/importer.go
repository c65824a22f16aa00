package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"path"
	"strings"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// Policy says what happens to a finding with a public item the vocabulary
// does not hold.
type Policy uint8

const (
	// Refuse refuses the whole import (the default).
	Refuse Policy = iota
	// Drop leaves the finding out and counts it.
	Drop
)

// Options configure an import.
type Options struct {
	OnUnknown Policy
	// CodeOwners, when set, adds owner.team and owner.person slots for the
	// file of each finding.
	CodeOwners *CodeOwners
	// ModuleDir is the scanned module's directory relative to the
	// repository root (where CODEOWNERS paths start). govulncheck writes
	// file names relative to the module, so they are matched as
	// ModuleDir/name. Empty means the module is the repository root.
	ModuleDir string
	// RepoRoot is the absolute path of the repository checkout. An absolute
	// file name under it is matched relative to it; any other absolute file
	// name matches no CODEOWNERS rule.
	RepoRoot string
	// Questions become `ask` records of a query part after the findings.
	Questions []string
}

// Result is an import.
type Result struct {
	// Projection is the Projection@1 document, indented, ending in LF.
	Projection []byte
	Stats      Stats
}

// Stats counts what an import read and wrote.
type Stats struct {
	Findings int    // findings in the input
	Written  int    // finding records written
	Dropped  int    // findings left out under Drop
	Unknown  Counts // findings lacking a public item, by class
	// Refused counts the findings dropped under Drop because the grammar
	// refuses one of their owner values (by slot, "owner.file") or the
	// record as a whole ("record").
	Refused map[string]int
	// Unplaced counts findings whose file CODEOWNERS could not be matched
	// against: an absolute file name without Options.RepoRoot, or a name
	// outside the repository. Absolute counts those that were absolute.
	Unplaced, Absolute int
	Skipped            int // input outside the model (osv-scanner: other ecosystems)
	// Owners counts owner slots written, by category name.
	Owners map[string]int
	// InputDigest is "sha256:" of the input bytes, the lineage of the part.
	InputDigest string
}

// candidate is a finding as an importer read it, before the vocabulary has
// its say.
type candidate struct {
	diag, module, version, status, fixed string
	noDependency                         bool
	citations                            []string // in order of preference
	owners                               []ownerSlot
	file                                 string // for CODEOWNERS; "" for none
}

type ownerSlot struct {
	cat grammar.Category
	val string
}

// Labels written by the importers. The weights follow the example
// projection: a private findings block 3, the question part 1.
const (
	findingsWeight = 3
	questionWeight = 1
)

// assemble checks candidates against the vocabulary, applies the policy and
// writes the projection. Nothing is returned but an error when any finding
// is refused.
func assemble(format string, input []byte, cands []candidate, v *grammar.Vocabulary, opt Options, skipped int) (*Result, error) {
	parser := grammar.NewParser(v, grammar.Options{})
	st := Stats{Findings: len(cands), Skipped: skipped, Owners: map[string]int{}, Refused: map[string]int{}, InputDigest: receipts.SHA256(input)}
	for _, q := range opt.Questions {
		if !v.HasQuestion(q) {
			return nil, &RefusedError{Code: receipts.UnknownQuestion, Class: "question"}
		}
	}
	var first *RefusedError
	var text []byte
	var cats [9]bool
	var rec []byte
	for i := range cands {
		c := &cands[i]
		n := i + 1
		missing, citation := lookup(c, v)
		if missing != ClassNone {
			for k := ClassDiagnostic; k < numClasses; k++ {
				if classMissing(c, v, k) {
					st.Unknown[k]++
				}
			}
			if opt.OnUnknown == Drop {
				st.Dropped++
				continue
			}
			if first == nil {
				first = &RefusedError{Code: missing.Code(), Finding: n, Class: missing.String()}
			}
			continue
		}
		if first != nil {
			continue // counting the rest; nothing will be written
		}
		owners := c.owners
		if opt.CodeOwners != nil && c.file != "" {
			if p, ok := matchPath(c.file, opt.ModuleDir, opt.RepoRoot); ok {
				owners = append(owners[:len(owners):len(owners)], opt.CodeOwners.Match(p)...)
			} else {
				st.Unplaced++
				if isAbs(c.file) {
					st.Absolute++
				}
			}
		}
		owners = dedupe(owners)
		var slots [][2]int
		rec = rec[:0]
		rec = append(rec, "finding "...)
		rec = append(rec, c.diag...)
		rec = append(rec, ' ')
		rec = append(rec, c.module...)
		rec = append(rec, '@')
		rec = append(rec, c.version...)
		rec = append(rec, ' ')
		rec = append(rec, c.status...)
		if c.fixed != "" {
			rec = append(rec, " fixed="...)
			rec = append(rec, c.fixed...)
		}
		rec = append(rec, ' ')
		rec = append(rec, citation...)
		for _, o := range owners {
			start := len(rec)
			rec = append(rec, " owner."...)
			rec = append(rec, o.cat.String()...)
			rec = append(rec, `="`...)
			rec = grammar.Escape(rec, []byte(o.val))
			rec = append(rec, '"')
			slots = append(slots, [2]int{start, len(rec)})
		}
		rec = append(rec, '\n')
		// The grammar decides whether the owner values are values: a value
		// it would refuse refuses the import, it is never altered.
		if _, refs := parser.Parse(rec, nil); len(refs) > 0 {
			re := &RefusedError{Code: refs[0].Code, Finding: n, Class: "record", Offset: -1}
			for k, s := range slots {
				if refs[0].Offset >= s[0] && refs[0].Offset < s[1] {
					re.Class = "owner." + owners[k].cat.String()
					if f, ok := describeValue([]byte(owners[k].val), v.Contains([]byte(owners[k].val))); ok {
						re.Fault, re.Offset = f.what, f.offset
					}
				}
			}
			if opt.OnUnknown == Drop {
				st.Dropped++
				st.Refused[re.Class]++
				continue
			}
			first = re
			continue
		}
		for _, o := range owners {
			cats[o.cat] = true
			st.Owners[o.cat.String()]++
		}
		text = append(text, rec...)
		st.Written++
	}
	if first != nil {
		if first.Class != "record" && !strings.HasPrefix(first.Class, "owner.") {
			first.Unknown = st.Unknown
		}
		return nil, first
	}

	lineage := []string{st.InputDigest}
	var categories []string
	for _, cat := range grammar.Categories() {
		if cats[cat] {
			categories = append(categories, "owner."+cat.String())
		}
	}
	d := grammar.Projection{Schema: grammar.ProjectionSchema, Profile: grammar.Profile}
	d.Parts = append(d.Parts, grammar.Part{Kind: "block", Key: format + "/findings", Text: text,
		Label:   &grammar.Label{Class: "private", Weight: findingsWeight, Categories: nonNil(categories), Subjects: []string{}, Parents: lineage, Handling: []string{}},
		Lineage: lineage})
	if len(opt.Questions) > 0 {
		var q []byte
		for _, s := range opt.Questions {
			q = append(append(append(q, "ask "...), s...), '\n')
		}
		d.Parts = append(d.Parts, grammar.Part{Kind: "query", Key: "q", Text: q,
			Label:   &grammar.Label{Class: "internal", Weight: questionWeight, Categories: []string{}, Subjects: []string{}, Parents: lineage, Handling: []string{}},
			Lineage: lineage})
	}
	out, err := encodeProjection(&d)
	if err != nil {
		return nil, err
	}
	// The output must pass `cut check` with the same vocabulary.
	pd, refs := grammar.LoadProjection(out, grammar.LoadOptions{})
	if refs != nil {
		return nil, errInternal
	}
	if res := grammar.Check(pd, parser, 0, nil); !res.OK() {
		return nil, errInternal
	}
	return &Result{Projection: out, Stats: st}, nil
}

var errInternal = errors.New("importer: internal error: the projection written does not pass the grammar")

// lookup returns the first class (in class order) the vocabulary lacks, or
// ClassNone and the citation to write.
func lookup(c *candidate, v *grammar.Vocabulary) (Class, string) {
	for k := ClassDiagnostic; k < numClasses; k++ {
		if classMissing(c, v, k) {
			return k, ""
		}
	}
	return ClassNone, citationOf(c, v)
}

func citationOf(c *candidate, v *grammar.Vocabulary) string {
	for _, u := range c.citations {
		if v.HasCitation(u) {
			return u
		}
	}
	return ""
}

// classMissing reports whether candidate c lacks class k. A module that is
// not known makes its version unknowable; only the module counts then.
func classMissing(c *candidate, v *grammar.Vocabulary, k Class) bool {
	switch k {
	case ClassDependency:
		return c.noDependency
	case ClassDiagnostic:
		return !v.HasDiagnostic(c.diag)
	case ClassModule:
		return !c.noDependency && !v.HasModule(c.module)
	case ClassVersion:
		return !c.noDependency && v.HasModule(c.module) && !v.HasVersion(c.module, c.version)
	case ClassFixed:
		return !c.noDependency && c.fixed != "" && v.HasModule(c.module) && !v.HasVersion(c.module, c.fixed)
	case ClassStatus:
		return !v.HasStatus(c.status)
	case ClassCitation:
		return citationOf(c, v) == ""
	}
	return false
}

// dedupe removes repeated (category, value) slots, keeping the first, and
// orders the slots by category (stable within one).
func dedupe(in []ownerSlot) []ownerSlot {
	out := make([]ownerSlot, 0, len(in))
	for _, cat := range grammar.Categories() {
		for _, o := range in {
			if o.cat != cat {
				continue
			}
			dup := false
			for _, p := range out {
				if p == o {
					dup = true
					break
				}
			}
			if !dup {
				out = append(out, o)
			}
		}
	}
	return out
}

// matchPath returns the repository-relative, slash-separated path a file
// name is matched under in CODEOWNERS, or false when it cannot be placed
// in the repository.
func matchPath(file, moduleDir, repoRoot string) (string, bool) {
	if isAbs(file) {
		root := strings.TrimSuffix(strings.ReplaceAll(repoRoot, "\\", "/"), "/")
		f := strings.ReplaceAll(file, "\\", "/")
		if root == "" || !strings.HasPrefix(f, root+"/") {
			return "", false
		}
		return cleanRel(f[len(root)+1:])
	}
	f := strings.ReplaceAll(file, "\\", "/")
	if moduleDir != "" {
		f = strings.ReplaceAll(moduleDir, "\\", "/") + "/" + f
	}
	return cleanRel(f)
}

// isAbs reports an absolute file name, in Unix or Windows form.
func isAbs(file string) bool {
	f := strings.ReplaceAll(file, "\\", "/")
	return strings.HasPrefix(f, "/") || (len(f) > 2 && f[1] == ':' && f[2] == '/')
}

// cleanRel cleans a repository-relative path; false for one that leaves
// the repository.
func cleanRel(f string) (string, bool) {
	f = path.Clean(f)
	if f == "." || f == ".." || strings.HasPrefix(f, "../") || strings.HasPrefix(f, "/") {
		return "", false
	}
	return f, true
}

// encode writes the canonical form, indented: the same input always gives
// the same bytes.
func encodeProjection(d *grammar.Projection) ([]byte, error) {
	canonical, err := canon.Marshal(d)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(canonical) + len(canonical)/8)
	if err := json.Indent(&out, canonical, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
