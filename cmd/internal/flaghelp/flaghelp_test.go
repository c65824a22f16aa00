package flaghelp

import (
	"flag"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestList(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("vocab", "", "vocabulary `file`")
	fs.String("mode", "irreversible", "irreversible or reversible")
	fs.Bool("json", false, "print one JSON document")
	fs.Duration("expires", 24*time.Hour, "plan lifetime")
	fs.Int("max", 0, "a bound")
	fs.String("o", "", "write to `file` (default stdout)")
	fs.String("vault", "", "socket `path` (default $PRIVACYCUT_VAULT)")
	got := List(fs)
	want := []Flag{
		{Name: "expires", Arg: "duration", Usage: "plan lifetime", Default: "24h0m0s"},
		{Name: "json", Usage: "print one JSON document"},
		{Name: "max", Arg: "int", Usage: "a bound"},
		{Name: "mode", Arg: "string", Usage: "irreversible or reversible", Default: `"irreversible"`},
		{Name: "o", Arg: "file", Usage: "write to file (default stdout)"},
		{Name: "vault", Arg: "path", Usage: "socket path (default $PRIVACYCUT_VAULT)"},
		{Name: "vocab", Arg: "file", Usage: "vocabulary file"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("List (-want +got):\n%s", d)
	}
	for _, tc := range []struct {
		f          Flag
		spec, help string
	}{
		{got[0], "--expires duration", "plan lifetime (default 24h0m0s)"},
		{got[1], "--json", "print one JSON document"},
		{got[3], "--mode string", `irreversible or reversible (default "irreversible")`},
		{got[4], "-o file", "write to file (default stdout)"},
	} {
		if tc.f.Spec() != tc.spec || tc.f.Help() != tc.help {
			t.Errorf("%s: %q %q, want %q %q", tc.f.Name, tc.f.Spec(), tc.f.Help(), tc.spec, tc.help)
		}
	}
}

func TestWrap(t *testing.T) {
	if got := Wrap("aa bb cc dd", 5); got != "aa bb\ncc dd" {
		t.Errorf("Wrap: %q", got)
	}
	if got := Indent("a\nb", "  "); got != "  a\n  b" {
		t.Errorf("Indent: %q", got)
	}
}
