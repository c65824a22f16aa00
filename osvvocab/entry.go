package osvvocab

import (
	"fmt"
	"unicode/utf8"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
)

// entry is what a vocabulary needs of one OSV entry.
type entry struct {
	id        string
	aliases   []string
	citations []string // references[].url, then database_specific.url
	affected  []affected
}

type affected struct {
	module, ecosystem string
	events            []string // SEMVER versions, as written (without "v")
	otherRanges       int
}

// member returns the value of member key of object v, or nil when absent.
func member(v *canon.Value, key string) *canon.Value {
	for i := range v.Members {
		if string(v.Members[i].Key) == key {
			return &v.Members[i].Value
		}
	}
	return nil
}

// decoder walks a tree with type checks. The first failure is kept as a
// reason naming the schema path (built from field names and indices, never
// from input).
type decoder struct{ reason string }

func (d *decoder) fail(path, want string) {
	if d.reason == "" {
		d.reason = path + ": expected " + want
	}
}

// str returns member key of o as a string; absent or null is "".
func (d *decoder) str(o *canon.Value, key, path string) string {
	v := member(o, key)
	if v == nil || v.Kind == canon.Null {
		return ""
	}
	if v.Kind != canon.String {
		d.fail(path, "string")
		return ""
	}
	return string(v.Str)
}

// arr returns the elements of member key of o; absent or null is empty.
func (d *decoder) arr(o *canon.Value, key, path string) []canon.Value {
	v := member(o, key)
	if v == nil || v.Kind == canon.Null {
		return nil
	}
	if v.Kind != canon.Array {
		d.fail(path, "array")
		return nil
	}
	return v.Elems
}

// obj returns member key of o when it is an object; absent or null is nil.
func (d *decoder) obj(o *canon.Value, key, path string) *canon.Value {
	v := member(o, key)
	if v == nil || v.Kind == canon.Null {
		return nil
	}
	if v.Kind != canon.Object {
		d.fail(path, "object")
		return nil
	}
	return v
}

func (d *decoder) strings(o *canon.Value, key, path string) []string {
	var out []string
	for i, e := range d.arr(o, key, path) {
		if e.Kind != canon.String {
			d.fail(fmt.Sprintf("%s[%d]", path, i), "string")
			return nil
		}
		out = append(out, string(e.Str))
	}
	return out
}

// decodeEntry reads the fields a vocabulary uses from an OSV entry. Other
// fields are not looked at.
func decodeEntry(t *canon.Value) (entry, string) {
	var d decoder
	var e entry
	e.id = d.str(t, "id", "id")
	if d.reason == "" && e.id == "" {
		d.reason = "id: empty"
	}
	e.aliases = d.strings(t, "aliases", "aliases")
	for i, r := range d.arr(t, "references", "references") {
		path := fmt.Sprintf("references[%d]", i)
		if r.Kind != canon.Object {
			d.fail(path, "object")
			break
		}
		if u := d.str(&r, "url", path+".url"); u != "" {
			e.citations = append(e.citations, u)
		}
	}
	if ds := d.obj(t, "database_specific", "database_specific"); ds != nil {
		if u := d.str(ds, "url", "database_specific.url"); u != "" {
			e.citations = append(e.citations, u)
		}
	}
	for i, a := range d.arr(t, "affected", "affected") {
		path := fmt.Sprintf("affected[%d]", i)
		if a.Kind != canon.Object {
			d.fail(path, "object")
			break
		}
		var af affected
		if p := d.obj(&a, "package", path+".package"); p != nil {
			af.module = d.str(p, "name", path+".package.name")
			af.ecosystem = d.str(p, "ecosystem", path+".package.ecosystem")
		}
		for j, r := range d.arr(&a, "ranges", path+".ranges") {
			rpath := fmt.Sprintf("%s.ranges[%d]", path, j)
			if r.Kind != canon.Object {
				d.fail(rpath, "object")
				break
			}
			if d.str(&r, "type", rpath+".type") != "SEMVER" {
				af.otherRanges++
				continue
			}
			for k, ev := range d.arr(&r, "events", rpath+".events") {
				epath := fmt.Sprintf("%s.events[%d]", rpath, k)
				if ev.Kind != canon.Object {
					d.fail(epath, "object")
					break
				}
				if s := d.str(&ev, "introduced", epath+".introduced"); s != "" && s != "0" {
					af.events = append(af.events, s)
				}
				if s := d.str(&ev, "fixed", epath+".fixed"); s != "" {
					af.events = append(af.events, s)
				}
				if s := d.str(&ev, "last_affected", epath+".last_affected"); s != "" {
					af.events = append(af.events, s)
				}
				d.str(&ev, "limit", epath+".limit") // type-checked, not a version
			}
		}
		if af.module == "" {
			continue
		}
		e.affected = append(e.affected, af)
	}
	return e, d.reason
}

// maxItem is grammar's limit on one vocabulary item.
const maxItem = 4096

// validItem reports whether s can be an item of class c under
// grammar.LoadVocabulary. ASCII items are judged here by the grammar's
// rules for ASCII; any other item is judged by grammar.LoadVocabulary on a
// one-item document, so that Unicode rules (NFC, invisible and bidi
// characters, white space) are the grammar's own.
func validItem(c grammar.Class, s string) bool {
	if s == "" || len(s) > maxItem {
		return false
	}
	ascii := true
	for i := 0; i < len(s); i++ {
		b := s[i]
		if b >= 0x80 {
			ascii = false
			continue
		}
		if b <= ' ' || b == '"' || b == '\\' || b == 0x7f {
			return false
		}
		if b == '@' && (c == grammar.ClassModule || c == grammar.ClassVersion) {
			return false
		}
	}
	if (c == grammar.ClassCitation || c == grammar.ClassStatus) && len(s) >= 6 && s[:6] == "fixed=" {
		return false
	}
	if ascii {
		return true
	}
	if !utf8.ValidString(s) {
		return false
	}
	return probe(c, s)
}

// probe loads a one-item vocabulary holding s in class c.
func probe(c grammar.Class, s string) bool {
	doc := vocabDoc{Schema: grammar.VocabularySchema, Modules: map[string][]string{}}
	switch c {
	case grammar.ClassDiagnostic:
		doc.Diagnostics = []string{s}
	case grammar.ClassCitation:
		doc.Citations = []string{s}
	case grammar.ClassModule:
		doc.Modules[s] = []string{}
	case grammar.ClassVersion:
		doc.Modules["m"] = []string{s}
	default:
		return false
	}
	b, err := canon.Marshal(doc)
	if err != nil {
		return false
	}
	_, err = grammar.LoadVocabulary(b)
	return err == nil
}

func utf8Valid(b []byte) bool { return utf8.Valid(b) }
