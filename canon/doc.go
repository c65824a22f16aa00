// Package canon is the one strict JSON reader every package of privacycut
// uses, and RFC 8785 canonical JSON.
//
// # Strict JSON
//
// [Parse] reads a document into a [Value] tree; [Unmarshal] (and
// [Value.Decode]) fill a Go value from it by reflection. encoding/json never
// reads input: it keeps the last of two duplicate keys, matches keys without
// regard to case and turns invalid UTF-8 into U+FFFD, so two parsers would
// see two different documents. Parse refuses instead of repairing:
//
//   - invalid syntax (RFC 8259), a leading byte order mark, trailing data;
//   - two members of one object with equal keys after unescaping
//     ("a" and "\u0061" are equal);
//   - raw invalid UTF-8 anywhere, and \u escapes that form a lone or
//     mis-ordered surrogate ("\ud800", "\udc00", "\ud800\u0041");
//   - raw control characters (below U+0020) in strings;
//   - nesting deeper than Options.MaxDepth (default 64) and documents longer
//     than Options.MaxBytes (default 1 GiB).
//
// Unmarshal also refuses members that match no field (keys are matched
// exactly, case-sensitively), values of the wrong JSON kind, integers with
// a fraction or exponent, integers outside the Go type or outside
// ±[MaxSafeInteger], and floats that overflow. A []byte target is read from
// a JSON string as its UTF-8 bytes, not from base64. A JSON null leaves a
// non-pointer scalar or struct unchanged, as encoding/json does.
//
// Every refusal is a [*SyntaxError] carrying a [Class] (MalformedRecord,
// InvalidUTF8 or LimitExceeded, spelled as the refusal codes they are
// reported under), the byte offset, the 1-based line and byte
// column, the token length, a fixed reason and, when decoding, the schema
// path of the Go field, e.g.
//
//	canon: json: unknown field at line 3 col 5 in parts[0].label
//
// # Canonical form
//
// [Canonicalize], [Value.Canonical] and [Marshal] write RFC 8785 (JCS):
// no white space; members sorted by the UTF-16 code units of their keys;
// strings escaped minimally (\" \\ \b \f \n \r \t, other controls as
// \u00xx with lower-case hex, everything else as literal UTF-8, including
// < > & and U+2028/U+2029); numbers written as ECMAScript's
// Number.prototype.toString writes the nearest IEEE-754 double (integers
// below 1e21 in full, 1e+21, 1e-7, 0.000001, -0 as 0); a number that is not
// finite as a double is refused.
//
// A worked example. The document
//
//	{ "b": [1.0, 1E2, -0, 0.0000001, 1e21],
//	  "a": "\u00e9\u2028\/<",
//	  "\ud83d\ude00": null, "\uff61": true }
//
// has the canonical form (U+2028 and U+FF61 are shown as \u2028 and \uff61
// for readability; the canonical bytes hold them as literal UTF-8, like é)
//
//	{"a":"é\u2028/<","b":[1,100,0,1e-7,1e+21],"😀":null,"\uff61":true}
//
// where "😀" (UTF-16 D83D DE00) sorts before U+FF61 although its UTF-8
// bytes sort after. Its digest, [SHA256] of those bytes, is
//
//	sha256:567338d5aca5fe54c109265927dca0960de4df2025155d6e2928a0351b009575
//
// [Marshal] encodes Go values directly in canonical form with the Unmarshal
// rules made symmetric: []byte as a UTF-8 string, integers within
// ±MaxSafeInteger, and invalid UTF-8, NaN and ±Inf refused rather than
// coerced. For values that encoding/json encodes without coercion, Marshal(v)
// equals Canonicalize(json.Marshal(v)).
//
// # Security properties
//
//   - One reading per document. A document Parse accepts has exactly one
//     tree; whatever Unmarshal accepts into a target without []byte or
//     json.RawMessage, encoding/json (with UseNumber and
//     DisallowUnknownFields) decodes to the same Go value, so no component
//     can be shown a different document than the one checked.
//   - Errors are content-free. No error of this package contains bytes of
//     the input or of a value being encoded: only classes, offsets, fixed
//     reasons and schema paths. Errors returned by json.Unmarshaler,
//     encoding.TextUnmarshaler, json.Marshaler and encoding.TextMarshaler
//     implementations are replaced, not wrapped, because they may quote their
//     input.
//   - Bounded work. Parse runs in time linear in the document, and its
//     recursion is bounded by MaxDepth (never more than 10000). Memory is
//     proportional to the document, but a tree node costs about 130 bytes,
//     so a document made of tiny values ("[0,0,0,…]") takes some 70 times its
//     length: choose MaxBytes with that in mind.
//   - Canonical forms are stable and faithful. Canonicalize is idempotent,
//     and Parse(Canonicalize(x)) equals Parse(x) up to member order and the
//     spelling of numbers. Marshal never maps two different Go values to one
//     encoding through silent coercion (invalid UTF-8, lossy integers, NaN).
//
// Not guaranteed: numbers keep their literal in the tree and in
// json.Number, but the canonical form is the nearest double: literals that
// round to the same double (1 and 1.0, or 2^53 and 2^53+1) have one
// canonical form. Decode integers into Go integer types, which refuse
// everything beyond ±MaxSafeInteger, to keep decoded values and digests in
// step.
//
// The caller's duty: read every JSON input through Unmarshal or Parse,
// never encoding/json.
package canon
