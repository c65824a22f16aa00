package verifier

import (
	"errors"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

func strValue(b []byte) canon.Value { return canon.Value{Kind: canon.String, Str: b} }

func member(key string, v canon.Value) canon.Member {
	return canon.Member{Key: []byte(key), Value: v}
}

// partsTree returns the tree of a document made of a "parts" array, whose
// objects hold the given fields, and the extra top-level members. It also
// returns the total text size, as a size hint.
func partsTree(fields func(i int) []canon.Member, n int, extra ...canon.Member) (*canon.Value, int) {
	size := 0
	elems := make([]canon.Value, n)
	for i := range elems {
		ms := fields(i)
		for _, m := range ms {
			size += len(m.Value.Str) + len(m.Key) + 8
		}
		elems[i] = canon.Value{Kind: canon.Object, Members: ms}
	}
	top := append([]canon.Member{member("parts", canon.Value{Kind: canon.Array, Elems: elems})}, extra...)
	return &canon.Value{Kind: canon.Object, Members: top}, size
}

var errExportShape = errors.New("verifier: export: not shaped {parts:[{kind,text}…],profile}")

// members returns the members of an object value by key, or nil if v is not
// an object or has a key outside want.
func members(v *canon.Value, want ...string) map[string]*canon.Value {
	if v.Kind != canon.Object {
		return nil
	}
	out := make(map[string]*canon.Value, len(v.Members))
	for i := range v.Members {
		m := &v.Members[i]
		known := false
		for _, w := range want {
			if string(m.Key) == w {
				known = true
			}
		}
		if !known {
			return nil
		}
		out[string(m.Key)] = &m.Value
	}
	return out
}

// parseExport reads the export's parts. It returns the parts it could read
// even when the shape is wrong elsewhere, and an error naming the first
// problem.
func parseExport(data []byte) ([]exportPart, int, error) {
	tree, err := canon.Parse(data, canon.Options{})
	if err != nil {
		return nil, -1, err
	}
	diff, err := compareCanonical(tree, data)
	if err != nil {
		return nil, -1, err
	}
	top := members(tree, "parts", "profile")
	if top == nil || top["parts"] == nil || top["parts"].Kind != canon.Array {
		return nil, diff, errExportShape
	}
	var shapeErr error
	if p := top["profile"]; p == nil || p.Kind != canon.String || string(p.Str) != receipts.ProfileName {
		shapeErr = errExportShape
	}
	elems := top["parts"].Elems
	parts := make([]exportPart, 0, len(elems))
	for i := range elems {
		m := members(&elems[i], "kind", "text")
		if m == nil || len(m) != 2 || m["kind"].Kind != canon.String || m["text"].Kind != canon.String {
			return nil, diff, errExportShape
		}
		parts = append(parts, exportPart{kind: string(m["kind"].Str), text: m["text"].Str})
	}
	return parts, diff, shapeErr
}

// decodeExport decodes the export into c.expParts, c.expCanon and c.expErr:
// directly when it is already canonical and shaped as an export (the
// texts then live in a buffer freed when the check ends), else through a
// strict parse that names what is wrong.
func (c *check) decodeExport() {
	data := c.req.Export
	if len(data) > 0 && len(data) <= canon.DefaultMaxBytes {
		buf, free := newBuffer(len(data))
		if parts, ok := decodeCanonicalExport(data, buf); ok {
			c.expParts, c.expCanon, c.expErr = parts, -1, nil
			c.expFree = free
			return
		}
		free()
	}
	c.expParts, c.expCanon, c.expErr = parseExport(data)
}

// checkExport evaluates export-canonical: strict JSON, byte-equal to its
// canonical form, the export shape, and the claimed digest.
func (c *check) checkExport() {
	o := &c.out[cExport]
	parts, canonical, err := c.expParts, c.expCanon, c.expErr // decoded by decode
	if err != nil {
		o.fail("export: %s", errText(err))
	}
	if canonical >= 0 {
		o.fail("export is not in canonical form (differs at byte %d)", canonical)
	}
	if c.req.ExportDigest != c.exportDigest {
		o.fail("export_digest does not match the export bytes")
	}
	o.facts = "parts=" + itoa(len(parts)) + " bytes=" + itoa(len(c.req.Export))
}

// firstDiff returns the first offset where a and b differ.
func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
