// Package rehydrate is rehydration (docs/FORMATS.md#rehydration) as pure code: the output
// schema and its markings, the recognition of lease-issued tokens in a
// model's return, their substitution by the values they stand for, and
// RehydrationReceipt@1.
//
// The package does no I/O, starts no goroutine and never reads the clock:
// time is an argument. It runs inside the vault, which gives it the lease's
// issued tokens through the [Issued] interface, so the token map never
// leaves the vault.
//
// # Output schema
//
// The output schema is a closed subset of JSON Schema with three node forms:
//
//	{"type":"object","properties":{NAME:SCHEMA,…},"required":[NAME,…],"additionalProperties":false}
//	{"type":"array","items":SCHEMA,"maxItems":N}
//	{"type":"string","maxLength":N,"x-privacycut-rehydrate":{"category":C,"purpose":P,"max":M}}
//
// Every node may also carry "description" and "title" strings. Nothing else
// is accepted: an unknown keyword (including $schema, $ref, enum, pattern,
// minLength…), a keyword of another node form, another type (number,
// integer, boolean, null, a list of types) or a missing type is refused with
// a [*receipts.Refusal] of kind "schema", because a schema that cannot be fully understood cannot
// be enforced. Further rules:
//
//   - properties and required are optional; every name in required is a
//     declared property, listed once. additionalProperties defaults to false
//     and may only be written false.
//   - items is required. maxItems and maxLength are optional integer
//     literals ≥ 0 (no sign, fraction or exponent). maxLength counts Unicode
//     code points, as JSON Schema does.
//   - A property name is [A-Za-z_][A-Za-z0-9_-]* and at most 128 bytes. So
//     JSON paths print unambiguously, keys sort the same in UTF-8 and
//     UTF-16, and no property name can equal a token.
//   - The marking has exactly category, purpose and max. category is one of
//     module, package, function, file, team, person, host (UNKNOWN_CATEGORY
//     otherwise; credential is PROHIBITED_CATEGORY); purpose is 1–128 bytes
//     of printable ASCII without space; max is an integer ≥ 1. A marked
//     string's maxLength, if given, must admit a token of its category.
//
// A schema is named by [Schema.Digest], receipts.SHA256 of the RFC 8785
// form of the document: the plan's output_schema_digest. [Schema.Paths]
// lists the marked paths, written "$", ".name" per property and "[*]" per
// array item. A worked example:
//
//	{"type":"object","additionalProperties":false,"required":["findings"],
//	 "properties":{"findings":{"type":"array","maxItems":100,"items":{
//	   "type":"object","required":["owner_module","advice"],"properties":{
//	     "owner_module":{"type":"string","maxLength":64,
//	       "x-privacycut-rehydrate":{"category":"module","purpose":"dependency-triage","max":100}},
//	     "advice":{"type":"string","maxLength":2000}}}}}}
//
// marks one path, "$.findings[*].owner_module", for modules, at most 100
// substitutions in all, for leases whose purpose is "dependency-triage".
//
// # Recognition
//
// A reversible token is exactly
//
//	pcv:<ns>:<category>:<mac>
//
// with ns 10 and mac 20 characters of [a-z2-7] and category one of the eight
// categories of docs/FORMATS.md#grammar. [Validate] reads the return strictly
// (canon.Parse: duplicate keys, invalid UTF-8, trailing data… refuse),
// checks it against the schema (kinds, required members, no undeclared
// member, maxItems, maxLength; else MALFORMED_RECORD) and applies these
// rules to every string value, after JSON unescaping and nothing else:
//
//	at a path marked for the lease's purpose (category C, max N):
//	  not exactly token-shaped          TOKEN_NOT_ISSUED
//	  token of another namespace        TOKEN_OTHER_NAMESPACE
//	  token's category is not C         TOKEN_WRONG_CATEGORY
//	  Lookup: not issued, not disclosed TOKEN_NOT_ISSUED
//	  Lookup: issued under another one  TOKEN_WRONG_CATEGORY
//	  more than N at this schema path   TOKEN_OVER_CARDINALITY
//	  otherwise                         substituted
//	at any other path (unmarked, or marked for another purpose):
//	  exactly token-shaped, another namespace
//	                                    TOKEN_OTHER_NAMESPACE
//	  exactly token-shaped, the lease's namespace:
//	    Lookup: issued                  TOKEN_WRONG_PATH
//	    Lookup: not issued              TOKEN_NOT_ISSUED
//	  anything else                     prose: kept byte for byte, never scanned
//
// "Not exactly token-shaped" covers every near miss: an edit in the prefix
// or category, a flipped case, an HTML or other non-JSON escape, white
// space, a truncation, a fragment of a token split across values, an
// irreversible "redacted:" token. Nothing is ever trimmed, folded,
// completed or matched approximately. The count against max is per schema
// path ("$.findings[*].owner_module"), over the whole return.
//
// Lookup is called only for a string that is exactly token-shaped with the
// lease's namespace: never for prose, never for object keys, never for a
// token of another namespace or (at a marked path) of another category.
//
// Object keys are never substituted. A key that equals a token can never be
// a declared property name, so it is an undeclared member and the return is
// refused with MALFORMED_RECORD, at the path of its object; its key is not
// looked up.
//
// The first violation in document order refuses the whole return with a
// [*receipts.Refusal] carrying the code, the concrete JSON path (e.g.
// "$.findings[2].owner_module"), line, column and length; a missing
// required member is reported at its object once the object's members are
// checked. Replay and claim rules (LEASE_NOT_ACTIVE, LEASE_CLAIM_CONFLICT)
// belong to the lease, not to this package.
//
// # Substitution
//
// [Plan.Apply] replaces each planned string value whole by the token's
// value (Issued.AppendValue), encoded as a JSON string, and writes the
// return in RFC 8785 canonical form: [Result].Output. [Rehydrate] is
// Validate followed by Apply. maxLength applies to the return as given, not
// to the output.
//
// # Receipt
//
// [NewReceipt] builds RehydrationReceipt@1: cut event, lease reference,
// return and final digests, substitutions per category, verifier and policy
// revisions, the restored label digest, the digest of the output schema
// used (output_schema_digest), rehydrated_at and
//
//	purge_at = min(source expiry, cut expiry, now + RetentionMax(retention))
//
// with [RetentionMax] no-retention 1 h, session 24 h, short 7 days.
//
// # Security properties
//
// Guaranteed:
//
//   - Exact, whole-value, path-bound recognition. A value is substituted
//     only where the whole JSON string equals a token that is well-formed,
//     of the lease's namespace, of the marking's category, reported issued
//     and disclosed by Lookup under that category, at a path marked for the
//     lease's purpose, within the marking's max. Every other string of the
//     output is byte-for-byte the return's string.
//   - Fail closed, whole return. Any violation refuses the entire return;
//     Validate never calls AppendValue, so on a refusal no value has been
//     read and nothing is substituted, and Rehydrate returns no output.
//     Apply clears what it wrote before returning any error.
//   - Prose is never scanned. Strings at unmarked paths are compared with
//     the token shape as a whole (a length and prefix check first) and are
//     otherwise never read for token-shaped substrings.
//   - Errors are content-free. A receipts.Refusal carries a code, a
//     path built from declared property names and indices, positions and a
//     fixed reason: never a token, a value or any byte of the return. The
//     receipt holds no value and no token, and its identifier fields refuse
//     anything token-like.
//   - Bounded work: returns up to MaxReturnBytes and schemas up to
//     MaxSchemaBytes, parsed in linear time with bounded nesting.
//
// Not guaranteed:
//
//   - Output holds restored values in ordinary Go memory, and so do the
//     value slices while Apply copies them (each is cleared after use, and
//     the output is sized once so that no grown-out copy remains). The
//     hashes of the output keep its last partial block (up to 63 bytes);
//     Apply overwrites their state and 4 KiB of the hashing goroutine's
//     stack after the sums, best effort (a stack that grew meanwhile was
//     copied and its old copy freed unwiped). Memory locking is the
//     vault's business.
//   - Result.FinalDigest is a plain SHA-256 of the output, as the contract
//     defines it. Anyone holding the return and a receipt with that digest
//     can confirm a guess of the restored values; set
//     ReceiptInput.EvidenceKey to write a keyed final_digest instead
//     (Plan.ApplyKeyed computes it while writing the output; NewReceipt
//     uses it only when given the very key it was computed under, and
//     otherwise hashes the output again).
//   - The package cannot know whether the lease is still active, whether
//     this return was already claimed, or whether Lookup tells the truth:
//     those are the vault's and the lease's.
//
// The caller's duties: pass the lease's own namespace and purpose; have
// Lookup answer only for tokens this lease issued and that appeared in the
// export that was disclosed; check the schema's Digest against the plan's
// output_schema_digest; claim the lease with Plan.ReturnDigest (or
// Return.Digest, which ParseReturn computes beside the parse) before
// Apply; give Apply the same Issued as Validate; treat Output as carrying
// the source's label (egress must never admit it) and clear it after use;
// discard the result unless NewReceipt succeeds.
package rehydrate
