package censor

import (
	"hash"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// The export and the candidate are written directly in RFC 8785 canonical
// form: members in sorted order ("parts" < "profile"; "key" < "kind" <
// "text"; "parts" < "schema") and strings with the minimal escapes. Tests
// check the bytes against canon.Canonicalize.

// exportWriter accumulates the export while remembering where each part's
// escaped text lies in it, so the candidate digest can be computed over the
// same escaped bytes without building the candidate.
type exportWriter struct {
	doc   *grammar.Document
	buf   []byte
	spans [][2]int // escaped text of each part within buf
	start int
}

// template is every part's text escaped for the export, with the owner
// values cut out: gaps[j] is where the token of refs[j] goes. Tokens need no
// escaping (tokenSafe), so the export is the template with the tokens put
// in their gaps, and its size is known once the tokens are.
type template struct {
	doc   *grammar.Document
	buf   []byte
	parts [][2]int // each part's escaped text within buf
	gaps  []int
}

func newTemplate(doc *grammar.Document, refs []ownerRef) *template {
	n := 0
	for _, p := range doc.Parts {
		n += len(p.Text) + len(p.Text)/8
	}
	t := &template{doc: doc, buf: make([]byte, 0, n), parts: make([][2]int, len(doc.Parts)), gaps: make([]int, len(refs))}
	next := 0
	for pi, p := range doc.Parts {
		start, prev := len(t.buf), 0
		for ; next < len(refs) && int(refs[next].part) == pi; next++ {
			r := refs[next]
			t.buf = appendEscaped(t.buf, p.Text[prev:r.off])
			t.gaps[next] = len(t.buf)
			prev = int(r.off + r.n)
		}
		t.buf = appendEscaped(t.buf, p.Text[prev:])
		t.parts[pi] = [2]int{start, len(t.buf)}
	}
	return t
}

// newExportWriter returns a writer whose buffer holds an export of the
// given escaped text size and tokens without growing; the buffer comes from
// alloc unless it is nil.
func newExportWriter(doc *grammar.Document, refs []ownerRef, tokens []string, text int, alloc func(int) []byte) *exportWriter {
	n := len(`{"parts":[],"profile":"closed-diagnostic@1"}`) + text
	for _, p := range doc.Parts {
		n += len(`,{"kind":"","text":""}`) + 6*len(p.Kind)
	}
	for _, r := range refs {
		n += len(tokens[r.pair])
	}
	w := &exportWriter{doc: doc}
	if alloc != nil {
		w.buf = alloc(n)[:0]
	} else {
		w.buf = make([]byte, 0, n)
	}
	w.buf = append(w.buf, `{"parts":[`...)
	return w
}

// writeExport writes the export in one pass: each part's text escaped,
// with tokens[refs[j].pair] in place of the owner value refs[j]. It is what
// newTemplate followed by fill writes.
func writeExport(doc *grammar.Document, refs []ownerRef, tokens []string, alloc func(int) []byte) *exportWriter {
	text := 0
	for _, p := range doc.Parts {
		text += len(p.Text) + len(p.Text)/8
	}
	w := newExportWriter(doc, refs, tokens, text, alloc)
	next := 0
	for pi, p := range doc.Parts {
		w.beginPart(pi)
		prev := 0
		for ; next < len(refs) && int(refs[next].part) == pi; next++ {
			r := refs[next]
			w.buf = appendEscaped(w.buf, p.Text[prev:r.off])
			w.buf = append(w.buf, tokens[r.pair]...)
			prev = int(r.off + r.n)
		}
		w.buf = appendEscaped(w.buf, p.Text[prev:])
		w.endPart()
	}
	w.buf = append(w.buf, `],"profile":"closed-diagnostic@1"}`...)
	return w
}

// fill writes the export: the template with tokens[refs[j].pair] in gap j.
func (t *template) fill(refs []ownerRef, tokens []string, alloc func(int) []byte) *exportWriter {
	w := newExportWriter(t.doc, refs, tokens, len(t.buf), alloc)
	next := 0
	for pi := range t.doc.Parts {
		w.beginPart(pi)
		from, end := t.parts[pi][0], t.parts[pi][1]
		for ; next < len(refs) && int(refs[next].part) == pi; next++ {
			w.buf = append(w.buf, t.buf[from:t.gaps[next]]...)
			w.buf = append(w.buf, tokens[refs[next].pair]...)
			from = t.gaps[next]
		}
		w.buf = append(w.buf, t.buf[from:end]...)
		w.endPart()
	}
	w.buf = append(w.buf, `],"profile":"closed-diagnostic@1"}`...)
	return w
}

func (w *exportWriter) beginPart(i int) {
	if i > 0 {
		w.buf = append(w.buf, ',')
	}
	w.buf = append(w.buf, `{"kind":`...)
	w.buf = appendString(w.buf, []byte(w.doc.Parts[i].Kind))
	w.buf = append(w.buf, `,"text":"`...)
	w.start = len(w.buf)
}

func (w *exportWriter) endPart() {
	w.spans = append(w.spans, [2]int{w.start, len(w.buf)})
	w.buf = append(w.buf, `"}`...)
}

// candidateDigest is H({"schema":"Candidate@1","parts":[{"kind","key","text"}…]}).
func (w *exportWriter) candidateDigest(k *receipts.EvidenceKey) string {
	h := k.NewHMAC()
	write := func(h hash.Hash, s string) { h.Write([]byte(s)) }
	write(h, `{"parts":[`)
	var tmp []byte
	for i, p := range w.doc.Parts {
		if i > 0 {
			write(h, ",")
		}
		write(h, `{"key":`)
		tmp = appendString(tmp[:0], []byte(p.Key))
		h.Write(tmp)
		write(h, `,"kind":`)
		tmp = appendString(tmp[:0], []byte(p.Kind))
		h.Write(tmp)
		write(h, `,"text":"`)
		receipts.WriteChunked(h, w.buf[w.spans[i][0]:w.spans[i][1]])
		write(h, `"}`)
	}
	write(h, `],"schema":"Candidate@1"}`)
	return receipts.PrefixHMAC + hexString(h.Sum(nil))
}

const hexDigits = "0123456789abcdef"

func hexString(b []byte) string {
	out := make([]byte, 2*len(b))
	for i, c := range b {
		out[2*i], out[2*i+1] = hexDigits[c>>4], hexDigits[c&15]
	}
	return string(out)
}

// appendEscaped appends b with RFC 8785 string escapes, without quotes.
func appendEscaped(dst, b []byte) []byte { return canon.AppendStringBody(dst, b) }

// appendString appends b as a canonical JSON string, with quotes.
func appendString(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, b)
	return append(dst, '"')
}
