// Package flaghelp lists the flags of a flag.FlagSet for a command's help,
// manual page and completion: "--name ARG", the description, and the
// default when it is not the zero value.
package flaghelp

import (
	"flag"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Flag is one flag of a command, as its help, manual and completion show
// it.
type Flag struct {
	Name    string // without dashes: "vocab", "o"
	Arg     string // the value's name ("file"), empty for a boolean flag
	Usage   string // the description, the value's name unquoted
	Default string // empty when the default is the zero value
}

// Spec is "--name ARG" ("-o file" for a one-letter flag).
func (f Flag) Spec() string {
	s := "--" + f.Name
	if len(f.Name) == 1 {
		s = "-" + f.Name
	}
	if f.Arg != "" {
		s += " " + f.Arg
	}
	return s
}

// Help is the description followed by the default, when it is not the
// zero value and the description does not already name it.
func (f Flag) Help() string {
	if f.Default == "" || strings.Contains(f.Usage, "(default") {
		return f.Usage
	}
	return f.Usage + " (default " + f.Default + ")"
}

// List lists the flags of fs, sorted by name.
func List(fs *flag.FlagSet) []Flag {
	var out []Flag
	fs.VisitAll(func(fl *flag.Flag) {
		arg, usage := flag.UnquoteUsage(fl)
		if isBoolFlag(fl) {
			arg = ""
		}
		f := Flag{Name: fl.Name, Arg: arg, Usage: usage}
		if !isZeroDefault(fl) {
			f.Default = fl.DefValue
			if fmt.Sprintf("%T", fl.Value) == "*flag.stringValue" {
				f.Default = strconv.Quote(fl.DefValue)
			}
		}
		out = append(out, f)
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func isBoolFlag(fl *flag.Flag) bool {
	b, ok := fl.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// isZeroDefault reports whether a flag's default is its type's zero value,
// which its help does not mention.
func isZeroDefault(fl *flag.Flag) bool {
	switch fl.DefValue {
	case "", "false", "0", "0s", "[]":
		return true
	}
	return false
}

// Wrap breaks s into lines of at most width bytes at spaces.
func Wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		if i > 0 {
			if n+1+len(w) > width {
				b.WriteByte('\n')
				n = 0
			} else {
				b.WriteByte(' ')
				n++
			}
		}
		b.WriteString(w)
		n += len(w)
	}
	return b.String()
}

// Indent prefixes every line of s.
func Indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
