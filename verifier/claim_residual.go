package verifier

import (
	"bytes"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// isBoundary reports whether c is a byte that every span boundary of a
// recognized record touches: SP and LF between productions, the "@" of a
// dependency, the "=" of "fixed=" and of an owner, and the owner quotes.
func isBoundary(c byte) bool {
	return c == ' ' || c == '@' || c == '=' || c == '"' || c == '\n'
}

// no-residual: no owner value, as written inside quotes in the source,
// occurs in an export text except wholly inside one public item, one
// literal or one well-formed token.
//
// A value that straddles two spans of a recognized record contains a
// boundary byte, so values without one can only occur wholly inside a span:
// they are searched only in the regions that are not known text (slots
// without a well-formed token, unrecognized remainders, export parts with no
// source part). Values with a boundary byte are searched in every export text
// and each occurrence is checked against the spans of its record. Both
// searches are one Aho–Corasick pass each.
func (c *check) noResidual(res *outcome) {
	if !c.w.walked {
		return
	}
	vt, bad := c.w.values, c.w.bad
	// The distinct values as written, whatever their categories.
	values := newByteTable()
	defer values.release()
	// One array holds both lists: straddling values from the front, plain
	// ones from the back. A value written with escapes is searched both as
	// written and as it reads (its decoded form), which is the owner's value.
	var decoded [][]byte // the decoded forms; they hold a '"' or a '\'
	all := make([][]byte, 2*vt.len())
	ns, np := 0, len(all)
	add := func(v []byte) {
		h := values.hash(v)
		n, slot := values.find(0, v, h)
		if n >= 0 {
			return
		}
		values.insert(0, v, h, slot)
		if bytes.ContainsFunc(v, func(r rune) bool { return r < 0x80 && isBoundary(byte(r)) }) {
			all[ns] = v
			ns++
		} else {
			np--
			all[np] = v
		}
	}
	for id := range vt.len() {
		v := vt.bytes(id)
		add(v)
		if bytes.IndexByte(v, '\\') >= 0 {
			d := unescapeValue(nil, v)
			decoded = append(decoded, d)
			add(d)
		}
	}
	straddling, plain := all[:ns], all[np:]
	// Every form, for the wire body (the matchers sort their patterns).
	forms := append(append([][]byte{}, straddling...), plain...)
	res.facts = "values=" + itoa(values.len()) + " searched_straddling=" + itoa(len(straddling)) + " unknown_regions=" + itoa(len(bad))
	if c.exp != nil {
		c.exportResidual(res, straddling, plain, decoded)
	}
	c.wireResidual(res, forms)
}

// exportResidual searches the export: the values holding a boundary byte
// in every text, the others in the regions of no known text, the decoded
// forms in the export's JSON.
func (c *check) exportResidual(res *outcome, straddling, plain, decoded [][]byte) {
	bad := c.w.bad
	found := 0
	first := ""
	report := func(p int, text []byte, s, e int) {
		found++
		if first == "" {
			line := 1 + bytes.Count(text[:s], []byte{'\n'})
			recStart := bytes.LastIndexByte(text[:s], '\n') + 1
			first = where(p, line, recStart, s, e-s)
		}
	}

	if len(straddling) > 0 {
		for _, r := range c.scanStraddling(straddling, scanChunk) {
			if r.found > 0 {
				text := c.exp[r.part].text
				report(r.part, text, r.s, r.e)
				found += r.found - 1
			}
		}
	}
	if len(bad) > 0 && len(plain) > 0 {
		m := newMatcher(plain)
		defer m.release()
		for _, r := range bad {
			text := c.exp[r.part].text
			m.scan(text, r.start, r.end, func(s, e int) bool {
				report(r.part, text, s, e)
				return true
			})
		}
	}
	if found > 0 {
		res.fail("%d owner value occurrence(s) outside public text and tokens; first at %s", found, first)
	}
	// A decoded value holds a quote or a backslash, which no public item,
	// literal or token has: it may read in the export's JSON only across
	// the document's structure, and any occurrence there is one.
	if len(decoded) > 0 {
		m := newMatcher(decoded)
		defer m.release()
		n := 0
		m.scan(c.req.Export, 0, len(c.req.Export), func(s, e int) bool { n++; return true })
		if n > 0 {
			res.fail("%d owner value occurrence(s) in the export's JSON outside its texts", n)
		}
	}
}

// wireResidual searches the wire body's strings, decoded, for every form
// of every value, outside the export's texts, which exportResidual
// searched: a body that is the one rendered from the export and the plan
// has, beside them and its fixed names, only the model, the instruction and
// S′; any other body is searched whole (all its strings, keys included, or
// its bytes when it is not strict JSON). The instruction is free text:
// there is no public item for a value to sit in, and any occurrence, even
// inside a longer word, fails.
func (c *check) wireResidual(res *outcome, forms [][]byte) {
	w := &c.wire
	given := c.req.Wire
	rendered := w.body != nil && w.diff < 0
	if len(forms) == 0 || !rendered && (len(given) == 0 || w.profile != receipts.WireOpenAIChat && w.profile != receipts.WireAnthropicMessages && bytes.Equal(given, c.req.Export)) {
		return // no body but the export, searched already
	}
	scanned := len(given)
	if rendered {
		// The rendered body's own strings (model, instruction, S′) are a
		// few hundred bytes against hundreds of values: they are indexed
		// once (joined by 0xFF, which no UTF-8 string holds, so no match
		// spans two) and each form is looked up in the index. Only a body
		// that holds one is searched with the automaton below, which
		// counts and places the occurrences.
		text := append([]byte(c.plan.Wire.Model), 0xff)
		text = append(append(text, c.plan.Wire.Instruction...), 0xff)
		eachString(w.stripped, func(s []byte) { text = append(append(text, s...), 0xff) })
		idx, kept := wireStringsIndex(text)
		if !slices.ContainsFunc(forms, func(f []byte) bool { return len(f) > 0 && idx.contains(f) }) {
			if !kept {
				keepWireStrings(text, idx)
			}
			return
		}
		// The complete table pays off only over text much longer than it:
		// its size is bounded by the bytes to scan.
		scanned = len(text)
	}
	m := newMatcherLimit(forms, min(denseMax, 16*scanned))
	defer m.release()
	found := 0
	first := ""
	search := func(where string, b []byte) {
		m.scan(b, 0, len(b), func(s, e int) bool {
			if found == 0 {
				first = where
			}
			found++
			return true
		})
	}
	switch {
	case rendered:
		search("model", []byte(c.plan.Wire.Model))
		search("instruction", []byte(c.plan.Wire.Instruction))
		eachString(w.stripped, func(s []byte) { search("output schema", s) })
	default:
		if tree, err := canon.Parse(given, canon.Options{Buffer: c.buffer}); err == nil {
			eachString(tree, func(s []byte) { search("wire body", s) })
		} else {
			search("wire body", given)
		}
	}
	if found > 0 {
		res.fail("%d owner value occurrence(s) in the wire body outside the export's texts; first in the %s", found, first)
	}
}

// eachString calls fn with every string of v, member keys included, in
// document order.
func eachString(v *canon.Value, fn func([]byte)) {
	switch v.Kind {
	case canon.String:
		fn(v.Str)
	case canon.Array:
		for i := range v.Elems {
			eachString(&v.Elems[i], fn)
		}
	case canon.Object:
		for i := range v.Members {
			fn(v.Members[i].Key)
			eachString(&v.Members[i].Value, fn)
		}
	}
}

// scanChunk is the size of the pieces of export text that the search for
// straddling values splits the texts into, to share them among CPUs.
const scanChunk = 1 << 20

// scanUnit is one piece of the search: the occurrences that end in
// (minEnd, to] of part's text, found by scanning from from.
type scanUnit struct {
	part, from, to, minEnd int
}

// scanResult counts the occurrences one unit found outside known spans and
// locates the first, in scan order.
type scanResult struct {
	part, found, s, e int
}

// scanStraddling searches every export text for the values holding a
// boundary byte and checks each occurrence against the spans of its
// record. The texts are cut into units of chunk bytes searched on every
// CPU; the results are in text order.
func (c *check) scanStraddling(values [][]byte, chunk int) []scanResult {
	m := newMatcher(values)
	defer m.release()
	longest := 0
	for _, v := range values {
		longest = max(longest, len(v))
	}
	var units []scanUnit
	for p, part := range c.exp {
		for a := 0; a < len(part.text); a += chunk {
			// An occurrence ending after a starts after a-longest.
			units = append(units, scanUnit{p, max(0, a-longest+1), min(len(part.text), a+chunk), a})
		}
	}
	results := make([]scanResult, len(units))
	var next atomic.Int64
	work := func() {
		rec := newRecognizer(c.voc, true)
		var spans []span
		for {
			u := int(next.Add(1) - 1)
			if u >= len(units) {
				return
			}
			c.scanUnit(m, rec, &spans, units[u], &results[u])
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(units), 4)
	var tasks []*task
	for range workers - 1 {
		tasks = append(tasks, c.start(work))
	}
	work()
	for _, t := range tasks {
		t.wait()
	}
	return results
}

// scanUnit searches one unit. An occurrence in an export part with no
// source part, or not wholly inside one known span of its record, counts.
func (c *check) scanUnit(m *matcher, rec *recognizer, spans *[]span, u scanUnit, r *scanResult) {
	text := c.exp[u.part].text
	*r = scanResult{part: u.part}
	paired := u.part < len(c.src.Parts)
	cachedStart := -1
	m.scan(text, u.from, u.to, func(s, e int) bool {
		if e <= u.minEnd {
			return true
		}
		if paired {
			rs := bytes.LastIndexByte(text[:s], '\n') + 1
			if rs != cachedStart {
				*spans, _, _ = rec.record(text, rs, (*spans)[:0])
				cachedStart = rs
			}
			if insideKnownSpan(text, *spans, s, e) {
				return true
			}
		}
		if r.found == 0 {
			r.s, r.e = s, e
		}
		r.found++
		return true
	})
}

// insideKnownSpan reports whether [s, e) lies wholly inside one recognized
// span that is public text, a literal or a well-formed token.
func insideKnownSpan(text []byte, spans []span, s, e int) bool {
	k := sort.Search(len(spans), func(i int) bool { return spans[i].end > s })
	if k == len(spans) {
		return false
	}
	sp := spans[k]
	if sp.start > s || e > sp.end {
		return false
	}
	if sp.kind == spanValue {
		return tokenOfCategory(text[sp.start:sp.end], int(sp.cat))
	}
	return true
}

// The index of the last rendered body's own strings that held none of its
// verification's owner values, kept for the next verification of the same
// strings: a gateway route's model, instruction and output schema are the
// same in every request, and building their automaton costs about a tenth
// of a one-finding report's verification. The key is the exact bytes, compared
// in full; an index is read only once built. Strings that held a value are
// never kept, so nothing kept outlives the request it was found in.
var lastWireStrings struct {
	sync.Mutex
	text []byte
	idx  *substrings
}

// wireStringsBuilt counts the indexes built, for the tests.
var wireStringsBuilt atomic.Int64

// wireStringsIndex returns the index of text: the kept one when text is
// its bytes (kept is then true), else a new one.
func wireStringsIndex(text []byte) (idx *substrings, kept bool) {
	lastWireStrings.Lock()
	if lastWireStrings.idx != nil && bytes.Equal(lastWireStrings.text, text) {
		idx = lastWireStrings.idx
	}
	lastWireStrings.Unlock()
	if idx != nil {
		return idx, true
	}
	wireStringsBuilt.Add(1)
	return newSubstrings(text), false
}

// keepWireStrings keeps idx, the index of text, for the next verification;
// text must not change after.
func keepWireStrings(text []byte, idx *substrings) {
	lastWireStrings.Lock()
	lastWireStrings.text, lastWireStrings.idx = text, idx
	lastWireStrings.Unlock()
}
