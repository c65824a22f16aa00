// Package osvvocab builds a Vocabulary@1 — the public items of the grammar
// closed-diagnostic@1 — from OSV vulnerability entries in the format of the
// Go vulnerability database.
//
// # What goes in
//
// From every OSV entry (a JSON object with an "id"):
//
//	diagnostics  id and aliases[]
//	modules      affected[].package.name, for the "Go" ecosystem
//	versions     affected[].ranges[].events[] of SEMVER ranges: introduced
//	             (except "0"), fixed and last_affected, written with a
//	             leading "v" ("0.3.8" becomes "v0.3.8"); "limit" is not a
//	             version and is not taken
//	citations    references[].url and database_specific.url
//
// and always the statuses of OpenVEX (affected, not_affected, fixed,
// under_investigation) and the questions of [Questions].
//
// A module version that is in use but is not an event of any entry (most
// vulnerable versions are not) is unknown to such a vocabulary, and an
// importer refuses a finding about it. [Builder.AddModuleVersions] adds
// versions from `go list -m all` or `go list -m -versions` output, but only
// for modules the OSV entries already name: a module the database does not
// know never enters the vocabulary from that file.
//
// Of such a file's versions, those that could name something private are
// left out and counted unless the caller allows them: pseudo-versions
// ("v0.0.0-20220722155237-a158d28d115b", which name commits;
// [Builder.AllowPseudoVersions], counted in Stats.VersionsPseudo) and every
// other version with a prerelease or build-metadata part
// ("v1.0.7-acme-payments-ledger.1", "v1.4.0+corp", "v1.5.0-rc.1", which a
// fork served under the public path may have tagged itself;
// [Builder.AllowPrereleaseVersions], counted in Stats.VersionsPrerelease).
// A release version is taken, also with Go's "+incompatible" marker. A
// version an OSV entry names is public and kept whatever its form.
//
// Entries are read from a directory (recursively, regular *.json files;
// symbolic links are not followed), from a zip archive (the database's
// vulndb.zip or osv.dev's all.zip), from a gzip-compressed tar archive
// (read as a stream; regular *.json members) or from one JSON file. JSON
// files that are not OSV entries (the database's index files) are counted
// and skipped.
//
// # Output
//
// [Builder.Build] writes the vocabulary with sorted, de-duplicated items and
// returns the digest [grammar.Vocabulary.Digest] will report for it: SHA-256
// over the RFC 8785 canonical form. The same entries in any file order, in a
// directory, a zip or a tar.gz, give identical bytes. The revision, unless given, is
// "osv-" and the first 12 hex digits of the digest of the vocabulary built
// with an empty revision.
//
// # Security properties
//
//   - Only public material enters the vocabulary: items of OSV entries and
//     the fixed status and question lists. A module-versions file
//     contributes versions of modules the entries name, nothing else; its
//     other lines (the main module, private dependencies, replacements) are
//     counted and dropped, and so are its pseudo-versions and prerelease or
//     build-metadata versions unless the caller allows each kind.
//   - Items are never repaired. An item that could not be a vocabulary item
//     under [grammar.LoadVocabulary] (white space, quotes, backslashes,
//     controls, invisible or bidi characters, not NFC, "@" in a module or
//     version, a citation beginning "fixed=") is skipped and counted by
//     class. Non-ASCII items are judged by grammar.LoadVocabulary itself, and
//     the finished document is loaded with it before it is returned.
//   - Every file is read strictly (receipts' JSON reader: duplicate keys,
//     invalid UTF-8 and trailing data refuse the file) and is size-capped
//     (MaxEntryBytes each, MaxTotalBytes in all, MaxFiles files), so a zip
//     bomb is refused, not expanded. Errors name the file within the
//     database and a fixed reason, never file content.
//
// Not guaranteed: that the OSV data is authentic or current — that is the
// caller's duty (fetch the database over an authenticated channel). A
// fork's own release tags (a v1.0.8 that the public module never published)
// look like any release and are taken: list versions from the public proxy
// (`GOPROXY=https://proxy.golang.org go list -m -versions`) rather than
// from a build that uses a private proxy, if a fork may be served under a
// public path. With module-versions the vocabulary, and its digest that
// plans and receipts bind, reflect the versions listed; list every
// published version (`go list -m -versions`) rather than the ones in use if
// that matters to you.
package osvvocab
