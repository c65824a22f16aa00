package grammar

import (
	"errors"
	"io"
	"sort"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// Schema and profile names of a projection.
const (
	ProjectionSchema = "Projection@1"
	Profile          = "closed-diagnostic@1"
)

// Default document limits.
const (
	DefaultMaxProjectionBytes = 1 << 30 // 1 GiB
	DefaultMaxParts           = 1 << 16
	DefaultMaxParents         = 64
)

// Kinds are the part kinds of docs/FORMATS.md#projection.
var Kinds = []string{"block", "history", "continuation", "query", "tool", "artifact"}

// Classes are the label classes, lowest first.
var Classes = []string{"public", "internal", "private", "restricted"}

// Projection is a Projection@1: the complete model input, in order. Keys,
// labels and lineage are local: they never reach a candidate or an export.
type Projection struct {
	Schema  string `json:"schema"`
	Profile string `json:"profile"`
	Parts   []Part `json:"parts"`
}

// Part is one part of a projection. Text is the part's closed-diagnostic@1
// text, decoded from its JSON string as UTF-8 bytes.
type Part struct {
	Kind    string   `json:"kind"`
	Key     string   `json:"key"`
	Text    []byte   `json:"text"`
	Label   *Label   `json:"label"`
	Lineage []string `json:"lineage"`
}

// Label is a privatization label (docs/FORMATS.md#projection).
type Label struct {
	Class      string   `json:"class"`
	Weight     int      `json:"weight"`
	Categories []string `json:"categories"`
	Subjects   []string `json:"subjects"`
	Parents    []string `json:"parents"`
	Handling   []string `json:"handling"`
}

// WriteCanonical streams the canonical form to w (a hash, typically)
// without building it in memory.
func (d *Document) WriteCanonical(w io.Writer) error { return d.tree.WriteCanonical(w) }

// LoadOptions bound a projection document.
type LoadOptions struct {
	MaxBytes int64 // default 1 GiB
	MaxParts int   // default 65536
	MaxText  int   // bytes of one part's text, default 256 MiB

	// Buffer, when set, supplies the memory a large document's decoded
	// strings (the parts' texts) are kept in (canon.Options.Buffer): the
	// Document shares it, and the caller decides how long it lives.
	Buffer func(n int) []byte
}

// Document is a loaded projection together with its parse tree, from which
// its canonical form (and so its digests) is derived.
type Document struct {
	Projection
	tree *canon.Value
}

// Canonical returns the RFC 8785 canonical form of the document: reordering
// keys or reformatting the file does not change it. It fails only for a
// number that is not a finite double.
func (d *Document) Canonical() ([]byte, error) { return d.tree.Canonical() }

// LoadProjection strictly decodes a Projection@1 document and checks its
// structure: schema and profile names, part kinds, label classes and weights.
// Lineage and ancestry are checked by Check. Refusals about the JSON document
// have Part -1 and file positions; refusals about one part carry its index.
func LoadProjection(data []byte, opt LoadOptions) (*Document, []receipts.Refusal) {
	if opt.MaxBytes <= 0 {
		opt.MaxBytes = DefaultMaxProjectionBytes
	}
	if opt.MaxParts <= 0 {
		opt.MaxParts = DefaultMaxParts
	}
	if opt.MaxText <= 0 {
		opt.MaxText = DefaultMaxText
	}
	tree, err := canon.Parse(data, canon.Options{MaxBytes: opt.MaxBytes, Buffer: opt.Buffer})
	if err != nil {
		return nil, []receipts.Refusal{documentRefusal(data, err)}
	}
	d := &Document{tree: tree}
	// The document keeps the tree, so the parts' texts may alias it.
	if err := tree.DecodeShared(&d.Projection); err != nil {
		return nil, []receipts.Refusal{documentRefusal(data, err)}
	}
	var refs []receipts.Refusal
	doc := func(code receipts.Code, key string) {
		r := receipts.Refusal{Code: code, Part: -1, Line: 1, Column: 1, Length: 1}
		if m := member(tree, key); m != nil {
			r.Offset, r.Length = m.Off, m.End-m.Off
			r.Line, r.Column = canon.LineCol(data, m.Off)
		}
		// A document that is not an object lacks every member at 1:1:
		// one reason, not one per member.
		if n := len(refs); n > 0 && refs[n-1] == r {
			return
		}
		refs = append(refs, r)
	}
	if d.Schema != ProjectionSchema {
		doc(receipts.MalformedRecord, "schema")
	}
	if d.Profile != Profile {
		doc(receipts.MalformedRecord, "profile")
	}
	if len(d.Parts) == 0 {
		doc(receipts.MalformedRecord, "parts")
	}
	if len(d.Parts) > opt.MaxParts {
		doc(receipts.LimitExceeded, "parts")
	}
	for i := range d.Parts {
		p := &d.Parts[i]
		part := func(code receipts.Code) {
			refs = append(refs, receipts.Refusal{Code: code, Part: i, Kind: p.Kind})
		}
		if !validKind(p.Kind) {
			// The kind is input: a refusal names only kinds of the
			// closed list, never what the document holds instead.
			refs = append(refs, receipts.Refusal{Code: receipts.MalformedRecord, Part: i})
			continue
		}
		if len(p.Text) > opt.MaxText {
			part(receipts.LimitExceeded)
		}
		if p.Label != nil && (classRank(p.Label.Class) < 0 || p.Label.Weight < 0) {
			part(receipts.MalformedRecord)
		}
	}
	if len(refs) > 0 {
		return nil, refs
	}
	return d, nil
}

func documentRefusal(data []byte, err error) receipts.Refusal {
	var se *canon.SyntaxError
	if errors.As(err, &se) {
		r := receipts.Refusal{Code: receipts.Code(se.Class), Part: -1, Line: se.Line, Column: se.Column, Length: se.Length, Offset: se.Offset}
		if r.Line == 0 {
			r.Line, r.Column = canon.LineCol(data, se.Offset)
		}
		return r
	}
	return receipts.Refusal{Code: receipts.MalformedRecord, Part: -1, Line: 1, Column: 1, Length: 1}
}

// member returns the value of the top-level member key, or nil.
func member(v *canon.Value, key string) *canon.Value {
	if v == nil || v.Kind != canon.Object {
		return nil
	}
	for i := range v.Members {
		if string(v.Members[i].Key) == key {
			return &v.Members[i].Value
		}
	}
	return nil
}

func validKind(k string) bool {
	for _, x := range Kinds {
		if k == x {
			return true
		}
	}
	return false
}

func classRank(c string) int {
	for i, x := range Classes {
		if c == x {
			return i
		}
	}
	return -1
}

// Join is the label of a whole cut: the highest class and weight, and the
// sorted union of categories, subjects and parents (docs/FORMATS.md#projection). A part with no
// label counts as restricted.
func Join(parts []Part) Label {
	j := Label{Class: Classes[0]}
	var cats, subs, pars []string
	for _, p := range parts {
		if p.Label == nil {
			j.Class = "restricted"
			continue
		}
		if classRank(p.Label.Class) > classRank(j.Class) {
			j.Class = p.Label.Class
		}
		j.Weight = max(j.Weight, p.Label.Weight)
		cats = append(cats, p.Label.Categories...)
		subs = append(subs, p.Label.Subjects...)
		pars = append(pars, p.Label.Parents...)
	}
	j.Categories, j.Subjects, j.Parents, j.Handling = union(cats), union(subs), union(pars), []string{}
	for _, p := range parts {
		if p.Label != nil {
			j.Handling = append(j.Handling, p.Label.Handling...)
		}
	}
	j.Handling = union(j.Handling)
	return j
}

func union(xs []string) []string {
	out := append([]string{}, xs...)
	sort.Strings(out)
	k := 0
	for i, x := range out {
		if i == 0 || x != out[k-1] {
			out[k] = x
			k++
		}
	}
	return out[:k]
}

// CheckLineage applies the lineage and ancestry rules of docs/FORMATS.md#projection: a part with
// no label, or with lineage empty, absent or containing "unknown" (or an empty
// entry), is refused UNKNOWN_LINEAGE; more distinct parents in the join than
// maxParents (default 64) is refused EXCESS_ANCESTRY, naming the part whose
// parents first cross the limit. References are never dropped to fit.
func CheckLineage(parts []Part, maxParents int) []receipts.Refusal {
	if maxParents <= 0 {
		maxParents = DefaultMaxParents
	}
	var refs []receipts.Refusal
	seen := map[string]bool{}
	excess := false
	for i, p := range parts {
		bad := p.Label == nil || len(p.Lineage) == 0
		for _, l := range p.Lineage {
			if l == "" || l == "unknown" {
				bad = true
			}
		}
		if bad {
			refs = append(refs, receipts.Refusal{Code: receipts.UnknownLineage, Part: i, Kind: p.Kind})
		}
		if p.Label == nil || excess {
			continue
		}
		for _, par := range p.Label.Parents {
			seen[par] = true
		}
		if len(seen) > maxParents {
			refs = append(refs, receipts.Refusal{Code: receipts.ExcessAncestry, Part: i, Kind: p.Kind})
			excess = true
		}
	}
	return refs
}
