package importer

import (
	"bytes"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/privacycut/privacycut/grammar"
)

// MaxCodeOwnersBytes caps a CODEOWNERS file (1 MiB).
const MaxCodeOwnersBytes = 1 << 20

// maxDoubleStars caps "**" segments in one pattern, which bounds matching.
const maxDoubleStars = 8

// CodeOwners is a parsed CODEOWNERS file in GitHub's syntax. It is immutable
// and safe for concurrent use.
//
// Each non-blank line that is not a comment is a pattern followed by zero or
// more owners; a "#" that begins a field starts a comment. Patterns follow
// gitignore rules as GitHub applies them to CODEOWNERS: a pattern with a "/"
// at its start or in its middle is anchored at the repository root, any
// other pattern matches at any depth; a trailing "/" matches a directory
// and everything below it; a name also matches everything below a directory
// of that name, except that a final "*" segment ("docs/*") matches only the
// files directly in it; "*" and "?" do not cross "/"; "**" matches any
// number of directories. The last matching line decides, and a line without
// owners leaves the path without owners. Matching is case-sensitive.
//
// GitHub's unsupported syntax is refused, not guessed at: "!" negation,
// "[ ]" character ranges and "\" escapes (GitLab's "[Section]" headers are
// among them). An owner is "@user" (owner.person), "@org/team" (owner.team)
// or an e-mail address (owner.person).
type CodeOwners struct {
	rules []coRule
}

type coRule struct {
	segs    []string // pattern segments; "**" matches any number of segments
	dirOnly bool     // trailing "/": only what is below a matched directory
	exact   bool     // final "*" segment: no descendants
	owners  []ownerSlot
}

// ParseCodeOwners parses a CODEOWNERS file. Errors name the line, never its
// text.
func ParseCodeOwners(data []byte) (*CodeOwners, error) {
	if len(data) > MaxCodeOwnersBytes {
		return nil, &CodeOwnersError{Reason: fmt.Sprintf("larger than %d bytes", MaxCodeOwnersBytes)}
	}
	if !utf8.Valid(data) {
		for i, line := range bytes.Split(data, []byte("\n")) {
			if !utf8.Valid(line) {
				return nil, &CodeOwnersError{Line: i + 1, Reason: "invalid UTF-8"}
			}
		}
	}
	co := &CodeOwners{}
	for i, raw := range strings.Split(string(data), "\n") {
		n := i + 1
		fields := strings.Fields(strings.TrimSuffix(raw, "\r"))
		for k, f := range fields {
			if strings.HasPrefix(f, "#") {
				fields = fields[:k]
				break
			}
		}
		if len(fields) == 0 {
			continue
		}
		r, reason := compilePattern(fields[0])
		if reason != "" {
			return nil, &CodeOwnersError{Line: n, Reason: reason}
		}
		for k, o := range fields[1:] {
			slot, ok := parseOwner(o)
			if !ok {
				return nil, &CodeOwnersError{Line: n, Reason: fmt.Sprintf("owner %d is not @user, @org/team or an e-mail address", k+1)}
			}
			r.owners = append(r.owners, slot)
		}
		co.rules = append(co.rules, r)
	}
	return co, nil
}

func compilePattern(p string) (coRule, string) {
	var r coRule
	switch {
	case strings.HasPrefix(p, "!"):
		return r, "negated patterns are not supported"
	case strings.ContainsAny(p, "[]"):
		return r, "character ranges are not supported"
	case strings.Contains(p, "\\"):
		return r, "escapes are not supported"
	}
	if strings.HasSuffix(p, "/") {
		r.dirOnly = true
		p = strings.TrimRight(p, "/")
	}
	anchored := strings.Contains(p, "/")
	p = strings.TrimLeft(p, "/")
	if p == "" {
		if r.dirOnly {
			// "/" alone: the root directory, that is everything.
			r.segs, r.dirOnly = []string{"**"}, false
			return r, ""
		}
		return r, "empty pattern"
	}
	for _, s := range strings.Split(p, "/") {
		if s == "" {
			return r, "empty path segment"
		}
		r.segs = append(r.segs, s)
	}
	if !anchored {
		r.segs = append([]string{"**"}, r.segs...)
	}
	stars := 0
	for _, s := range r.segs {
		if s == "**" {
			stars++
		}
	}
	if stars > maxDoubleStars {
		return r, "too many ** segments"
	}
	r.exact = r.segs[len(r.segs)-1] == "*"
	return r, ""
}

func parseOwner(o string) (ownerSlot, bool) {
	if strings.HasPrefix(o, "@") {
		name := o[1:]
		org, team, isTeam := strings.Cut(name, "/")
		switch {
		case name == "" || strings.Contains(name, "@"):
			return ownerSlot{}, false
		case isTeam:
			if org == "" || team == "" || strings.Contains(team, "/") {
				return ownerSlot{}, false
			}
			return ownerSlot{cat: grammar.CategoryTeam, val: o}, true
		}
		return ownerSlot{cat: grammar.CategoryPerson, val: o}, true
	}
	local, domain, ok := strings.Cut(o, "@")
	if !ok || local == "" || domain == "" || strings.Contains(domain, "@") || strings.Contains(o, "/") {
		return ownerSlot{}, false
	}
	return ownerSlot{cat: grammar.CategoryPerson, val: o}, true
}

// MaxMatchPath is the longest path Match looks at (4 KiB, PATH_MAX); a
// longer one has no owners.
const MaxMatchPath = 4096

// Match returns the owners of a repository-relative, slash-separated path:
// those of the last matching line, in the order written.
func (c *CodeOwners) Match(p string) []ownerSlot {
	if len(p) > MaxMatchPath {
		return nil
	}
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		return nil
	}
	segs := strings.Split(p, "/")
	var buf []bool
	for i := len(c.rules) - 1; i >= 0; i-- {
		r := &c.rules[i]
		need := (len(r.segs) + 1) * (len(segs) + 1)
		if cap(buf) < need {
			buf = make([]bool, need)
		}
		if r.match(segs, buf[:need]) {
			return r.owners
		}
	}
	return nil
}

// Owners returns the owners of a path as category and value pairs (for
// tests and tools): category "team" or "person".
func (c *CodeOwners) Owners(p string) [][2]string {
	var out [][2]string
	for _, o := range c.Match(p) {
		out = append(out, [2]string{o.cat.String(), o.val})
	}
	return out
}

// match reports whether the rule matches the path segments: the pattern
// matches the whole path, or (unless exact) a directory above it; a
// dir-only pattern matches directories only. reach, of (len(r.segs)+1) ×
// (len(segs)+1) cells, records which pattern prefixes consume which path
// prefixes; the work is O(len(r.segs) × len(segs)).
func (r *coRule) match(segs []string, reach []bool) bool {
	np, ns := len(r.segs), len(segs)
	clear(reach)
	at := func(i, j int) *bool { return &reach[i*(ns+1)+j] }
	*at(0, 0) = true
	for i := 0; i < np; i++ {
		s := r.segs[i]
		if s == "**" {
			// Zero or more segments (a trailing "**" at least one): every
			// path prefix from the shortest reached on.
			first := -1
			for j := 0; j <= ns; j++ {
				if *at(i, j) {
					first = j
					break
				}
			}
			if first < 0 {
				return false
			}
			if i == np-1 {
				first++
			}
			for k := first; k <= ns; k++ {
				*at(i+1, k) = true
			}
			continue
		}
		any := false
		for j := 0; j < ns; j++ {
			if *at(i, j) && segMatch(s, segs[j]) {
				*at(i+1, j+1) = true
				any = true
			}
		}
		if !any {
			return false
		}
	}
	for j := 0; j <= ns; j++ {
		if !*at(np, j) {
			continue
		}
		rest := ns - j
		switch {
		case rest == 0 && !r.dirOnly:
			return true
		case rest > 0 && !r.exact:
			return true
		}
	}
	return false
}

// segMatch matches one path segment against a pattern segment with "*" (any
// run of characters) and "?" (one character); "**" inside a segment is "*".
func segMatch(pat, s string) bool {
	ok, err := path.Match(pat, s)
	return err == nil && ok
}
