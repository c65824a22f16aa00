package cli

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/osvvocab"
)

func init() {
	registerGroup("vocab", "build a Vocabulary@1")
	register(&command{name: "vocab build", synopsis: "--osv DIR|ZIP|TAR.GZ [--osv …] [--module-versions FILE]… [--pseudo-versions] [--prerelease-versions] [--revision R] [-o FILE]",
		summary: "build a Vocabulary@1 from OSV entries", run: runVocabBuild})
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runVocabBuild(ctx context.Context, c *Cmd, args []string) error {
	fs := c.flags("vocab build")
	var osv, mv stringList
	fs.Var(&osv, "osv", "OSV entries: a `DIR` (read recursively), a zip or tar.gz archive or one JSON file; repeatable")
	fs.Var(&mv, "module-versions", "`FILE` of `go list -m all` or `go list -m -versions` lines: versions of modules the entries name; repeatable")
	pseudo := fs.Bool("pseudo-versions", false, "also take pseudo-versions from --module-versions (a pseudo-version names a commit, which may exist only in a private mirror)")
	pre := fs.Bool("prerelease-versions", false, "also take from --module-versions versions with a prerelease or build part that no OSV entry names (a fork's own tags, such as v1.0.7-acme.1, may name it)")
	out := fs.String("o", "", "write the vocabulary to `file` (default stdout)")
	revision := fs.String("revision", "", "the vocabulary's revision (default osv-<12 hex digits of its digest>)")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if len(osv) == 0 || len(pos) != 0 {
		return c.usage()
	}
	b := osvvocab.New()
	if *pseudo {
		b.AllowPseudoVersions()
	}
	if *pre {
		b.AllowPrereleaseVersions()
	}
	for _, p := range osv {
		if err := b.AddPath(p); err != nil {
			return err
		}
	}
	for _, p := range mv {
		data, err := readFileCapped(p, osvvocab.MaxModuleVersionsBytes)
		if err != nil {
			return fmt.Errorf("read module versions: %w", err)
		}
		if err := b.AddModuleVersions(filepath.Base(p), data); err != nil {
			return err
		}
	}
	v, err := b.Build(*revision)
	if err != nil {
		return err
	}
	if err := c.writeOutput(*out, v.JSON, 0o644); err != nil {
		return err
	}
	gv, err := grammar.LoadVocabulary(v.JSON)
	if err != nil {
		return err
	}
	st, size := v.Stats, gv.Size()
	fmt.Fprintf(c.Stderr, "cut: vocab: digest %s (revision %s)\n", v.Digest, v.Revision)
	fmt.Fprintf(c.Stderr, "cut: vocab: %d entries from %d JSON files (%d not OSV entries, %d other files ignored): %d diagnostics, %d modules, %d versions, %d citations\n",
		st.Entries, st.Files, st.NotEntries, st.Ignored, size["diagnostics"], size["modules"], size["versions"], size["citations"])
	if len(st.Skipped) > 0 {
		fmt.Fprintf(c.Stderr, "cut: vocab: skipped items that cannot be vocabulary items: %s\n", summary(st.Skipped))
	}
	if st.OtherRanges+st.OtherEcosystems > 0 {
		fmt.Fprintf(c.Stderr, "cut: vocab: ignored %d non-SEMVER ranges and %d packages of other ecosystems\n", st.OtherRanges, st.OtherEcosystems)
	}
	if len(mv) > 0 {
		fmt.Fprintf(c.Stderr, "cut: vocab: module versions: %d added; dropped %d lines of modules the entries do not name, %d replaced lines, %d invalid versions, %d pseudo-versions, %d prerelease or build versions no entry names\n",
			st.VersionsAdded, st.VersionsOutside, st.VersionsReplaced, st.VersionsInvalid, st.VersionsPseudo, st.VersionsPrerelease)
		if st.VersionsPseudo > 0 && !*pseudo {
			c.hintf("pseudo-versions name commits and are left out; findings at them refuse UNKNOWN_VERSION. --pseudo-versions takes them, if their commits are public")
		}
		if st.VersionsPrerelease > 0 && !*pre {
			c.hintf("versions with a prerelease or build part that no OSV entry names (a fork's own tags) are left out; findings at them refuse UNKNOWN_VERSION. --prerelease-versions takes them, if the tags are public")
		}
	}
	return nil
}
