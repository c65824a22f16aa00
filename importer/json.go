package importer

import (
	"bytes"
	"errors"
	"fmt"

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
func (d *doc) parse(from, to int) *receipts.Value {
	d.base = from
	tree, err := receipts.Parse(d.data[from:to], receipts.Options{MaxBytes: MaxMessageBytes})
	if err != nil {
		var se *receipts.SyntaxError
		if errors.As(err, &se) {
			d.errAt(from+se.Offset, se.Code, "", se.Reason)
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
	line, col := lineCol(d.data, off)
	d.err = &InputError{Code: code, Format: d.format, Message: d.msg, Line: line, Column: col,
		Offset: off, Path: path, Reason: reason}
}

// fail records a malformed value v at path.
func (d *doc) fail(v *receipts.Value, path, reason string) {
	d.errAt(d.base+v.Off, receipts.MalformedRecord, path, reason)
}

func lineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

func member(v *receipts.Value, key string) *receipts.Value {
	if v == nil || v.Kind != receipts.Object {
		return nil
	}
	for i := range v.Members {
		if string(v.Members[i].Key) == key {
			return &v.Members[i].Value
		}
	}
	return nil
}

// str returns member key of o as a string; absent or null is "".
func (d *doc) str(o *receipts.Value, key, path string) string {
	v := member(o, key)
	if v == nil || v.Kind == receipts.Null {
		return ""
	}
	if v.Kind != receipts.String {
		d.fail(v, path, "expected string")
		return ""
	}
	return string(v.Str)
}

// boolean returns member key of o; absent or null is false.
func (d *doc) boolean(o *receipts.Value, key, path string) bool {
	v := member(o, key)
	if v == nil || v.Kind == receipts.Null {
		return false
	}
	if v.Kind != receipts.Bool {
		d.fail(v, path, "expected boolean")
		return false
	}
	return v.Bool
}

// number type-checks member key of o as a JSON number.
func (d *doc) number(o *receipts.Value, key, path string) {
	if v := member(o, key); v != nil && v.Kind != receipts.Null && v.Kind != receipts.Number {
		d.fail(v, path, "expected number")
	}
}

// arr returns the elements of member key of o; absent or null is empty.
func (d *doc) arr(o *receipts.Value, key, path string) []receipts.Value {
	v := member(o, key)
	if v == nil || v.Kind == receipts.Null {
		return nil
	}
	if v.Kind != receipts.Array {
		d.fail(v, path, "expected array")
		return nil
	}
	return v.Elems
}

// obj returns member key of o when it is an object; absent or null is nil.
func (d *doc) obj(o *receipts.Value, key, path string) *receipts.Value {
	v := member(o, key)
	if v == nil || v.Kind == receipts.Null {
		return nil
	}
	if v.Kind != receipts.Object {
		d.fail(v, path, "expected object")
		return nil
	}
	return v
}

// objects returns the elements of array member key, each of which must be
// an object.
func (d *doc) objects(o *receipts.Value, key, path string) []*receipts.Value {
	elems := d.arr(o, key, path)
	out := make([]*receipts.Value, 0, len(elems))
	for i := range elems {
		if elems[i].Kind != receipts.Object {
			d.fail(&elems[i], fmt.Sprintf("%s[%d]", path, i), "expected object")
			return nil
		}
		out = append(out, &elems[i])
	}
	return out
}

func (d *doc) strings(o *receipts.Value, key, path string) []string {
	elems := d.arr(o, key, path)
	out := make([]string, 0, len(elems))
	for i := range elems {
		if elems[i].Kind != receipts.String {
			d.fail(&elems[i], fmt.Sprintf("%s[%d]", path, i), "expected string")
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

// entry decodes the used fields of an OSV entry at path.
func (d *doc) entry(e *receipts.Value, path string) *osvEntry {
	out := &osvEntry{id: d.str(e, "id", path+".id")}
	if d.err == nil && out.id == "" {
		d.fail(e, path+".id", "missing")
	}
	if ds := d.obj(e, "database_specific", path+".database_specific"); ds != nil {
		if u := d.str(ds, "url", path+".database_specific.url"); u != "" {
			out.citations = append(out.citations, u)
		}
	}
	for i, r := range d.objects(e, "references", path+".references") {
		if u := d.str(r, "url", fmt.Sprintf("%s.references[%d].url", path, i)); u != "" {
			out.citations = append(out.citations, u)
		}
	}
	d.strings(e, "aliases", path+".aliases")
	for i, a := range d.objects(e, "affected", path+".affected") {
		ap := fmt.Sprintf("%s.affected[%d]", path, i)
		var af osvAffected
		if p := d.obj(a, "package", ap+".package"); p != nil {
			af.module = d.str(p, "name", ap+".package.name")
			af.ecosystem = d.str(p, "ecosystem", ap+".package.ecosystem")
		}
		for j, r := range d.objects(a, "ranges", ap+".ranges") {
			rp := fmt.Sprintf("%s.ranges[%d]", ap, j)
			typ := d.str(r, "type", rp+".type")
			var evs []osvEvent
			for k, ev := range d.objects(r, "events", rp+".events") {
				ep := fmt.Sprintf("%s.events[%d]", rp, k)
				evs = append(evs, osvEvent{
					introduced:   d.str(ev, "introduced", ep+".introduced"),
					fixed:        d.str(ev, "fixed", ep+".fixed"),
					lastAffected: d.str(ev, "last_affected", ep+".last_affected"),
				})
				d.str(ev, "limit", ep+".limit")
			}
			if typ == "SEMVER" {
				af.ranges = append(af.ranges, evs)
			}
		}
		out.affected = append(out.affected, af)
	}
	return out
}
