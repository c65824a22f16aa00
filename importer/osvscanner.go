package importer

import (
	"fmt"
	"sort"
	"strings"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// OSVScanner imports an osv-scanner report (`osv-scanner --format json`).
// Each group of aliases of a Go package gives one finding; packages of other
// ecosystems are skipped and counted. See the package documentation for
// what is kept.
func OSVScanner(data []byte, v *grammar.Vocabulary, opt Options) (*Result, error) {
	const format = "osv-scanner"
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
	if m := member(top, "results"); m == nil || m.Kind != canon.Array {
		d.fail(top, "results", "missing or not an array")
		return nil, d.err
	}
	var cands []candidate
	skipped := 0
	for i, res := range d.objects(top, root, "results") {
		rp := root.field("results").elem(i)
		var file string
		inRepo := false // a path in the repository, which CODEOWNERS describes
		if src := d.obj(res, rp, "source"); src != nil {
			file = d.str(src, rp.field("source"), "path")
			switch d.str(src, rp.field("source"), "type") {
			case "", "lockfile", "sbom":
				inRepo = true
			}
		}
		for j, pkg := range d.objects(res, rp, "packages") {
			pp := rp.field("packages").elem(j)
			info := d.obj(pkg, pp, "package")
			if d.err == nil && info == nil {
				d.failAt(pkg, pp, "package", "missing")
			}
			if d.err != nil {
				return nil, d.err
			}
			ip := pp.field("package")
			name := d.str(info, ip, "name")
			version := d.str(info, ip, "version")
			eco := d.str(info, ip, "ecosystem")
			entries := map[string]*osvEntry{}
			for k, e := range d.objects(pkg, pp, "vulnerabilities") {
				en := d.entry(e, pp.field("vulnerabilities").elem(k))
				if d.err == nil && entries[en.id] == nil {
					entries[en.id] = en
				}
			}
			type group struct {
				ids    []string
				called int // -1 not analysed, 0 not called, 1 called
			}
			var groups []group
			for k, g := range d.objects(pkg, pp, "groups") {
				gp := pp.field("groups").elem(k)
				gr := group{ids: d.strings(g, gp, "ids"), called: -1}
				d.strings(g, gp, "aliases")
				d.str(g, gp, "max_severity")
				if an := d.obj(g, gp, "experimentalAnalysis"); an != nil {
					ap := gp.field("experimentalAnalysis")
					for mi := range an.Members {
						m := &an.Members[mi]
						if m.Value.Kind != canon.Object {
							d.failAt(&m.Value, ap, "", "expected object")
							break
						}
						if gr.called < 0 {
							gr.called = 0
						}
						if d.boolean(&m.Value, ap, "called") {
							gr.called = 1
						}
					}
				}
				if len(gr.ids) > 0 {
					groups = append(groups, gr)
				}
			}
			if d.err != nil {
				return nil, d.err
			}
			if eco != "Go" {
				if len(groups) > 0 {
					skipped++
				}
				continue
			}
			ver := goVersion(version)
			for _, g := range groups {
				c := candidate{module: name, version: ver, status: "affected"}
				if g.called == 0 {
					c.status = "not_affected"
				}
				if name == "" || ver == "" {
					c.noDependency = true
				}
				ids := preferGo(g.ids)
				c.diag = ids[0]
				for _, id := range ids {
					if v.HasDiagnostic(id) {
						c.diag = id
						break
					}
				}
				for _, id := range append([]string{c.diag}, ids...) {
					if e := entries[id]; e != nil {
						c.citations = append(c.citations, e.citations...)
					}
				}
				if e := entries[c.diag]; e != nil && ver != "" {
					c.fixed = fixedFor(e, name, ver)
				}
				if file != "" {
					// The source stays an owner value whatever its type
					// (an image reference is as private as a path), but
					// only a file in the repository is matched against
					// CODEOWNERS.
					c.owners = []ownerSlot{{grammar.CategoryFile, file}}
					if inRepo {
						c.file = file
					}
				}
				cands = append(cands, c)
			}
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	return assemble(format, data, cands, v, opt, skipped)
}

// goVersion writes an osv-scanner Go version as a module version: "1.2.3"
// and "go1.21.0" become "v1.2.3" and "v1.21.0".
func goVersion(s string) string {
	switch {
	case s == "":
		return ""
	case strings.HasPrefix(s, "v"):
		return s
	case strings.HasPrefix(s, "go"):
		return "v" + s[2:]
	}
	return "v" + s
}

// preferGo orders ids: GO- ids first, then the rest, each sorted.
func preferGo(ids []string) []string {
	out := append([]string(nil), ids...)
	sort.SliceStable(out, func(i, j int) bool {
		gi, gj := strings.HasPrefix(out[i], "GO-"), strings.HasPrefix(out[j], "GO-")
		if gi != gj {
			return gi
		}
		return out[i] < out[j]
	})
	return out
}

// fixedFor returns the fixed version of the SEMVER range of entry e that
// holds version ver of module, written with "v", or "" when no range holds
// it or none has a fix.
func fixedFor(e *osvEntry, module, ver string) string {
	cur, ok := parseSemver(strings.TrimPrefix(ver, "v"))
	if !ok {
		return ""
	}
	for _, a := range e.affected {
		if a.module != module || a.ecosystem != "Go" {
			continue
		}
		for _, evs := range a.ranges {
			in := false
			for _, ev := range evs {
				switch {
				case ev.introduced != "":
					if ev.introduced == "0" {
						in = true
					} else if iv, ok := parseSemver(strings.TrimPrefix(ev.introduced, "v")); ok && compareSemver(cur, iv) >= 0 {
						in = true
					} else {
						in = false
					}
				case ev.fixed != "" && in:
					fv, ok := parseSemver(strings.TrimPrefix(ev.fixed, "v"))
					if ok && compareSemver(cur, fv) < 0 {
						return goVersion(ev.fixed)
					}
					in = false
				case ev.lastAffected != "" && in:
					lv, ok := parseSemver(strings.TrimPrefix(ev.lastAffected, "v"))
					if ok && compareSemver(cur, lv) <= 0 {
						return "" // affected with no fix in this range
					}
					in = false
				}
			}
		}
	}
	return ""
}

// semver is a parsed Semantic Versioning 2.0.0 version without "v".
type semver struct {
	major, minor, patch string // decimal, no leading zeros
	pre                 []string
}

func parseSemver(s string) (semver, bool) {
	var v semver
	if i := strings.IndexByte(s, '+'); i >= 0 {
		s = s[:i]
	}
	core, pre, hasPre := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return v, false
	}
	for _, p := range parts {
		if !numeric(p) {
			return v, false
		}
	}
	v.major, v.minor, v.patch = parts[0], parts[1], parts[2]
	if hasPre {
		if pre == "" {
			return v, false
		}
		v.pre = strings.Split(pre, ".")
		for _, id := range v.pre {
			if id == "" {
				return v, false
			}
		}
	}
	return v, true
}

func numeric(s string) bool {
	if s == "" || (len(s) > 1 && s[0] == '0') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func compareNum(a, b string) int {
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

func compareSemver(a, b semver) int {
	for _, c := range [][2]string{{a.major, b.major}, {a.minor, b.minor}, {a.patch, b.patch}} {
		if r := compareNum(c[0], c[1]); r != 0 {
			return r
		}
	}
	switch {
	case len(a.pre) == 0 && len(b.pre) == 0:
		return 0
	case len(a.pre) == 0:
		return 1
	case len(b.pre) == 0:
		return -1
	}
	for i := 0; i < len(a.pre) && i < len(b.pre); i++ {
		x, y := a.pre[i], b.pre[i]
		nx, ny := numeric(x), numeric(y)
		var r int
		switch {
		case nx && ny:
			r = compareNum(x, y)
		case nx:
			r = -1
		case ny:
			r = 1
		default:
			r = strings.Compare(x, y)
		}
		if r != 0 {
			return r
		}
	}
	switch {
	case len(a.pre) < len(b.pre):
		return -1
	case len(a.pre) > len(b.pre):
		return 1
	}
	return 0
}
