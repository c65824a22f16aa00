package canon

// Class is the class of a refusal. Its values are spelled as the refusal
// codes they are reported under (receipts.Code), so that a caller reports a
// *SyntaxError or an *EncodeError as receipts.Code(err.Class).
type Class string

// The three classes of refusal.
const (
	MalformedRecord Class = "MALFORMED_RECORD" // syntax, duplicate key, unknown field, wrong kind
	InvalidUTF8     Class = "INVALID_UTF8"     // raw invalid UTF-8 or a lone surrogate escape
	LimitExceeded   Class = "LIMIT_EXCEEDED"   // document size or nesting depth
)

// valid reports whether c is one of the three classes.
func (c Class) valid() bool {
	return c == MalformedRecord || c == InvalidUTF8 || c == LimitExceeded
}
