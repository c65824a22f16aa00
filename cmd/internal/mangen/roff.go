package main

import (
	"fmt"
	"regexp"
	"strings"
)

// roff builds a man(7) page.
type roff struct{ b strings.Builder }

func (r *roff) String() string { return r.b.String() }

// macro writes one request line: ".SH NAME". Arguments are escaped and
// quoted when they hold a space.
func (r *roff) macro(name string, args ...string) {
	r.b.WriteString("." + name)
	for _, a := range args {
		a = escape(a, false)
		if strings.ContainsAny(a, " \t") || a == "" {
			a = `"` + strings.ReplaceAll(a, `"`, `\(dq`) + `"`
		}
		r.b.WriteString(" " + a)
	}
	r.b.WriteByte('\n')
}

// line writes a text line that is already roff (escaped), guarding a
// leading control character.
func (r *roff) line(s string) {
	s = strings.TrimSpace(s)
	if s == "" {
		return
	}
	if s[0] == '.' || s[0] == '\'' {
		s = `\&` + s
	}
	r.b.WriteString(s + "\n")
}

// escape makes plain text roff: a backslash is \e, a character outside
// ASCII is \[uXXXX] (groff reads its input as Latin-1 otherwise), and in
// code a hyphen is \- (a minus sign, so that a flag copied from the page
// works) and a comma, slash or bar is followed by a break point.
func escape(s string, code bool) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == '\\':
			b.WriteString(`\e`)
		case c == '-' && code:
			b.WriteString(`\-`)
		case code && (c == ',' || c == '/' || c == '|'):
			// A break point after it: a JSON document or a path in
			// code is one word, wider than the page.
			b.WriteRune(c)
			b.WriteString(`\:`)
		case c > 127:
			fmt.Fprintf(&b, `\[u%04X]`, c)
		default:
			b.WriteRune(c)
		}
	}
	return b.String()
}

// bold is text in bold (a command, a flag, a literal).
func bold(s string) string { return `\fB` + escape(s, true) + `\fR` }

// italic is text in italics (a placeholder).
func italic(s string) string { return `\fI` + escape(s, false) + `\fR` }

var inline = regexp.MustCompile("\\*\\*([^*]+)\\*\\*|`([^`]+)`|\\[([^\\]]+)\\]\\(([^)]+)\\)")

// inlineMarkdown turns the inline markdown of docs/*.md (**bold**, `code`,
// [text](link)) into roff.
func inlineMarkdown(s string) string {
	var b strings.Builder
	last := 0
	for _, m := range inline.FindAllStringSubmatchIndex(s, -1) {
		b.WriteString(escape(s[last:m[0]], false))
		switch {
		case m[2] >= 0:
			b.WriteString(bold(s[m[2]:m[3]]))
		case m[4] >= 0:
			b.WriteString(bold(s[m[4]:m[5]]))
		default:
			b.WriteString(inlineMarkdown(s[m[6]:m[7]]))
		}
		last = m[1]
	}
	b.WriteString(escape(s[last:], false))
	return b.String()
}

// section is one "## NAME" section of a markdown manual.
type section struct {
	name string
	body []string
}

// sections splits a markdown manual into its title line (after "# ")
// and its "## " sections; text before the first section is under "".
func sections(md string) (title string, out []section) {
	cur := section{}
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "# ") && title == "":
			title = strings.TrimPrefix(l, "# ")
		case strings.HasPrefix(l, "## "):
			out = append(out, cur)
			cur = section{name: strings.TrimPrefix(l, "## ")}
		default:
			cur.body = append(cur.body, l)
		}
	}
	return title, append(out, cur)
}

// markdown writes blocks of markdown (paragraphs, "- " lists, fenced code,
// tables, "### " subsections) as roff.
func (r *roff) markdown(lines []string) {
	var para []string
	flush := func() {
		if len(para) > 0 {
			r.line(inlineMarkdown(strings.Join(para, " ")))
			para = nil
		}
	}
	header := true // the next table row is a header row
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		switch {
		case t == "":
			flush()
			header = true
		case strings.HasPrefix(t, "```"):
			flush()
			r.macro("PP")
			r.macro("nf")
			r.macro("RS", "4")
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				r.line(escape(lines[i], true))
			}
			r.macro("RE")
			r.macro("fi")
		case strings.HasPrefix(t, "### "):
			flush()
			r.macro("SS", strings.TrimPrefix(t, "### "))
		case strings.HasPrefix(t, "|"):
			flush()
			cells := strings.Split(strings.Trim(t, "|"), "|")
			if header || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") {
				header = false
				continue
			}
			r.macro("TP")
			r.line(`\fB` + inlineMarkdown(strings.TrimSpace(cells[0])) + `\fR`)
			var rest []string
			for _, c := range cells[1:] {
				rest = append(rest, strings.TrimSpace(c))
			}
			r.line(inlineMarkdown(strings.Join(rest, "; ")))
		case strings.HasPrefix(t, "- "):
			flush()
			para = []string{strings.TrimPrefix(t, "- ")}
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  ") && strings.TrimSpace(lines[i+1]) != "" &&
				!strings.HasPrefix(strings.TrimSpace(lines[i+1]), "- ") {
				i++
				para = append(para, strings.TrimSpace(lines[i]))
			}
			r.b.WriteString(".IP \\(bu 2\n")
			flush()
		default:
			if len(para) == 0 {
				r.macro("PP")
			}
			para = append(para, t)
		}
	}
	flush()
}
