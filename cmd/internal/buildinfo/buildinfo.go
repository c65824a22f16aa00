// Package buildinfo says which build of privacycut a command is: the
// module version and the VCS revision the Go toolchain recorded.
package buildinfo

import "runtime/debug"

// Version returns "PROG (privacycut) VERSION [REVISION[+modified] TIME] GO",
// read from the binary's build information: VERSION is the module version
// ("(devel)" for a build from a checkout), REVISION the commit it was built
// from, "+modified" when the work tree had changes.
func Version(prog string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return prog + " (privacycut) unknown version"
	}
	return format(prog, bi)
}

func format(prog string, bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified, at string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		case "vcs.time":
			at = s.Value
		}
	}
	out := prog + " (privacycut) " + v
	if rev != "" {
		out += " " + rev + modified
		if at != "" {
			out += " " + at
		}
	}
	return out + " " + bi.GoVersion
}
