package importer

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// span is one top-level JSON value of a stream: data[start:end].
type span struct{ start, end int }

// splitStream finds the top-level values of a govulncheck stream: JSON
// objects separated by white space. It only finds their bounds; each is then
// parsed strictly on its own. A value that is not an object, a value cut
// off by the end of the input and anything else between values are
// refused.
func splitStream(data []byte, format string) ([]span, *InputError) {
	var out []span
	fail := func(off int, reason string) ([]span, *InputError) {
		line, col := canon.LineCol(data, off)
		return nil, &InputError{Code: receipts.MalformedRecord, Format: format, Message: len(out) + 1,
			Line: line, Column: col, Offset: off, Reason: reason}
	}
	i := 0
	for {
		for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
			i++
		}
		if i == len(data) {
			return out, nil
		}
		if data[i] != '{' {
			return fail(i, "expected a JSON object (trailing data?)")
		}
		start, depth, inStr := i, 0, false
		for ; i < len(data); i++ {
			c := data[i]
			if inStr {
				switch c {
				case '\\':
					i++
				case '"':
					inStr = false
				}
				continue
			}
			switch c {
			case '"':
				inStr = true
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			if depth == 0 {
				break
			}
		}
		if i >= len(data) {
			return fail(start, "truncated message")
		}
		i++
		out = append(out, span{start, i})
	}
}

// parseStream parses the messages strictly, in one pass: they are copied
// into one JSON array, which canon.Parse reads, and refusals are mapped
// back to the stream. It returns the messages and where each starts in the
// array.
func (d *doc) parseStream(spans []span) ([]canon.Value, []int) {
	n := len(spans) + 1
	for _, sp := range spans {
		if sp.end-sp.start > MaxMessageBytes {
			d.msg = len(spans)
			d.errAt(sp.start, receipts.LimitExceeded, "", fmt.Sprintf("message larger than %d bytes", MaxMessageBytes))
			return nil, nil
		}
		n += sp.end - sp.start
	}
	arr := make([]byte, 0, n+1)
	starts := make([]int, len(spans))
	arr = append(arr, '[')
	for i, sp := range spans {
		if i > 0 {
			arr = append(arr, ',')
		}
		starts[i] = len(arr)
		arr = append(arr, d.data[sp.start:sp.end]...)
	}
	arr = append(arr, ']')
	// One level more than a message may nest: the array.
	tree, err := canon.Parse(arr, canon.Options{MaxBytes: int64(len(arr)), MaxDepth: canon.DefaultMaxDepth + 1})
	if err != nil {
		off, code, reason := 0, receipts.MalformedRecord, "not strict JSON"
		var se *canon.SyntaxError
		if errors.As(err, &se) {
			off, code, reason = se.Offset, receipts.Code(se.Class), se.Reason
		}
		i := sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1
		i = max(i, 0)
		d.msg = i + 1
		d.errAt(spans[i].start+min(max(off-starts[i], 0), spans[i].end-spans[i].start), code, "", reason)
		return nil, nil
	}
	return tree.Elems, starts
}

// The message kinds of govulncheck's JSON stream.
var messageKinds = map[string]bool{"config": true, "progress": true, "SBOM": true, "osv": true, "finding": true}

// finding levels: how far govulncheck followed a vulnerability.
type level uint8

const (
	levelNone     level = iota
	levelRequired       // the module is required (module-level finding)
	levelImported       // a vulnerable package is imported
	levelCalled         // a vulnerable symbol is called (or, in a binary, present)
)

type gvFrame struct {
	module, version, pkg, function, receiver, file string
}

type gvFinding struct {
	osv, fixed string
	trace      []gvFrame
}

func (f *gvFinding) level() level {
	switch {
	case f.trace[0].function != "":
		return levelCalled
	case f.trace[0].pkg != "":
		return levelImported
	}
	return levelRequired
}

// Govulncheck imports a govulncheck -json stream (the same as -format json):
// a sequence of JSON objects, each with exactly one member, config (first,
// once), progress, SBOM, osv or finding. See the package documentation for
// what each finding becomes.
func Govulncheck(stream []byte, v *grammar.Vocabulary, opt Options) (*Result, error) {
	const format = "govulncheck"
	if len(stream) > MaxInputBytes {
		return nil, &InputError{Code: receipts.LimitExceeded, Format: format, Line: 1, Column: 1,
			Reason: fmt.Sprintf("input larger than %d bytes", MaxInputBytes)}
	}
	spans, ierr := splitStream(stream, format)
	if ierr != nil {
		return nil, ierr
	}
	if len(spans) == 0 {
		return nil, &InputError{Code: receipts.MalformedRecord, Format: format, Line: 1, Column: 1, Reason: "empty stream (no config message)"}
	}
	d := &doc{data: stream, format: format}
	msgs, starts := d.parseStream(spans)
	if d.err != nil {
		return nil, d.err
	}
	var scanLevel string
	osvs := map[string]*osvEntry{}
	var findings []gvFinding
	for i, sp := range spans {
		d.msg = i + 1
		d.base = sp.start - starts[i]
		m := &msgs[i]
		switch {
		case len(m.Members) == 0:
			d.fail(m, "", "empty message")
		case len(m.Members) > 1:
			d.fail(m, "", "message with more than one kind")
		case !messageKinds[string(m.Members[0].Key)]:
			d.errAt(sp.start+m.Members[0].KeyOff, receipts.MalformedRecord, "", "unknown message kind")
		}
		if d.err != nil {
			return nil, d.err
		}
		kind := string(m.Members[0].Key)
		body := &m.Members[0].Value
		if body.Kind != canon.Object {
			d.fail(body, kind, "expected object")
			return nil, d.err
		}
		if (kind == "config") != (i == 0) {
			if i == 0 {
				d.fail(m, "", "the first message is not config")
			} else {
				d.fail(m, "", "config message after the first")
			}
			return nil, d.err
		}
		switch kind {
		case "config":
			scanLevel = d.config(body)
		case "osv":
			e := d.entry(body, root.field("osv"))
			if d.err == nil && osvs[e.id] == nil {
				osvs[e.id] = e
			}
		case "finding":
			if f, ok := d.finding(body); ok {
				findings = append(findings, f)
			}
		}
		if d.err != nil {
			return nil, d.err
		}
	}

	// The status of a vulnerability is decided by the furthest any of its
	// findings got, so every record about one id carries the same status.
	top := map[string]level{}
	for i := range findings {
		if l := findings[i].level(); l > top[findings[i].osv] {
			top[findings[i].osv] = l
		}
	}
	cands := make([]candidate, 0, len(findings))
	for i := range findings {
		f := &findings[i]
		vuln := f.trace[0]
		c := candidate{diag: f.osv, module: vuln.module, version: vuln.version, fixed: f.fixed,
			status: statusFor(scanLevel, top[f.osv])}
		if vuln.version == "" {
			c.noDependency = true
		}
		if e := osvs[f.osv]; e != nil {
			c.citations = e.citations
		}
		for _, fr := range f.trace[1:] {
			if v.HasModule(fr.module) {
				continue
			}
			// The first private frame: the code of the scanned module (or
			// of a dependency the vocabulary does not know) nearest the
			// vulnerable symbol.
			c.owners = append(c.owners, ownerSlot{grammar.CategoryModule, fr.module})
			if fr.pkg != "" {
				c.owners = append(c.owners, ownerSlot{grammar.CategoryPackage, fr.pkg})
			}
			if fn := funcName(fr.receiver, fr.function); fn != "" {
				c.owners = append(c.owners, ownerSlot{grammar.CategoryFunction, fn})
			}
			if fr.file != "" {
				c.owners = append(c.owners, ownerSlot{grammar.CategoryFile, fr.file})
				c.file = fr.file
			}
			break
		}
		cands = append(cands, c)
	}
	return assemble(format, stream, cands, v, opt, 0)
}

// statusFor maps the scan level and the furthest level a vulnerability's
// findings reached to an OpenVEX status, as govulncheck's own OpenVEX output
// does: affected when the findings reach the scan level, otherwise
// not_affected (the scan looked further and found nothing). Without a scan
// level (protocol v0.1.0, query mode) only a called symbol is conclusive;
// anything less is under_investigation.
func statusFor(scanLevel string, l level) string {
	var want level
	switch scanLevel {
	case "module":
		want = levelRequired
	case "package":
		want = levelImported
	case "symbol":
		want = levelCalled
	default:
		if l >= levelCalled {
			return "affected"
		}
		return "under_investigation"
	}
	if l >= want {
		return "affected"
	}
	return "not_affected"
}

// funcName writes a function with its receiver as Go does: (*T).F for a
// pointer receiver, T.F for a value receiver, with type parameters kept
// ((*List[T]).Push).
func funcName(receiver, function string) string {
	switch {
	case function == "":
		return ""
	case receiver == "":
		return function
	case strings.HasPrefix(receiver, "*"):
		return "(" + receiver + ")." + function
	}
	return receiver + "." + function
}

var scanLevels = map[string]bool{"": true, "module": true, "package": true, "symbol": true}
var scanModes = map[string]bool{"": true, "source": true, "binary": true, "query": true, "convert": true, "extract": true}

// config checks the config message and returns its scan level.
func (d *doc) config(c *canon.Value) string {
	p := root.field("config")
	pv := d.str(c, p, "protocol_version")
	if d.err == nil && !(strings.HasPrefix(pv, "v0.") || strings.HasPrefix(pv, "v1.")) {
		d.failAt(c, p, "protocol_version", "missing or unsupported protocol version")
	}
	for _, k := range []string{"scanner_name", "scanner_version", "db", "db_last_modified", "go_version"} {
		d.str(c, p, k)
	}
	lvl := d.str(c, p, "scan_level")
	if d.err == nil && !scanLevels[lvl] {
		d.failAt(member(c, "scan_level"), p, "scan_level", "unknown scan level")
	}
	mode := d.str(c, p, "scan_mode")
	if d.err == nil && !scanModes[mode] {
		d.failAt(member(c, "scan_mode"), p, "scan_mode", "unknown scan mode")
	}
	return lvl
}

// finding decodes a finding message.
func (d *doc) finding(f *canon.Value) (gvFinding, bool) {
	p := root.field("finding")
	out := gvFinding{osv: d.str(f, p, "osv"), fixed: d.str(f, p, "fixed_version")}
	if d.err == nil && out.osv == "" {
		d.failAt(f, p, "osv", "missing")
	}
	frames := d.objects(f, p, "trace")
	if d.err == nil && len(frames) == 0 {
		d.failAt(f, p, "trace", "missing or empty")
	}
	out.trace = make([]gvFrame, 0, len(frames))
	for i, fr := range frames {
		fp := p.field("trace").elem(i)
		g := gvFrame{
			module:   d.str(fr, fp, "module"),
			version:  d.str(fr, fp, "version"),
			pkg:      d.str(fr, fp, "package"),
			function: d.str(fr, fp, "function"),
			receiver: d.str(fr, fp, "receiver"),
		}
		if d.err == nil && g.module == "" {
			d.failAt(fr, fp, "module", "missing")
		}
		if pos := d.obj(fr, fp, "position"); pos != nil {
			pp := fp.field("position")
			g.file = d.str(pos, pp, "filename")
			d.number(pos, pp, "offset")
			d.number(pos, pp, "line")
			d.number(pos, pp, "column")
		}
		out.trace = append(out.trace, g)
	}
	return out, d.err == nil
}
