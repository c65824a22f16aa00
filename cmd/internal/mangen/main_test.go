package main

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/cmd/internal/cli"
	"github.com/privacycut/privacycut/cmd/internal/flaghelp"
	"github.com/privacycut/privacycut/cmd/internal/vaultdflags"
)

const docs = "../../../docs"

// generated returns each page as mangen would write it now.
func generated(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range pages {
		md, err := os.ReadFile(filepath.Join(docs, p.source))
		if err != nil {
			t.Fatal(err)
		}
		s, err := p.make(string(md))
		if err != nil {
			t.Fatalf("%s: %v", p.source, err)
		}
		out[p.file] = s
	}
	return out
}

// TestPagesInStep: docs/cut.1 and docs/vaultd.8 are what the command
// tables and their markdown sources make; a flag, a synopsis or a sentence
// changed without regenerating fails here.
func TestPagesInStep(t *testing.T) {
	for file, want := range generated(t) {
		got, err := os.ReadFile(filepath.Join(docs, file))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			gl, wl := strings.Split(string(got), "\n"), strings.Split(want, "\n")
			i := 0
			for i < len(gl) && i < len(wl) && gl[i] == wl[i] {
				i++
			}
			line := func(ls []string) string {
				if i < len(ls) {
					return ls[i]
				}
				return "(end of file)"
			}
			t.Errorf("docs/%s is not in step with its sources (run go run ./cmd/internal/mangen); first difference at line %d:\n have %s\n want %s",
				file, i+1, line(gl), line(wl))
		}
	}
}

// TestPagesCoverTables: every command of cut, and every flag of each and of
// vaultd, has its entry in the page, and the pages are ASCII (groff reads
// other bytes as Latin-1).
func TestPagesCoverTables(t *testing.T) {
	pages := generated(t)
	cmds, err := cli.Commands()
	if err != nil {
		t.Fatal(err)
	}
	cut := pages["cut.1"]
	for _, c := range cmds {
		if c.Group {
			continue
		}
		sec := `.SS "cut ` + c.Name + `"`
		i := strings.Index(cut, sec+"\n")
		if i < 0 {
			t.Errorf("cut.1: no section for cut %s", c.Name)
			continue
		}
		body := cut[i+len(sec):]
		if j := strings.Index(body, "\n.SS "); j >= 0 {
			body = body[:j]
		}
		for _, f := range c.Flags {
			if !strings.Contains(body, bold(strings.Fields(f.Spec())[0])) || !strings.Contains(body, escape(f.Help(), false)) {
				t.Errorf("cut.1: cut %s has no entry for %s", c.Name, f.Spec())
			}
		}
	}
	fs := flag.NewFlagSet("vaultd", flag.ContinueOnError)
	vaultdflags.Define(fs)
	for _, f := range flaghelp.List(fs) {
		if !strings.Contains(pages["vaultd.8"], bold(strings.Fields(f.Spec())[0])) {
			t.Errorf("vaultd.8: no entry for %s", f.Spec())
		}
	}
	for file, s := range pages {
		for i := 0; i < len(s); i++ {
			if s[i] >= 0x80 || (s[i] < ' ' && s[i] != '\n') {
				t.Fatalf("%s: byte %#x at offset %d", file, s[i], i)
			}
		}
	}
}

// TestPagesRender: groff formats both pages without a warning (-ww) at
// the widths of a narrow and a wide terminal. CI installs groff; elsewhere
// the test skips, naming it.
func TestPagesRender(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		if slices.Contains(strings.Split(os.Getenv("PRIVACYCUT_REQUIRE_TOOLS"), ","), "groff") {
			t.Fatal("groff not installed, and PRIVACYCUT_REQUIRE_TOOLS requires it")
		}
		t.Skip("groff not installed (CI installs groff-base): the pages are not rendered")
	}
	for _, file := range []string{"cut.1", "vaultd.8"} {
		for _, width := range []string{"60n", "80n", "120n"} {
			cmd := exec.Command(groff, "-man", "-ww", "-Tutf8", "-P-cbou", "-rLL="+width, filepath.Join(docs, file))
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil || errb.Len() != 0 {
				t.Errorf("groff %s at %s: %v\n%s", file, width, err, errb.String())
			}
			if !strings.Contains(out.String(), "NAME") || !strings.Contains(out.String(), "SYNOPSIS") {
				t.Errorf("groff %s: no NAME or SYNOPSIS in\n%s", file, out.String())
			}
		}
	}
}

// TestInlineMarkdown: the markdown the sources use becomes roff, with
// the characters roff would read as requests or escapes made literal.
func TestInlineMarkdown(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"**check** parses", `\fBcheck\fR parses`},
		{"`--vocab F` or `a-b`", `\fB\-\-vocab F\fR or \fBa\-b\fR`},
		{"see [GATEWAY.md](GATEWAY.md)", "see GATEWAY.md"},
		{`a \ b — c`, `a \e b \[u2014] c`},
		{"`x,y/z`", `\fBx,\:y/\:z\fR`},
	} {
		if got := inlineMarkdown(tc.in); got != tc.want {
			t.Errorf("inlineMarkdown(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	r := &roff{}
	r.markdown([]string{".starts with a dot", "", "'and a quote"})
	if got := r.String(); got != ".PP\n\\&.starts with a dot\n.PP\n\\&'and a quote\n" {
		t.Errorf("markdown: %q", got)
	}
}
