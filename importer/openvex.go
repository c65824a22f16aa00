package importer

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// vexStatuses are the statuses of the OpenVEX specification.
var vexStatuses = map[string]bool{"affected": true, "not_affected": true, "fixed": true, "under_investigation": true}

// OpenVEX imports an OpenVEX document, as `govulncheck -format openvex`
// writes it. Each statement gives one finding per Go package URL among its
// products' subcomponents; see the package documentation for what is kept.
func OpenVEX(data []byte, v *grammar.Vocabulary, opt Options) (*Result, error) {
	const format = "openvex"
	if len(data) > MaxInputBytes {
		return nil, &InputError{Code: receipts.LimitExceeded, Format: format, Line: 1, Column: 1,
			Reason: fmt.Sprintf("input larger than %d bytes", MaxInputBytes)}
	}
	d := &doc{data: data, format: format}
	top := d.parse(0, len(data))
	if d.err != nil {
		return nil, d.err
	}
	if top.Kind != canon.Object {
		d.fail(top, "", "expected object")
		return nil, d.err
	}
	ctx := d.str(top, root, "@context")
	if d.err == nil && !strings.HasPrefix(ctx, "https://openvex.dev/ns") {
		d.fail(top, "@context", "not an OpenVEX document")
	}
	if m := member(top, "statements"); d.err == nil && (m == nil || m.Kind != canon.Array) {
		d.fail(top, "statements", "missing or not an array")
	}
	stmts := d.objects(top, root, "statements")
	var cands []candidate
	for i, s := range stmts {
		p := root.field("statements").elem(i)
		vuln := d.obj(s, p, "vulnerability")
		if d.err == nil && vuln == nil {
			d.failAt(s, p, "vulnerability", "missing")
		}
		if d.err != nil {
			return nil, d.err
		}
		vp := p.field("vulnerability")
		name := d.str(vuln, vp, "name")
		id := d.str(vuln, vp, "@id")
		d.strings(vuln, vp, "aliases")
		if d.err == nil && name == "" {
			d.failAt(vuln, vp, "name", "missing")
		}
		status := d.str(s, p, "status")
		if d.err == nil && !vexStatuses[status] {
			d.failAt(s, p, "status", "not an OpenVEX status")
		}
		for _, k := range []string{"justification", "impact_statement", "action_statement", "status_notes", "timestamp", "last_updated"} {
			d.str(s, p, k)
		}
		var cites []string
		if id != "" {
			cites = append(cites, id)
		}
		// Each dependency is owned by the product it is a subcomponent of,
		// not by every product of the statement.
		type dep struct {
			module, version string
			owners          []ownerSlot
		}
		var deps []dep
		for j, prod := range d.objects(s, p, "products") {
			pp := p.field("products").elem(j)
			pid := d.str(prod, pp, "@id")
			var owners []ownerSlot
			if mod, _, ok := goPURL(pid); ok && !v.HasModule(mod) {
				owners = []ownerSlot{{grammar.CategoryModule, mod}}
			} else if !ok && isGoPURL(pid) {
				d.failAt(prod, pp, "@id", "not a valid Go package URL")
			}
			for k, sub := range d.objects(prod, pp, "subcomponents") {
				sp := pp.field("subcomponents").elem(k)
				sid := d.str(sub, sp, "@id")
				if mod, ver, ok := goPURL(sid); ok {
					deps = append(deps, dep{mod, ver, owners})
				} else if isGoPURL(sid) {
					d.failAt(sub, sp, "@id", "not a valid Go package URL")
				}
			}
		}
		if d.err != nil {
			return nil, d.err
		}
		if len(deps) == 0 {
			cands = append(cands, candidate{diag: name, status: status, citations: cites, noDependency: true})
			continue
		}
		for _, dp := range deps {
			cands = append(cands, candidate{diag: name, module: dp.module, version: dp.version, status: status,
				citations: cites, owners: dp.owners})
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return assemble(format, data, cands, v, opt, 0)
}

// isGoPURL reports whether s claims to be a Go package URL: one goPURL
// cannot parse is malformed, not another ecosystem's.
func isGoPURL(s string) bool { return strings.HasPrefix(s, "pkg:golang/") }

// goPURL parses a Go package URL, pkg:golang/<module>@<version>, with the
// module path percent-encoded as a whole (govulncheck's form) or written
// with its slashes (the purl specification's form). Qualifiers and subpath
// are ignored.
func goPURL(s string) (module, version string, ok bool) {
	rest, found := strings.CutPrefix(s, "pkg:golang/")
	if !found {
		return "", "", false
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	at := strings.LastIndexByte(rest, '@')
	if at <= 0 || at == len(rest)-1 {
		return "", "", false
	}
	m, err1 := url.PathUnescape(rest[:at])
	ver, err2 := url.PathUnescape(rest[at+1:])
	if err1 != nil || err2 != nil || m == "" || ver == "" {
		return "", "", false
	}
	return m, ver, true
}
