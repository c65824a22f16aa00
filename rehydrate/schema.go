package rehydrate

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// Limits of a schema document.
const (
	// MaxSchemaBytes is the largest schema document ParseSchema accepts.
	MaxSchemaBytes = 1 << 20
	// MaxSchemaDepth is the deepest JSON nesting of a schema document. Each
	// level of the described return costs two levels ("properties" and the
	// property's schema), so a return can nest about half as deep.
	MaxSchemaDepth = 64
	// MaxNameLen is the longest property name, in bytes.
	MaxNameLen = 128
	// MaxPurposeLen is the longest marking purpose, in bytes.
	MaxPurposeLen = 128
)

// MarkKeyword is the schema keyword that marks a string for rehydration.
const MarkKeyword = "x-privacycut-rehydrate"

// Marking is the rehydration marking of a string in the output schema: at
// its path, a return may carry tokens of Category, at most Max of them over
// the whole return, for a lease whose purpose is Purpose.
type Marking struct {
	Category string `json:"category"`
	Purpose  string `json:"purpose"`
	Max      int    `json:"max"`
}

// MarkedPath is a marked schema path such as "$.findings[*].owner_module"
// with its marking.
type MarkedPath struct {
	Path string `json:"path"`
	Marking
}

// Schema is a parsed output schema. It is immutable and safe for concurrent
// use.
type Schema struct {
	root   *node
	digest string
	marked []MarkedPath
}

type kind uint8

const (
	kindObject kind = iota + 1
	kindArray
	kindString
)

// node is one schema of the tree.
type node struct {
	kind kind
	name string // property name in the parent object, "" for items and root
	path string // schema path: "$", "$.a", "$.a[*]"
	req  bool   // a required property of its parent
	rank int    // position of name among its siblings in RFC 8785 order

	props map[string]*node // object: declared properties
	nreq  int              // object: number of required properties

	items    *node // array
	maxItems int   // array: -1 when unbounded

	maxLength int      // string: -1 when unbounded
	mark      *Marking // string: nil when unmarked
	markIdx   int      // string: index of the marking, for counting
}

// Digest returns the schema's digest: receipts.SHA256 of the RFC 8785
// canonical form of the schema document, the plan's output_schema_digest.
// Reformatting the document or reordering its members does not change it;
// any other change does, annotations included.
func (s *Schema) Digest() string { return s.digest }

// Paths returns every marked path with its marking, whatever its purpose,
// sorted by path. The slice is a copy.
func (s *Schema) Paths() []MarkedPath { return slices.Clone(s.marked) }

// The fixed reasons of schema refusals.
const (
	reasonNotSchema      = "schema is not an object"
	reasonNoType         = "schema without type"
	reasonTypeNotString  = "type is not a string"
	reasonUnknownType    = "unknown type"
	reasonUnknownKeyword = "unknown keyword"
	reasonAnnotation     = "annotation is not a string"
	reasonProperties     = "properties is not an object"
	reasonPropertyName   = "invalid property name"
	reasonRequired       = "required is not an array of strings"
	reasonRequiredDup    = "duplicate name in required"
	reasonRequiredUndecl = "required names an undeclared property"
	reasonAdditional     = "additionalProperties is not false"
	reasonNoItems        = "array without items"
	reasonCount          = "not a non-negative integer"
	reasonMarking        = "marking is not an object"
	reasonMarkingKey     = "unknown marking member"
	reasonMarkingMissing = "marking without category, purpose and max"
	reasonMarkCategory   = "marking category is not a string"
	reasonUnknownCat     = "unknown category"
	reasonCredential     = "credential category is prohibited"
	reasonPurpose        = "invalid purpose"
	reasonMax            = "marking max is not a positive integer"
	reasonMaxLength      = "maxLength is shorter than a token of the marking's category"
)

// ParseSchema parses an output schema: a JSON Schema subset of three node
// forms (see the package documentation). The document is read strictly
// (canon.Parse); every keyword outside the subset, every type but
// object, array and string, and every malformed marking is refused with a
// *receipts.Refusal of kind "schema".
func ParseSchema(data []byte) (*Schema, error) {
	tree, err := canon.Parse(data, canon.Options{MaxBytes: MaxSchemaBytes, MaxDepth: MaxSchemaDepth})
	if err != nil {
		if se, ok := err.(*canon.SyntaxError); ok {
			return nil, &receipts.Refusal{Code: receipts.Code(se.Class), Part: -1, Kind: "schema", Line: se.Line, Column: se.Column, Length: se.Length, Reason: se.Reason}
		}
		return nil, &receipts.Refusal{Code: receipts.MalformedRecord, Part: -1, Kind: "schema", Line: 1, Column: 1, Reason: "unreadable schema"}
	}
	p := schemaParser{data: data}
	root, err := p.node(tree, "", "$")
	if err != nil {
		return nil, err
	}
	canonical, err := tree.Canonical()
	if err != nil {
		return nil, &receipts.Refusal{Code: receipts.MalformedRecord, Part: -1, Kind: "schema", Line: 1, Column: 1, Reason: "schema has no canonical form"}
	}
	slices.SortFunc(p.marked, func(a, b MarkedPath) int { return strings.Compare(a.Path, b.Path) })
	return &Schema{root: root, digest: receipts.SHA256(canonical), marked: p.marked}, nil
}

type schemaParser struct {
	data   []byte
	marked []MarkedPath
}

func (p *schemaParser) fail(code receipts.Code, off, length int, reason string) error {
	line, col := canon.LineCol(p.data, off)
	return &receipts.Refusal{Code: code, Part: -1, Kind: "schema", Line: line, Column: col, Length: length, Reason: reason}
}

func (p *schemaParser) failValue(v *canon.Value, reason string) error {
	return p.fail(receipts.MalformedRecord, v.Off, v.End-v.Off, reason)
}

func (p *schemaParser) failKey(m *canon.Member, reason string) error {
	return p.fail(receipts.MalformedRecord, m.KeyOff, literalEnd(p.data, m.KeyOff)-m.KeyOff, reason)
}

// The keywords allowed for each type, besides type, description and title.
var keywords = map[kind][]string{
	kindObject: {"properties", "required", "additionalProperties"},
	kindArray:  {"items", "maxItems"},
	kindString: {"maxLength", MarkKeyword},
}

func (p *schemaParser) node(v *canon.Value, name, path string) (*node, error) {
	if v.Kind != canon.Object {
		return nil, p.failValue(v, reasonNotSchema)
	}
	n := &node{name: name, path: path, maxItems: -1, maxLength: -1}
	var typ *canon.Member
	for i := range v.Members {
		if string(v.Members[i].Key) == "type" {
			typ = &v.Members[i]
		}
	}
	if typ == nil {
		return nil, p.failValue(v, reasonNoType)
	}
	if typ.Value.Kind != canon.String {
		return nil, p.failValue(&typ.Value, reasonTypeNotString)
	}
	switch string(typ.Value.Str) {
	case "object":
		n.kind = kindObject
	case "array":
		n.kind = kindArray
	case "string":
		n.kind = kindString
	default:
		return nil, p.failValue(&typ.Value, reasonUnknownType)
	}
	var props, required, items *canon.Member
	for i := range v.Members {
		m := &v.Members[i]
		key := string(m.Key)
		switch key {
		case "type":
			continue
		case "description", "title":
			if m.Value.Kind != canon.String {
				return nil, p.failValue(&m.Value, reasonAnnotation)
			}
			continue
		}
		if !slices.Contains(keywords[n.kind], key) {
			return nil, p.failKey(m, reasonUnknownKeyword)
		}
		var err error
		switch key {
		case "properties":
			props = m
		case "required":
			required = m
		case "additionalProperties":
			if m.Value.Kind != canon.Bool || m.Value.Bool {
				return nil, p.failValue(&m.Value, reasonAdditional)
			}
		case "items":
			items = m
		case "maxItems":
			n.maxItems, err = p.count(&m.Value, 0, reasonCount)
		case "maxLength":
			n.maxLength, err = p.count(&m.Value, 0, reasonCount)
		case MarkKeyword:
			n.mark, err = p.marking(&m.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	switch n.kind {
	case kindObject:
		if err := p.object(n, props, required); err != nil {
			return nil, err
		}
	case kindArray:
		if items == nil {
			return nil, p.failValue(v, reasonNoItems)
		}
		var err error
		if n.items, err = p.node(&items.Value, "", path+"[*]"); err != nil {
			return nil, err
		}
	case kindString:
		if n.mark != nil {
			if n.maxLength >= 0 && n.maxLength < TokenLen(n.mark.Category) {
				return nil, p.failValue(v, reasonMaxLength)
			}
			n.markIdx = len(p.marked)
			p.marked = append(p.marked, MarkedPath{Path: path, Marking: *n.mark})
		}
	}
	return n, nil
}

func (p *schemaParser) object(n *node, props, required *canon.Member) error {
	n.props = map[string]*node{}
	if props != nil {
		if props.Value.Kind != canon.Object {
			return p.failValue(&props.Value, reasonProperties)
		}
		for i := range props.Value.Members {
			m := &props.Value.Members[i]
			if !validName(m.Key) {
				return p.failKey(m, reasonPropertyName)
			}
			c, err := p.node(&m.Value, string(m.Key), n.path+"."+string(m.Key))
			if err != nil {
				return err
			}
			n.props[c.name] = c
		}
	}
	// Property names are ASCII, so byte order is RFC 8785's UTF-16 order.
	names := slices.Sorted(maps.Keys(n.props))
	for i, name := range names {
		n.props[name].rank = i
	}
	if required != nil {
		if required.Value.Kind != canon.Array {
			return p.failValue(&required.Value, reasonRequired)
		}
		for i := range required.Value.Elems {
			e := &required.Value.Elems[i]
			if e.Kind != canon.String {
				return p.failValue(e, reasonRequired)
			}
			c := n.props[string(e.Str)]
			switch {
			case c == nil:
				return p.failValue(e, reasonRequiredUndecl)
			case c.req:
				return p.failValue(e, reasonRequiredDup)
			}
			c.req = true
			n.nreq++
		}
	}
	return nil
}

func (p *schemaParser) marking(v *canon.Value) (*Marking, error) {
	if v.Kind != canon.Object {
		return nil, p.failValue(v, reasonMarking)
	}
	var mk Marking
	var seen int
	for i := range v.Members {
		m := &v.Members[i]
		switch string(m.Key) {
		case "category":
			if m.Value.Kind != canon.String {
				return nil, p.failValue(&m.Value, reasonMarkCategory)
			}
			switch ci := categoryIndex(m.Value.Str); {
			case ci < 0:
				return nil, p.fail(receipts.UnknownCategory, m.Value.Off, m.Value.End-m.Value.Off, reasonUnknownCat)
			case categories[ci] == credential:
				return nil, p.fail(receipts.ProhibitedCategory, m.Value.Off, m.Value.End-m.Value.Off, reasonCredential)
			default:
				mk.Category = categories[ci]
			}
		case "purpose":
			if m.Value.Kind != canon.String || !validPurpose(m.Value.Str) {
				return nil, p.failValue(&m.Value, reasonPurpose)
			}
			mk.Purpose = string(m.Value.Str)
		case "max":
			var err error
			if mk.Max, err = p.count(&m.Value, 1, reasonMax); err != nil {
				return nil, err
			}
		default:
			return nil, p.failKey(m, reasonMarkingKey)
		}
		seen++
	}
	if seen != 3 {
		return nil, p.failValue(v, reasonMarkingMissing)
	}
	return &mk, nil
}

// count reads an integer literal (no sign, fraction or exponent) of at least
// least and at most canon.MaxSafeInteger.
func (p *schemaParser) count(v *canon.Value, least int, reason string) (int, error) {
	if v.Kind != canon.Number || strings.ContainsAny(v.Num, "-.eE") {
		return 0, p.failValue(v, reason)
	}
	n, err := strconv.ParseInt(v.Num, 10, 64)
	if err != nil || n < int64(least) || n > canon.MaxSafeInteger {
		return 0, p.failValue(v, reason)
	}
	return int(n), nil
}

// validName reports whether b is a property name the subset accepts:
// [A-Za-z_][A-Za-z0-9_-]*, at most MaxNameLen bytes. Such names print
// unambiguously in a JSON path, sort the same in UTF-8 and UTF-16, and can
// never equal a token (tokens contain ':').
func validName(b []byte) bool {
	if len(b) == 0 || len(b) > MaxNameLen || b[0] >= '0' && b[0] <= '9' || b[0] == '-' {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// validPurpose reports whether b is a purpose the subset accepts: 1 to
// MaxPurposeLen bytes of printable ASCII without space. Purposes are
// compared byte for byte with the lease's.
func validPurpose(b []byte) bool {
	if len(b) == 0 || len(b) > MaxPurposeLen {
		return false
	}
	for _, c := range b {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}
