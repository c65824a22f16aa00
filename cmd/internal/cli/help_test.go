package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpEveryCommand: for every command and group of the table, -h,
// --help and help print on stdout with exit 0 and nothing on stderr —
// a leaf its usage line, summary and every flag with its default, a group
// each of its commands — and an unknown flag is exit 2 with nothing on
// stdout and no flag listing on stderr.
func TestHelpEveryCommand(t *testing.T) {
	cmds, err := Commands()
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := Run(t.Context(), args, Env{Stdout: &out, Stderr: &errb})
		return code, out.String(), errb.String()
	}
	for _, c := range cmds {
		words := strings.Fields(c.Name)
		for _, h := range [][]string{append(append([]string{}, words...), "-h"), append(append([]string{}, words...), "--help"),
			append([]string{"help"}, words...)} {
			code, out, errb := run(h...)
			if code != ExitOK || errb != "" {
				t.Errorf("%q: exit %d, stderr %q", h, code, errb)
				continue
			}
			if c.Group {
				if !strings.HasPrefix(out, "usage: cut "+c.Name+" <command>") {
					t.Errorf("%q: %q", h, out)
				}
				for _, l := range cmds {
					if strings.HasPrefix(l.Name, c.Name+" ") && !strings.Contains(out, "  cut "+l.Name+" ") {
						t.Errorf("%q: does not list %s", h, l.Name)
					}
				}
				continue
			}
			if !strings.HasPrefix(out, "usage: cut "+c.Name) || !strings.Contains(out, "\n\n"+c.Summary+"\n") {
				t.Errorf("%q: no usage line or summary: %q", h, out)
			}
			for _, f := range c.Flags {
				if !strings.Contains(out, "\n  "+f.Spec()+"\n") {
					t.Errorf("%q: no flag %s", h, f.Spec())
				}
				if f.Default != "" && !strings.Contains(strings.Join(strings.Fields(out), " "), "(default "+f.Default+")") {
					t.Errorf("%q: no default of %s", h, f.Spec())
				}
			}
			if strings.Contains(out, "Usage of") {
				t.Errorf("%q: Go's usage", h)
			}
		}
		if c.Group {
			continue
		}
		code, out, errb := run(append(append([]string{}, words...), "--no-such-flag")...)
		if code != ExitUsage || out != "" || !strings.Contains(errb, "flag provided but not defined: -no-such-flag") ||
			!strings.Contains(errb, "(cut "+c.Name+" -h for its flags)") || strings.Contains(errb, "Usage of") {
			t.Errorf("%s --no-such-flag: exit %d, stdout %q, stderr %q", c.Name, code, out, errb)
		}
	}
}
