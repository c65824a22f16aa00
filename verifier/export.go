package verifier

import (
	"bytes"
	"errors"

	"github.com/privacycut/privacycut/receipts"
)

// exportDoc is the export's canonical shape; Marshal writes it in RFC 8785
// form: {"parts":[{"kind":…,"text":…}…],"profile":"closed-diagnostic@1"}.
type exportDoc struct {
	Parts   []exportDocPart `json:"parts"`
	Profile string          `json:"profile"`
}

type exportDocPart struct {
	Kind string `json:"kind"`
	Text []byte `json:"text"`
}

var errExportShape = errors.New("verifier: export: not shaped {parts:[{kind,text}…],profile}")

// members returns the members of an object value by key, or nil if v is not
// an object or has a key outside want.
func members(v *receipts.Value, want ...string) map[string]*receipts.Value {
	if v.Kind != receipts.Object {
		return nil
	}
	out := make(map[string]*receipts.Value, len(v.Members))
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
func parseExport(data []byte) ([]exportPart, []byte, error) {
	tree, err := receipts.Parse(data, receipts.Options{})
	if err != nil {
		return nil, nil, err
	}
	canon, err := tree.Canonical()
	if err != nil {
		return nil, nil, err
	}
	top := members(tree, "parts", "profile")
	if top == nil || top["parts"] == nil || top["parts"].Kind != receipts.Array {
		return nil, canon, errExportShape
	}
	var shapeErr error
	if p := top["profile"]; p == nil || p.Kind != receipts.String || string(p.Str) != receipts.ProfileName {
		shapeErr = errExportShape
	}
	elems := top["parts"].Elems
	parts := make([]exportPart, 0, len(elems))
	for i := range elems {
		m := members(&elems[i], "kind", "text")
		if m == nil || len(m) != 2 || m["kind"].Kind != receipts.String || m["text"].Kind != receipts.String {
			return nil, canon, errExportShape
		}
		parts = append(parts, exportPart{kind: string(m["kind"].Str), text: m["text"].Str})
	}
	return parts, canon, shapeErr
}

// checkExport evaluates export-canonical: strict JSON, byte-equal to its
// canonical form, the export shape, and the claimed digest.
func (c *check) checkExport() {
	o := &c.out[cExport]
	parts, canon, err := parseExport(c.req.Export)
	c.expParts, c.expErr = parts, err
	if err != nil {
		o.fail("export: %s", errText(err))
	}
	if canon != nil && !bytes.Equal(canon, c.req.Export) {
		o.fail("export is not in canonical form (differs at byte %d)", firstDiff(canon, c.req.Export))
	}
	if got := receipts.SHA256(c.req.Export); c.req.ExportDigest != got {
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
