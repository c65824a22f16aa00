package importer

import (
	"errors"
	"fmt"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// MaxInputBytes caps one input: a govulncheck stream, an OpenVEX document or
// an osv-scanner report (256 MiB).
const MaxInputBytes = 256 << 20

// MaxMessageBytes caps one message of a govulncheck stream (64 MiB).
const MaxMessageBytes = 64 << 20

// doc reads one parsed JSON document of the input with type checks. The
// first failure is kept as an *InputError positioned in the whole input.
type doc struct {
	data   []byte // the whole input
	base   int    // offset of this document in data
	format string
	msg    int
	err    *InputError
}

// parseDoc strictly parses data[from:to] as one JSON document.
func (d *doc) parse(from, to int) *canon.Value {
	d.base = from
	tree, err := canon.Parse(d.data[from:to], canon.Options{MaxBytes: MaxMessageBytes})
	if err != nil {
		var se *canon.SyntaxError
		if errors.As(err, &se) {
			d.errAt(from+se.Offset, receipts.Code(se.Class), "", se.Reason)
		} else {
			d.errAt(from, receipts.MalformedRecord, "", "not strict JSON")
		}
		return nil
	}
	return tree
}

func (d *doc) errAt(off int, code receipts.Code, path, reason string) {
	if d.err != nil {
		return
	}
	line, col := canon.LineCol(d.data, off)
	d.err = &InputError{Code: code, Format: d.format, Message: d.msg, Line: line, Column: col,
		Offset: off, Path: path, Reason: reason}
}

// fail records a malformed value v at path.
func (d *doc) fail(v *canon.Value, path, reason string) {
	d.errAt(d.base+v.Off, receipts.MalformedRecord, path, reason)
}

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

// jpath is a schema path — format field names and indices, never input —
// built on the stack and written out only when a refusal names it.
type jpath struct {
	up  *jpath
	key string // a member name, or "" for an element
	idx int    // an element's index
}

// root is the path of a whole document or message.
var root = &jpath{}

func (p *jpath) field(k string) *jpath { return &jpath{up: p, key: k} }
func (p *jpath) elem(i int) *jpath     { return &jpath{up: p, idx: i} }

func (p *jpath) String() string {
	var parts []*jpath
	for q := p; q != nil && q != root; q = q.up {
		parts = append(parts, q)
	}
	var b []byte
	for i := len(parts) - 1; i >= 0; i-- {
		q := parts[i]
		if q.key == "" {
			b = fmt.Appendf(b, "[%d]", q.idx)
			continue
		}
		if len(b) > 0 {
			b = append(b, '.')
		}
		b = append(b, q.key...)
	}
	return string(b)
}

// failAt records a malformed value v at p (or at p.key when key is set).
func (d *doc) failAt(v *canon.Value, p *jpath, key, reason string) {
	if d.err != nil {
		return
	}
	if key != "" {
		p = p.field(key)
	}
	d.fail(v, p.String(), reason)
}

// str returns member key of o (at p) as a string; absent or null is "".
func (d *doc) str(o *canon.Value, p *jpath, key string) string {
	v := member(o, key)
	if v == nil || v.Kind == canon.Null {
		return ""
	}
	if v.Kind != canon.String {
		d.failAt(v, p, key, "expected string")
		return ""
	}
	return string(v.Str)
}

// boolean returns member key of o; absent or null is false.
func (d *doc) boolean(o *canon.Value, p *jpath, key string) bool {
	v := member(o, key)
	if v == nil || v.Kind == canon.Null {
		return false
	}
	if v.Kind != canon.Bool {
		d.failAt(v, p, key, "expected boolean")
		return false
	}
	return v.Bool
}

// number type-checks member key of o as a JSON number.
func (d *doc) number(o *canon.Value, p *jpath, key string) {
	if v := member(o, key); v != nil && v.Kind != canon.Null && v.Kind != canon.Number {
		d.failAt(v, p, key, "expected number")
	}
}

// arr returns the elements of member key of o; absent or null is empty.
func (d *doc) arr(o *canon.Value, p *jpath, key string) []canon.Value {
	v := member(o, key)
	if v == nil || v.Kind == canon.Null {
		return nil
	}
	if v.Kind != canon.Array {
		d.failAt(v, p, key, "expected array")
		return nil
	}
	return v.Elems
}

// obj returns member key of o when it is an object; absent or null is nil.
func (d *doc) obj(o *canon.Value, p *jpath, key string) *canon.Value {
	v := member(o, key)
	if v == nil || v.Kind == canon.Null {
		return nil
	}
	if v.Kind != canon.Object {
		d.failAt(v, p, key, "expected object")
		return nil
	}
	return v
}

// objects returns the elements of array member key, each of which must be
// an object.
func (d *doc) objects(o *canon.Value, p *jpath, key string) []*canon.Value {
	elems := d.arr(o, p, key)
	out := make([]*canon.Value, 0, len(elems))
	for i := range elems {
		if elems[i].Kind != canon.Object {
			d.failAt(&elems[i], p.field(key).elem(i), "", "expected object")
			return nil
		}
		out = append(out, &elems[i])
	}
	return out
}

func (d *doc) strings(o *canon.Value, p *jpath, key string) []string {
	elems := d.arr(o, p, key)
	out := make([]string, 0, len(elems))
	for i := range elems {
		if elems[i].Kind != canon.String {
			d.failAt(&elems[i], p.field(key).elem(i), "", "expected string")
			return nil
		}
		out = append(out, string(elems[i].Str))
	}
	return out
}

// osvEntry is what an importer uses of an OSV entry: its id and its
// citation candidates in order of preference.
type osvEntry struct {
	id        string
	citations []string // database_specific.url, then references[].url in order
	affected  []osvAffected
}

type osvAffected struct {
	module, ecosystem string
	ranges            [][]osvEvent // SEMVER ranges only
}

type osvEvent struct{ introduced, fixed, lastAffected string }

// entry decodes the used fields of an OSV entry at p.
func (d *doc) entry(e *canon.Value, p *jpath) *osvEntry {
	out := &osvEntry{id: d.str(e, p, "id")}
	if d.err == nil && out.id == "" {
		d.failAt(e, p, "id", "missing")
	}
	if ds := d.obj(e, p, "database_specific"); ds != nil {
		if u := d.str(ds, p.field("database_specific"), "url"); u != "" {
			out.citations = append(out.citations, u)
		}
	}
	for i, r := range d.objects(e, p, "references") {
		if u := d.str(r, p.field("references").elem(i), "url"); u != "" {
			out.citations = append(out.citations, u)
		}
	}
	d.strings(e, p, "aliases")
	for i, a := range d.objects(e, p, "affected") {
		ap := p.field("affected").elem(i)
		var af osvAffected
		if pk := d.obj(a, ap, "package"); pk != nil {
			af.module = d.str(pk, ap.field("package"), "name")
			af.ecosystem = d.str(pk, ap.field("package"), "ecosystem")
		}
		for j, r := range d.objects(a, ap, "ranges") {
			rp := ap.field("ranges").elem(j)
			typ := d.str(r, rp, "type")
			var evs []osvEvent
			for k, ev := range d.objects(r, rp, "events") {
				ep := rp.field("events").elem(k)
				evs = append(evs, osvEvent{
					introduced:   d.str(ev, ep, "introduced"),
					fixed:        d.str(ev, ep, "fixed"),
					lastAffected: d.str(ev, ep, "last_affected"),
				})
				d.str(ev, ep, "limit")
			}
			if typ == "SEMVER" {
				af.ranges = append(af.ranges, evs)
			}
		}
		out.affected = append(out.affected, af)
	}
	return out
}
