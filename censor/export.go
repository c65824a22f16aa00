package censor

import (
	"bytes"
	"hash"

	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// The export and the candidate are written directly in RFC 8785 canonical
// form: members in sorted order ("parts" < "profile"; "key" < "kind" <
// "text"; "parts" < "schema") and strings with the minimal escapes. Tests
// check the bytes against receipts.Canonicalize.

// exportWriter accumulates the export while remembering where each part's
// escaped text lies in it, so the candidate digest can be computed over the
// same escaped bytes without building the candidate.
type exportWriter struct {
	doc   *grammar.Document
	buf   []byte
	spans [][2]int // escaped text of each part within buf
	start int
}

// newExportWriter sizes the export for doc's parts, each part's candidate
// text being grow[i] bytes longer than its source text. The size is a
// capacity, not a promise (append still grows a short buffer), but it is
// exact enough that a large export is written without reallocation:
// escaping lengthens only '"', '\\' and control bytes (accepted text holds
// no control byte but '\n'), and tokens hold none of them.
func newExportWriter(doc *grammar.Document, grow []int) *exportWriter {
	n := 64
	for i, p := range doc.Parts {
		n += 64 + 6*(len(p.Key)+len(p.Kind)) + len(p.Text) + grow[i] + escapes(p.Text)
	}
	w := &exportWriter{doc: doc, buf: make([]byte, 0, n)}
	w.buf = append(w.buf, `{"parts":[`...)
	return w
}

// escapes counts the bytes that escaping text adds for '"', '\\' and '\n'.
func escapes(text []byte) int {
	return bytes.Count(text, []byte{'"'}) + bytes.Count(text, []byte{'\\'}) + bytes.Count(text, []byte{'\n'})
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

func (w *exportWriter) text(b []byte) { w.buf = appendEscaped(w.buf, b) }

func (w *exportWriter) endPart() {
	w.spans = append(w.spans, [2]int{w.start, len(w.buf)})
	w.buf = append(w.buf, `"}`...)
}

func (w *exportWriter) finish() []byte {
	w.buf = append(w.buf, `],"profile":"closed-diagnostic@1"}`...)
	return w.buf
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
func appendEscaped(dst, b []byte) []byte { return receipts.AppendStringBody(dst, b) }

// appendString appends b as a canonical JSON string, with quotes.
func appendString(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, b)
	return append(dst, '"')
}
