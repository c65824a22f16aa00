package importer

import (
	"fmt"
	"net/url"
	"strings"

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
	root := d.parse(0, len(data))
	if d.err != nil {
		return nil, d.err
	}
	if root.Kind != receipts.Object {
		d.fail(root, "", "expected object")
		return nil, d.err
	}
	ctx := d.str(root, "@context", "@context")
	if d.err == nil && !strings.HasPrefix(ctx, "https://openvex.dev/ns") {
		d.fail(root, "@context", "not an OpenVEX document")
	}
	if m := member(root, "statements"); d.err == nil && (m == nil || m.Kind != receipts.Array) {
		d.fail(root, "statements", "missing or not an array")
	}
	stmts := d.objects(root, "statements", "statements")
	var cands []candidate
	for i, s := range stmts {
		p := fmt.Sprintf("statements[%d]", i)
		vuln := d.obj(s, "vulnerability", p+".vulnerability")
		if d.err == nil && vuln == nil {
			d.fail(s, p+".vulnerability", "missing")
		}
		if d.err != nil {
			return nil, d.err
		}
		name := d.str(vuln, "name", p+".vulnerability.name")
		id := d.str(vuln, "@id", p+".vulnerability.@id")
		d.strings(vuln, "aliases", p+".vulnerability.aliases")
		if d.err == nil && name == "" {
			d.fail(vuln, p+".vulnerability.name", "missing")
		}
		status := d.str(s, "status", p+".status")
		if d.err == nil && !vexStatuses[status] {
			d.fail(s, p+".status", "not an OpenVEX status")
		}
		for _, k := range []string{"justification", "impact_statement", "action_statement", "status_notes", "timestamp", "last_updated"} {
			d.str(s, k, p+"."+k)
		}
		var cites []string
		if id != "" {
			cites = append(cites, id)
		}
		var deps [][2]string
		var productOwners []ownerSlot
		for j, prod := range d.objects(s, "products", p+".products") {
			pp := fmt.Sprintf("%s.products[%d]", p, j)
			pid := d.str(prod, "@id", pp+".@id")
			if mod, _, ok := goPURL(pid); ok && !v.HasModule(mod) {
				productOwners = append(productOwners, ownerSlot{grammar.CategoryModule, mod})
			}
			for k, sub := range d.objects(prod, "subcomponents", pp+".subcomponents") {
				sid := d.str(sub, "@id", fmt.Sprintf("%s.subcomponents[%d].@id", pp, k))
				if mod, ver, ok := goPURL(sid); ok {
					deps = append(deps, [2]string{mod, ver})
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
		for _, dep := range deps {
			cands = append(cands, candidate{diag: name, module: dep[0], version: dep[1], status: status,
				citations: cites, owners: productOwners})
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return assemble(format, data, cands, v, opt, 0)
}

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
