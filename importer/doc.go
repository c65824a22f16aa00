// Package importer turns the output of Go vulnerability scanners into a
// Projection@1 that passes closed-diagnostic@1 against a given vocabulary:
// govulncheck's JSON stream ([Govulncheck]), its OpenVEX document
// ([OpenVEX]) and osv-scanner's JSON report ([OSVScanner]). A CODEOWNERS file
// ([ParseCodeOwners]) adds the owning teams and people.
//
// # The projection
//
// One part of kind "block" (key "<format>/findings") holds one record per
// finding, in input order:
//
//	finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://pkg.go.dev/vuln/GO-2022-1059 owner.module="git.corp.example/payments/ledger" owner.package="git.corp.example/payments/ledger/internal/i18n" owner.function="(*Negotiator).Pick" owner.file="internal/i18n/negotiate.go" owner.team="@corp/payments-core"
//
// Its label is class private, weight 3, categories the "owner.<category>"
// of the slots written, no subjects or handling, and parents and lineage
// ["sha256:<hex of the input bytes>"]. With Options.Questions, a second
// part of kind "query" (key "q", class internal, weight 1) holds one `ask`
// record per question. Keys, labels and lineage stay local (docs/FORMATS.md#projection).
//
// The citation is the first of the vulnerability's OSV references that the
// vocabulary holds, in this order: database_specific.url (the Go advisory
// page), then references[].url as the entry lists them. For OpenVEX it is
// the vulnerability's @id.
//
// # govulncheck
//
// The stream is a sequence of JSON objects, each with exactly one member:
// config (the first message, exactly once), progress, SBOM, osv or finding.
// A Finding{osv, fixed_version, trace[]} has the vulnerable frame first and
// the entry point last. It becomes:
//
//	diagnostic   finding.osv
//	dependency   trace[0].module @ trace[0].version
//	fixed=       finding.fixed_version, when given
//	citation     from the osv message with that id (above)
//	owner slots  of the first private frame after trace[0] — the first whose
//	             module is not a vocabulary module: owner.module (module),
//	             owner.package (package), owner.function (function with its
//	             receiver: F, T.F, (*T).F, (*List[T]).Push), owner.file
//	             (position.filename); then owner.team and owner.person from
//	             CODEOWNERS for that file
//
// Kept nothing else: the symbols and positions of public frames, the other
// private frames, line and column, OSV summaries and details, config and
// SBOM. A trace whose first frame has no version (the vulnerable code is in
// the main module) has no dependency and is refused or dropped as
// "dependency".
//
// The status is that of the vulnerability in the scan, so every record of
// one id carries the same one. Let L be the furthest level any finding of
// the id reached — symbol (trace[0] has a function), package (a package)
// or module — and S the config's scan_level:
//
//	S = symbol    L = symbol: affected    L = package or module: not_affected
//	S = package   L ≥ package: affected   L = module: not_affected
//	S = module    affected
//	S absent      L = symbol: affected    otherwise: under_investigation
//
// This is govulncheck's own OpenVEX rule. It holds for source and binary
// mode alike: in binary mode a symbol counts when it is in the binary's
// symbol table, which is conservative; a binary's trace has a single frame,
// so a binary import carries no owner slots. A query-mode stream has no
// scan level and module-level findings: under_investigation.
//
// Message kinds are closed (an unknown kind, or two kinds in one message,
// refuses the stream); the fields the importer does not use are ignored,
// but the fields it uses must have their documented JSON types.
//
// # OpenVEX
//
// Each statement gives one finding per subcomponent of its products whose
// @id is a Go package URL (pkg:golang/<module>@<version>): diagnostic =
// vulnerability.name, status = the statement's status, citation =
// vulnerability.@id. A product whose @id is a Go package URL of a module the
// vocabulary does not know gives owner.module. Dropped: justification,
// impact and action statements, timestamps, aliases. A statement without Go
// subcomponents (older govulncheck releases wrote none) has no dependency.
// OpenVEX has no fixed version and no source position: no fixed=, no
// CODEOWNERS.
//
// # osv-scanner
//
// Each group (aliases of one vulnerability) of a package of the "Go"
// ecosystem gives one finding: diagnostic = the first of the group's ids
// the vocabulary holds (GO- ids first, then sorted), dependency = package
// name @ version (with "v" added), fixed= the fix of the entry's SEMVER
// range that holds the version, status affected, or not_affected when the
// group's call analysis says no id is called, citation from the entries of
// the group's ids, owner.file = the source path (lockfile), with CODEOWNERS.
// Packages of other ecosystems are skipped and counted in Stats.Skipped.
// Dropped: severities, licences, dependency groups, container layers.
//
// # Security properties
//
//   - Public items are never guessed at. The diagnostic, module, version,
//     fixed version, status and citation of every finding are checked
//     against the vocabulary; a finding with an item the vocabulary lacks
//     refuses the whole import (RefusedError, naming the class and the
//     finding number) or, under Drop, is left out and counted. It is never
//     written as public text.
//   - Owner values are written as read, escaped with grammar.Escape, and
//     each record is parsed by the grammar before it is kept. A value the
//     grammar refuses (a control, bidi or invisible character, not NFC,
//     padded, equal to a vocabulary item) is never altered: it refuses the
//     import (RefusedError names the finding, the slot and why: the
//     character's code point, class and byte offset in the value, or the
//     value's property) or, under Drop, its finding is left out and counted
//     in Stats.Refused by slot.
//   - Frames whose module is not in the vocabulary are treated as private:
//     over-redaction, never under-redaction.
//   - Nothing is returned but an error when the import is refused: there is
//     no partial projection. The projection returned passes grammar.Check
//     with the same vocabulary; the importer checks that before returning.
//   - Inputs are read with receipts' strict JSON reader (duplicate keys,
//     invalid UTF-8, lone surrogates, trailing data refuse) and are capped
//     (MaxInputBytes, MaxMessageBytes, MaxCodeOwnersBytes).
//   - Errors carry a code, a finding or message number, a line and column
//     and a path made of the format's field names, never input bytes: the
//     inputs hold private names.
//
// Not guaranteed: that everything private in the input is recognised as
// private — only the fields listed above are read, and only owner slots
// carry private values. The lineage digest is a plain SHA-256 of the input;
// it stays local (docs/FORMATS.md#projection) but confirms a guess of the whole input to
// whoever sees the projection. The caller's duties: keep the projection as
// private as the scan output, use a vocabulary built from public data only,
// and check the result with `cut check` before planning a disclosure.
package importer
