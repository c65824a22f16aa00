package wire

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// Limits of an output schema document, the same as the rehydration
// subset's.
const (
	MaxSchemaBytes = 1 << 20 // largest schema document
	MaxSchemaDepth = 64      // deepest JSON nesting of a schema document
)

// ReservedPrefix begins the names of privacycut's own schema members
// ("x-privacycut-rehydrate"). They are local: S′, the schema a provider
// sees, has every member so named removed, at any depth.
const ReservedPrefix = "x-privacycut-"

// The fixed reasons of Strictness.
const (
	StrictAdditional = "additionalProperties is not false"
	StrictRequired   = "required is not an array of strings"
	StrictUnlisted   = "property not listed in required"
)

// Strictness says whether S′ meets the providers' strict structured-output
// rules: every object schema has "additionalProperties": false and lists
// every one of its properties in "required". When it does not, Path names
// the first object schema (or, for an unlisted property, the property) that
// breaks a rule, as a path in S′ ("$.properties.findings.items"), and Reason
// says which rule. Both are content-free: the schema is public, approved
// text, and the path holds only its member names.
type Strictness struct {
	Strict bool   `json:"strict"`
	Path   string `json:"path,omitempty"`
	Reason string `json:"reason,omitempty"`
}

func (s Strictness) String() string {
	if s.Strict {
		return "strict"
	}
	return "not strict: " + s.Path + ": " + s.Reason
}

// Schema is an output schema read for a wire body: the document's digest,
// S′ and its strictness. It is immutable.
type Schema struct {
	digest    string
	stripped  canon.Value
	canonical []byte // canonical form of S′
	strict    Strictness
}

// ParseSchema reads an output schema document strictly (canon.Parse, at
// most MaxSchemaBytes and MaxSchemaDepth) and derives S′. The document must
// be a JSON object. A property name that begins with ReservedPrefix is
// refused (PLAN_MISMATCH): removing it would change what the schema asks
// for. Refusals are *Error with Field "output_schema".
func ParseSchema(doc []byte) (*Schema, error) {
	tree, err := canon.Parse(doc, canon.Options{MaxBytes: MaxSchemaBytes, MaxDepth: MaxSchemaDepth})
	if err != nil {
		return nil, docError("output_schema", err)
	}
	if tree.Kind != canon.Object {
		e := planError("output_schema", reasonSchemaNotObject)
		e.Offset = tree.Off
		e.Line, e.Column = canon.LineCol(doc, tree.Off)
		return nil, e
	}
	if off, bad := reservedProperty(tree); bad {
		e := planError("output_schema", reasonReservedName)
		e.Offset = off
		e.Line, e.Column = canon.LineCol(doc, off)
		return nil, e
	}
	canonical, err := tree.Canonical()
	if err != nil {
		return nil, docError("output_schema", err)
	}
	s := &Schema{digest: receipts.SHA256(canonical), stripped: strip(tree)}
	if s.canonical, err = s.stripped.Canonical(); err != nil {
		return nil, docError("output_schema", err)
	}
	// Strictness is judged in canonical member order, so that the path it
	// names does not depend on how the document was written.
	sorted, err := canon.Parse(s.canonical, canon.Options{MaxBytes: MaxSchemaBytes, MaxDepth: MaxSchemaDepth})
	if err != nil {
		return nil, docError("output_schema", err)
	}
	s.strict = strictness(sorted)
	return s, nil
}

// Digest returns receipts.SHA256 of the canonical form of the schema
// document as given (markings included): what a plan's
// output_schema_digest binds.
func (s *Schema) Digest() string { return s.digest }

// Stripped returns the canonical form of S′. The slice is a copy.
func (s *Schema) Stripped() []byte { return bytes.Clone(s.canonical) }

// Strictness returns whether S′ is strict, and why not.
func (s *Schema) Strictness() Strictness { return s.strict }

// Strip returns the canonical form of S′ for a schema document: the
// document with every member whose name begins with ReservedPrefix
// removed, at any depth.
func Strip(doc []byte) ([]byte, error) {
	s, err := ParseSchema(doc)
	if err != nil {
		return nil, err
	}
	return s.canonical, nil
}

// CheckStrict reports whether the schema document's S′ meets the strict
// structured-output rules, and if not, where and why: what `cut plan init`
// prints.
func CheckStrict(doc []byte) (Strictness, error) {
	s, err := ParseSchema(doc)
	if err != nil {
		return Strictness{}, err
	}
	return s.strict, nil
}

// strip returns a copy of v without the reserved members, at any depth.
func strip(v *canon.Value) canon.Value {
	c := canon.Value{Kind: v.Kind, Bool: v.Bool, Num: v.Num, Off: v.Off, End: v.End}
	switch v.Kind {
	case canon.String:
		c.Str = bytes.Clone(v.Str)
	case canon.Array:
		c.Elems = make([]canon.Value, len(v.Elems))
		for i := range v.Elems {
			c.Elems[i] = strip(&v.Elems[i])
		}
	case canon.Object:
		c.Members = make([]canon.Member, 0, len(v.Members))
		for i := range v.Members {
			m := &v.Members[i]
			if bytes.HasPrefix(m.Key, []byte(ReservedPrefix)) {
				continue
			}
			c.Members = append(c.Members, canon.Member{Key: bytes.Clone(m.Key), KeyOff: m.KeyOff, Value: strip(&m.Value)})
		}
	}
	return c
}

// Schema nodes. The walk visits the root and, recursively, the values of
// the members of "properties", "$defs" and "definitions"; the value of
// "items", "additionalProperties" and "not" when it is an object; and the
// elements of "items", "prefixItems", "anyOf", "allOf" and "oneOf" when it
// is an array. Every other member is a keyword value, not a schema.
var (
	schemaMaps   = []string{"properties", "$defs", "definitions"}
	schemaSingle = []string{"items", "additionalProperties", "not"}
	schemaLists  = []string{"items", "prefixItems", "anyOf", "allOf", "oneOf"}
)

// walk calls f on every schema node under v (v included), depth first in
// member order, with its path; it stops when f returns false.
func walk(v *canon.Value, path string, f func(v *canon.Value, path string) bool) bool {
	if v.Kind != canon.Object {
		return true
	}
	if !f(v, path) {
		return false
	}
	for i := range v.Members {
		m := &v.Members[i]
		key := string(m.Key)
		p := path + segment(key)
		switch {
		case contains(schemaMaps, key) && m.Value.Kind == canon.Object:
			for j := range m.Value.Members {
				sub := &m.Value.Members[j]
				if !walk(&sub.Value, p+segment(string(sub.Key)), f) {
					return false
				}
			}
		case contains(schemaSingle, key) && m.Value.Kind == canon.Object:
			if !walk(&m.Value, p, f) {
				return false
			}
		case contains(schemaLists, key) && m.Value.Kind == canon.Array:
			for j := range m.Value.Elems {
				if !walk(&m.Value.Elems[j], p+"["+strconv.Itoa(j)+"]", f) {
					return false
				}
			}
		}
	}
	return true
}

// strictness applies the strict rules to every object schema of S′: one
// whose "type" is "object" or a list holding "object", or that has
// "properties".
func strictness(root *canon.Value) Strictness {
	st := Strictness{Strict: true}
	walk(root, "$", func(v *canon.Value, path string) bool {
		if !isObjectSchema(v) {
			return true
		}
		add := member(v, "additionalProperties")
		if add == nil || add.Kind != canon.Bool || add.Bool {
			st = Strictness{Path: path, Reason: StrictAdditional}
			return false
		}
		listed := map[string]bool{}
		if req := member(v, "required"); req != nil {
			if req.Kind != canon.Array {
				st = Strictness{Path: path, Reason: StrictRequired}
				return false
			}
			for i := range req.Elems {
				if req.Elems[i].Kind != canon.String {
					st = Strictness{Path: path, Reason: StrictRequired}
					return false
				}
				listed[string(req.Elems[i].Str)] = true
			}
		}
		if props := member(v, "properties"); props != nil && props.Kind == canon.Object {
			for i := range props.Members {
				name := string(props.Members[i].Key)
				if !listed[name] {
					st = Strictness{Path: path + ".properties" + segment(name), Reason: StrictUnlisted}
					return false
				}
			}
		}
		return true
	})
	return st
}

func isObjectSchema(v *canon.Value) bool {
	if member(v, "properties") != nil {
		return true
	}
	t := member(v, "type")
	switch {
	case t == nil:
		return false
	case t.Kind == canon.String:
		return string(t.Str) == "object"
	case t.Kind == canon.Array:
		for i := range t.Elems {
			if t.Elems[i].Kind == canon.String && string(t.Elems[i].Str) == "object" {
				return true
			}
		}
	}
	return false
}

// reservedProperty reports the key offset of the first property name (a
// member of a schema node's "properties") that begins with ReservedPrefix.
func reservedProperty(root *canon.Value) (int, bool) {
	off, found := -1, false
	walk(root, "$", func(v *canon.Value, _ string) bool {
		props := member(v, "properties")
		if props == nil || props.Kind != canon.Object {
			return true
		}
		for i := range props.Members {
			if bytes.HasPrefix(props.Members[i].Key, []byte(ReservedPrefix)) {
				off, found = props.Members[i].KeyOff, true
				return false
			}
		}
		return true
	})
	return off, found
}

// member returns the value of v's member named key, or nil.
func member(v *canon.Value, key string) *canon.Value {
	for i := range v.Members {
		if string(v.Members[i].Key) == key {
			return &v.Members[i].Value
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// segment writes one member name of a path: ".name" for a name of
// [A-Za-z_$][A-Za-z0-9_$-]*, else a quoted ASCII-only `["…"]`.
func segment(name string) string {
	plain := name != ""
	for i := 0; i < len(name) && plain; i++ {
		c := name[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '$' ||
			i > 0 && (c >= '0' && c <= '9' || c == '-')
	}
	if plain {
		return "." + name
	}
	return "[" + strconv.QuoteToASCII(name) + "]"
}

// docError turns a canon refusal of a document into an *Error.
func docError(field string, err error) error {
	var se *canon.SyntaxError
	if errors.As(err, &se) {
		return &Error{Code: receipts.Code(se.Class), Field: field, Part: -1, Offset: se.Offset, Line: se.Line, Column: se.Column, Reason: se.Reason}
	}
	return &Error{Code: receipts.MalformedRecord, Field: field, Part: -1, Offset: -1, Reason: "unreadable document"}
}
