package verifier

import (
	"errors"
	"fmt"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

var (
	errNoKey       = errors.New("verifier: no evidence key")
	errNoClock     = errors.New("verifier: no clock")
	errExportShape = errors.New("verifier: export: not shaped {parts:[{kind,text}…],profile}")
)

// decode reads every input. Each failure is kept for the claims that
// depend on that input. Every document is read by canon's strict parser;
// the long strings of the source and the export are decoded into buffers
// the check frees when it ends.
func (c *check) decode() {
	req := c.req
	if req.EvidenceKey == nil {
		c.keyErr = errNoKey
	} else if err := req.EvidenceKey.Reveal(func([]byte) error { return nil }); err != nil {
		c.keyErr = err
	} else {
		c.key = req.EvidenceKey
	}

	// The export is hashed and decoded on another CPU meanwhile.
	export := c.start(func() {
		c.exportDigest = receipts.SHA256(req.Export)
		c.exp, c.expCanon, c.expErr = parseExport(req.Export, c.buffer)
	})

	var tree *canon.Value
	c.src, tree, c.srcErr = parseProjection(req.Source, c.buffer)
	if c.key != nil && tree != nil {
		if d, err := keyedTree(c.key, tree); err == nil {
			c.srcDigest = d
		} else if errors.Is(err, receipts.ErrKeyWiped) {
			c.key, c.keyErr = nil, err
		} else {
			c.srcErr = err
		}
	}

	c.plan, c.planErr = parsePlan(req.Plan)
	if d, err := digestDoc(req.Plan); err == nil {
		c.planDigest = d
	}
	if c.plan != nil && (c.plan.Mode == receipts.ModeIrreversible || c.plan.Mode == receipts.ModeReversible) {
		c.mode = c.plan.Mode
	}

	var done func()
	c.voc, c.vocDigest, done, c.vocErr = loadVocabulary(req.Vocabulary)
	c.onEnd(done)

	c.recs, c.recDigests, c.recErr = parseReceipts(req.Receipts)
	export.wait()
}

// digestDoc returns S(document): SHA-256 of the document's canonical form.
func digestDoc(data []byte) (string, error) {
	canonical, err := canon.Canonicalize(data)
	if err != nil {
		return "", err
	}
	return receipts.SHA256(canonical), nil
}

// parseExport reads the export's parts with the strict parser, decoding
// its strings into buffers from alloc (nil: the heap). It returns the first
// offset at which the export differs from its canonical form (-1 when it
// is canonical), and the parts it could read even when the shape is wrong
// elsewhere, with an error naming the first problem.
func parseExport(data []byte, alloc func(int) []byte) ([]exportPart, int, error) {
	tree, err := canon.Parse(data, canon.Options{Buffer: alloc})
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

// compareWriter compares what is written to it with want, without keeping it.
type compareWriter struct {
	want []byte
	off  int
	diff int // first differing offset, or -1
}

func (w *compareWriter) Write(p []byte) (int, error) {
	if w.diff < 0 {
		rest := w.want[min(w.off, len(w.want)):]
		n := min(len(p), len(rest))
		if i := firstDiff(p[:n], rest[:n]); i < n {
			w.diff = w.off + i
		} else if n < len(p) {
			w.diff = w.off + n
		}
	}
	w.off += len(p)
	return len(p), nil
}

// compareCanonical reports the first offset at which the canonical form of
// tree differs from want, or -1 when they are equal, streaming the form.
func compareCanonical(tree *canon.Value, want []byte) (int, error) {
	w := &compareWriter{want: want, diff: -1}
	if err := tree.WriteCanonical(w); err != nil {
		return 0, err
	}
	if w.diff < 0 && w.off != len(want) {
		return min(w.off, len(want)), nil
	}
	return w.diff, nil
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

// parsePlan strictly decodes a DisclosurePlan@1.
func parsePlan(data []byte) (*receipts.Plan, error) {
	var p receipts.Plan
	if err := canon.Unmarshal(data, &p, canon.Options{}); err != nil {
		return nil, err
	}
	return &p, nil
}

// parseReceipts strictly decodes the JSON array of receipts and returns each
// receipt with its digest S(receipt) over the canonical form of the element
// as given.
func parseReceipts(data []byte) ([]receipts.TransformationReceipt, []string, error) {
	tree, err := canon.Parse(data, canon.Options{})
	if err != nil {
		return nil, nil, err
	}
	if tree.Kind != canon.Array {
		return nil, nil, errors.New("verifier: receipts: not a JSON array")
	}
	recs := make([]receipts.TransformationReceipt, len(tree.Elems))
	digests := make([]string, len(tree.Elems))
	for i := range tree.Elems {
		canonical, err := tree.Elems[i].Canonical()
		if err != nil {
			return nil, nil, err
		}
		digests[i] = receipts.SHA256(canonical)
		if err := tree.Elems[i].Decode(&recs[i]); err != nil {
			return nil, digests, fmt.Errorf("verifier: receipts: element %d: %w", i, err)
		}
	}
	return recs, digests, nil
}
