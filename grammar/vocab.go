package grammar

import (
	"bytes"
	"fmt"
	"sort"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// VocabularySchema is the schema name of a vocabulary document.
const VocabularySchema = "Vocabulary@1"

// MaxVocabularyBytes caps a vocabulary document (64 MiB).
const MaxVocabularyBytes = 64 << 20

// maxItem caps one vocabulary item (4 KiB).
const maxItem = 4096

// vocabDoc is the JSON form of Vocabulary@1.
type vocabDoc struct {
	Schema      string              `json:"schema"`
	Revision    string              `json:"revision"`
	Diagnostics []string            `json:"diagnostics"`
	Modules     map[string][]string `json:"modules"`
	Statuses    []string            `json:"statuses"`
	Citations   []string            `json:"citations"`
	Questions   []string            `json:"questions"`
}

// Vocabulary is a loaded Vocabulary@1: the public items of the grammar, held
// in hash sets so that every lookup is O(1) in the vocabulary's size.
// A Vocabulary is immutable and safe for concurrent use.
type Vocabulary struct {
	revision    string
	digest      string
	diagnostics *strset
	modules     *strset
	deps        *strset   // "module@version"
	depMod      []depItem // for each dep, its module
	statuses    *strset
	citations   *strset
	questions   *strset
	all         *strset // every item of every class, for the ambiguity rule
}

// depItem locates the module of a "module@version" item: its index in the
// modules and the offset of the "@".
type depItem struct {
	module, at int32
}

// VocabularyError reports an unusable vocabulary document. The vocabulary is
// public, but the message still names only the class and index of the item.
type VocabularyError struct {
	Class  Class
	Index  int // index within the class (modules: sorted order)
	Reason string
	Err    error // a *canon.SyntaxError for a document that is not strict JSON
}

func (e *VocabularyError) Error() string {
	if e.Err != nil {
		return "grammar: vocabulary: " + e.Err.Error()
	}
	if e.Class == ClassNone {
		return "grammar: vocabulary: " + e.Reason
	}
	return fmt.Sprintf("grammar: vocabulary: %s item %d: %s", e.Class, e.Index, e.Reason)
}

func (e *VocabularyError) Unwrap() error { return e.Err }

// LoadVocabulary strictly decodes and validates a Vocabulary@1 document.
//
// Every item must be non-empty, at most 4 KiB, NFC, and free of white space,
// control characters, quotes, backslashes and the invisible or bidi characters
// the grammar forbids, so that the grammar's separators can never occur inside
// an item. Module paths and versions must not contain "@"; citations must not
// begin with "fixed=". Duplicate items are allowed and collapse.
func LoadVocabulary(data []byte) (*Vocabulary, error) {
	tree, err := canon.Parse(data, canon.Options{MaxBytes: MaxVocabularyBytes})
	if err != nil {
		return nil, &VocabularyError{Err: err}
	}
	var doc vocabDoc
	if err := tree.Decode(&doc); err != nil {
		return nil, &VocabularyError{Err: err}
	}
	if doc.Schema != VocabularySchema {
		return nil, &VocabularyError{Reason: "schema is not " + VocabularySchema}
	}
	v := &Vocabulary{revision: doc.Revision}
	canonical, err := tree.Canonical()
	if err != nil {
		return nil, &VocabularyError{Err: err}
	}
	v.digest = receipts.SHA256(canonical)

	var all [][]byte
	build := func(class Class, items []string, check func(string) string) (*strset, error) {
		keys := make([][]byte, 0, len(items))
		for i, it := range items {
			if r := checkItem(it); r != "" {
				return nil, &VocabularyError{Class: class, Index: i, Reason: r}
			}
			if check != nil {
				if r := check(it); r != "" {
					return nil, &VocabularyError{Class: class, Index: i, Reason: r}
				}
			}
			keys = append(keys, []byte(it))
		}
		all = append(all, keys...)
		return newStrset(keys, false), nil
	}
	noAt := func(s string) string {
		if bytes.IndexByte([]byte(s), '@') >= 0 {
			return `contains "@"`
		}
		return ""
	}
	if v.diagnostics, err = build(ClassDiagnostic, doc.Diagnostics, nil); err != nil {
		return nil, err
	}
	if v.statuses, err = build(ClassStatus, doc.Statuses, func(s string) string {
		if len(s) >= len("fixed=") && s[:len("fixed=")] == "fixed=" {
			return `begins with "fixed="`
		}
		return ""
	}); err != nil {
		return nil, err
	}
	if v.citations, err = build(ClassCitation, doc.Citations, func(s string) string {
		if len(s) >= len("fixed=") && s[:len("fixed=")] == "fixed=" {
			return `begins with "fixed="`
		}
		return ""
	}); err != nil {
		return nil, err
	}
	if v.questions, err = build(ClassQuestion, doc.Questions, nil); err != nil {
		return nil, err
	}

	mods := make([]string, 0, len(doc.Modules))
	for m := range doc.Modules {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	if v.modules, err = build(ClassModule, mods, noAt); err != nil {
		return nil, err
	}
	var deps [][]byte
	for i, m := range mods {
		vers := doc.Modules[m]
		if _, err := build(ClassVersion, vers, noAt); err != nil {
			ve := err.(*VocabularyError)
			ve.Index = i
			ve.Reason = "version " + ve.Reason
			return nil, ve
		}
		for _, ver := range vers {
			d := make([]byte, 0, len(m)+1+len(ver))
			d = append(append(append(d, m...), '@'), ver...)
			deps = append(deps, d)
		}
	}
	v.deps = newStrset(deps, false)
	v.depMod = make([]depItem, v.deps.len())
	for i := range v.depMod {
		d := v.deps.keyAt(int32(i))
		at := bytes.IndexByte(d, '@')
		v.depMod[i] = depItem{module: v.modules.lookup(d[:at]), at: int32(at)}
	}
	v.all = newStrset(all, true)
	return v, nil
}

// checkItem returns why s cannot be a vocabulary item, or "".
func checkItem(s string) string {
	switch {
	case s == "":
		return "empty"
	case len(s) > maxItem:
		return "longer than 4096 bytes"
	case !utf8.ValidString(s):
		return "invalid UTF-8"
	}
	for _, r := range s {
		if r <= ' ' || r == '"' || r == '\\' || r == 0x7f || forbiddenRune(r) || isSpaceRune(r) {
			return "contains a separator, quote, backslash, control, invisible or white-space character"
		}
	}
	if !norm.NFC.IsNormalString(s) {
		return "not NFC"
	}
	return ""
}

// Revision returns the vocabulary's revision string.
func (v *Vocabulary) Revision() string { return v.revision }

// Digest returns "sha256:<hex>" of the vocabulary's RFC 8785 canonical form:
// reordering keys or reformatting the file does not change it.
func (v *Vocabulary) Digest() string { return v.digest }

// Contains reports whether item is an item of any class.
func (v *Vocabulary) Contains(item []byte) bool { return v.all.has(item) }

// Item returns the text of a public span's item.
func (v *Vocabulary) Item(c Class, idx int32) []byte {
	var s *strset
	switch c {
	case ClassDiagnostic:
		s = v.diagnostics
	case ClassModule:
		s = v.modules
	case ClassStatus:
		s = v.statuses
	case ClassCitation:
		s = v.citations
	case ClassQuestion:
		s = v.questions
	case ClassVersion:
		if idx < 0 || int(idx) >= v.deps.len() {
			return nil
		}
		d := v.deps.keyAt(idx)
		return d[bytes.IndexByte(d, '@')+1:]
	}
	if s == nil || idx < 0 || int(idx) >= s.len() {
		return nil
	}
	return s.keyAt(idx)
}

// Size returns the number of items per class.
func (v *Vocabulary) Size() map[string]int {
	return map[string]int{
		"diagnostics": v.diagnostics.len(),
		"modules":     v.modules.len(),
		"versions":    v.deps.len(),
		"statuses":    v.statuses.len(),
		"citations":   v.citations.len(),
		"questions":   v.questions.len(),
	}
}

// HasDiagnostic, HasModule, HasVersion, HasStatus, HasCitation and
// HasQuestion report whether an item is in the vocabulary in that class
// (HasVersion: as a version of that module). Importers use them to decide
// what may be written as public.
func (v *Vocabulary) HasDiagnostic(s string) bool { return v.diagnostics.has([]byte(s)) }

// HasModule reports whether s is a module of the vocabulary.
func (v *Vocabulary) HasModule(s string) bool { return v.modules.has([]byte(s)) }

// HasVersion reports whether version is a version of module.
func (v *Vocabulary) HasVersion(module, version string) bool {
	return v.deps.has([]byte(module + "@" + version))
}

// HasStatus reports whether s is a status of the vocabulary.
func (v *Vocabulary) HasStatus(s string) bool { return v.statuses.has([]byte(s)) }

// HasCitation reports whether s is a citation of the vocabulary.
func (v *Vocabulary) HasCitation(s string) bool { return v.citations.has([]byte(s)) }

// HasQuestion reports whether s is a question of the vocabulary.
func (v *Vocabulary) HasQuestion(s string) bool { return v.questions.has([]byte(s)) }
