package wire

import (
	"strconv"

	"github.com/privacycut/privacycut/receipts"
)

// Error is a refusal to render a wire body. It names the plan field or the
// input at fault and a fixed reason; for a document (the export or the
// output schema) it carries the position of the offending token. It never
// holds input bytes: not the instruction, not a part's text, not a piece of
// the schema.
type Error struct {
	Code   receipts.Code // PLAN_MISMATCH, or MALFORMED_RECORD / INVALID_UTF8 / LIMIT_EXCEEDED for a document
	Field  string        // "wire.profile", "wire.model", "wire.instruction", "wire.max_output_tokens", "output_schema", "output_schema_digest", "export"
	Part   int           // index of the export part at fault, -1 for none
	Offset int           // byte offset in the document named by Field, -1 for none
	Line   int           // 1-based line of Offset, 0 for none
	Column int           // 1-based byte column of Offset, 0 for none
	Reason string        // fixed, content-free
}

func (e *Error) Error() string {
	s := "wire: " + string(e.Code) + ": " + e.Field
	if e.Part >= 0 {
		s += " part " + strconv.Itoa(e.Part)
	}
	if e.Line > 0 {
		s += " at line " + strconv.Itoa(e.Line) + " col " + strconv.Itoa(e.Column)
	} else if e.Offset >= 0 {
		s += " at offset " + strconv.Itoa(e.Offset)
	}
	return s + ": " + e.Reason
}

func planError(field, reason string) *Error {
	return &Error{Code: receipts.PlanMismatch, Field: field, Part: -1, Offset: -1, Reason: reason}
}

// The fixed reasons of render refusals.
const (
	reasonUnknownProfile  = "unknown wire profile"
	reasonExportFields    = "export@1 takes no model, instruction or max_output_tokens"
	reasonModelEmpty      = "model is empty"
	reasonModelLong       = "model is longer than 256 bytes"
	reasonModelChars      = "model is not printable ASCII"
	reasonInstrEmpty      = "instruction is empty"
	reasonInstrLong       = "instruction is longer than 64 KiB"
	reasonInstrUTF8       = "instruction is not valid UTF-8"
	reasonTokensLow       = "max_output_tokens is below 1"
	reasonTokensHigh      = "max_output_tokens is above 2147483647"
	reasonNoSchema        = "the wire profile needs an output schema"
	reasonNoSchemaDigest  = "the plan binds no output schema digest"
	reasonSchemaDigest    = "the schema's digest is not the plan's output_schema_digest"
	reasonSchemaNotObject = "the schema is not a JSON object"
	reasonReservedName    = "a property name begins with x-privacycut-"
	reasonExportShape     = "not an Export@1 document"
	reasonExportProfile   = "export profile is not closed-diagnostic@1"
	reasonExportNoParts   = "export has no parts"
	reasonExportCanonical = "export is not in canonical form"
	reasonEmptyText       = "an empty part text cannot be an anthropic-messages@1 text block"
)

// AnswerError is a provider answer that is not a usable answer: an error
// status, a refusal, a truncation, an answer of the wrong shape. Its code is
// always UPSTREAM_FAILED and its reason one of a fixed set; it never quotes
// the provider's text.
type AnswerError struct {
	Profile string // the wire profile
	Status  int    // the HTTP status of the answer
	Reason  string // one of the Reason constants
}

// Code returns UPSTREAM_FAILED.
func (e *AnswerError) Code() receipts.Code { return receipts.UpstreamFailed }

func (e *AnswerError) Error() string {
	return "wire: " + e.Profile + " answer unusable (HTTP " + strconv.Itoa(e.Status) + "): " +
		string(receipts.UpstreamFailed) + ": " + e.Reason
}

// The fixed reasons of an AnswerError.
const (
	ReasonRateLimited   = "rate limited (status 429)"
	ReasonServerError   = "server error (status 5xx)"
	ReasonRedirect      = "redirect (status 3xx) not followed"
	ReasonClientError   = "request refused (status 4xx)"
	ReasonStatus        = "unexpected status"
	ReasonTooLarge      = "answer larger than the limit"
	ReasonNotJSON       = "answer is not strict JSON"
	ReasonShape         = "answer is not a response of the profile's shape"
	ReasonChoices       = "not exactly one choice"
	ReasonTruncated     = "truncated"
	ReasonRefusal       = "refusal"
	ReasonContentFilter = "content filtered"
	ReasonToolCall      = "tool call instead of content"
	ReasonStopReason    = "unexpected stop reason"
	ReasonNoContent     = "no content"
	ReasonContentJSON   = "content is not strict JSON"
	ReasonNoToolUse     = "no tool_use block"
	ReasonToolName      = "tool_use block not named answer"
	ReasonManyToolUse   = "more than one tool_use block"
	ReasonInputObject   = "tool_use input is not an object"
)
