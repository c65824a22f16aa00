package wire

import (
	"bytes"
	"net/http"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// MaxAnswerBytes is the largest provider answer ReadAnswer reads (64 MiB).
const MaxAnswerBytes = 64 << 20

// answerOptions bound the parse of a provider's response and of the answer
// document inside it.
var answerOptions = canon.Options{MaxBytes: MaxAnswerBytes, MaxDepth: 64}

// ReadAnswer extracts the answer document from a provider's response to a
// wire body of the given profile, from its HTTP status and body:
//
//   - export@1: any 2xx status; the answer is the body as received.
//   - openai-chat@1: status 200; the body is a strict JSON object whose
//     "choices" holds exactly one choice, with finish_reason "stop", a
//     message without a refusal or tool calls, and a string content that is
//     itself strict JSON. The answer is that content, decoded from its JSON
//     string.
//   - anthropic-messages@1: status 200; the body is a strict JSON object of
//     "type" "message" with stop_reason "tool_use" and exactly one tool_use
//     block in "content", named "answer", whose input is an object. The
//     answer is the exact text of that input.
//
// Anything else is an *AnswerError with code UPSTREAM_FAILED and a fixed
// reason (ReasonTruncated, ReasonRefusal, ReasonNoToolUse, …): the
// provider's text is never quoted. The returned slice shares no memory with
// body, except for export@1, where it is body.
func ReadAnswer(profile string, status int, body []byte) ([]byte, error) {
	answer, _, err := ReadAnswerCanonical(profile, status, body)
	return answer, err
}

// ReadAnswerCanonical is ReadAnswer that also returns the answer's RFC 8785
// canonical form, written from the parse that checked it: nil for export@1,
// whose answer is not parsed, and for an answer that has no canonical form
// (a number beyond a double's range), which ReadAnswer does not refuse.
func ReadAnswerCanonical(profile string, status int, body []byte) (answer, canonical []byte, err error) {
	fail := func(reason string) error { return &AnswerError{Profile: profile, Status: status, Reason: reason} }
	if !knownProfile(profile) && profile != receipts.WireExport {
		return nil, nil, planError("wire.profile", reasonUnknownProfile)
	}
	if reason := statusReason(profile, status); reason != "" {
		return nil, nil, fail(reason)
	}
	if len(body) > MaxAnswerBytes {
		return nil, nil, fail(ReasonTooLarge)
	}
	if profile == receipts.WireExport {
		return body, nil, nil
	}
	tree, err := canon.Parse(body, answerOptions)
	if err != nil {
		return nil, nil, fail(ReasonNotJSON)
	}
	if tree.Kind != canon.Object {
		return nil, nil, fail(ReasonShape)
	}
	var reason string
	var doc *canon.Value
	if profile == receipts.WireOpenAIChat {
		answer, doc, reason = openAIAnswer(tree)
	} else {
		answer, doc, reason = anthropicAnswer(tree, body)
	}
	if reason != "" {
		return nil, nil, fail(reason)
	}
	// Sized for the answer: a canonical form is rarely longer than the
	// text it was parsed from.
	if c, err := doc.AppendCanonical(make([]byte, 0, len(answer)+len(answer)/16)); err == nil {
		canonical = c
	}
	return answer, canonical, nil
}

// statusReason classifies an HTTP status: "" for the profile's success
// status (any 2xx for export@1, 200 for the provider profiles).
func statusReason(profile string, status int) string {
	switch {
	case status == http.StatusOK, profile == receipts.WireExport && status/100 == 2:
		return ""
	case status == http.StatusTooManyRequests:
		return ReasonRateLimited
	case status >= 500 && status <= 599:
		return ReasonServerError
	case status >= 300 && status <= 399:
		return ReasonRedirect
	case status >= 400 && status <= 499:
		return ReasonClientError
	}
	return ReasonStatus
}

// openAIAnswer returns the answer of an openai-chat@1 response, its parse,
// or the reason it has none.
func openAIAnswer(root *canon.Value) ([]byte, *canon.Value, string) {
	choices := member(root, "choices")
	if choices == nil || choices.Kind != canon.Array {
		return nil, nil, ReasonShape
	}
	if len(choices.Elems) != 1 {
		return nil, nil, ReasonChoices
	}
	c := &choices.Elems[0]
	if c.Kind != canon.Object {
		return nil, nil, ReasonShape
	}
	switch fr := member(c, "finish_reason"); {
	case fr == nil || fr.Kind != canon.String:
		return nil, nil, ReasonShape
	case string(fr.Str) == "stop":
	case string(fr.Str) == "length":
		return nil, nil, ReasonTruncated
	case string(fr.Str) == "content_filter":
		return nil, nil, ReasonContentFilter
	case string(fr.Str) == "tool_calls", string(fr.Str) == "function_call":
		return nil, nil, ReasonToolCall
	default:
		return nil, nil, ReasonStopReason
	}
	msg := member(c, "message")
	if msg == nil || msg.Kind != canon.Object {
		return nil, nil, ReasonShape
	}
	if r := member(msg, "refusal"); r != nil && r.Kind != canon.Null {
		return nil, nil, ReasonRefusal
	}
	for _, k := range []string{"tool_calls", "function_call"} {
		if tc := member(msg, k); tc != nil && tc.Kind != canon.Null && !(tc.Kind == canon.Array && len(tc.Elems) == 0) {
			return nil, nil, ReasonToolCall
		}
	}
	content := member(msg, "content")
	switch {
	case content == nil || content.Kind == canon.Null:
		return nil, nil, ReasonNoContent
	case content.Kind != canon.String:
		return nil, nil, ReasonShape
	}
	doc, err := canon.Parse(content.Str, answerOptions)
	if err != nil {
		return nil, nil, ReasonContentJSON
	}
	// The decoded content is the parse's own copy of it, capped to its
	// length: it shares no memory with the response.
	return content.Str, doc, ""
}

// anthropicAnswer returns the answer of an anthropic-messages@1 response,
// its parse, or the reason it has none.
func anthropicAnswer(root *canon.Value, body []byte) ([]byte, *canon.Value, string) {
	if t := member(root, "type"); t == nil || t.Kind != canon.String || string(t.Str) != "message" {
		return nil, nil, ReasonShape
	}
	switch sr := member(root, "stop_reason"); {
	case sr == nil || sr.Kind != canon.String:
		return nil, nil, ReasonShape
	case string(sr.Str) == "tool_use":
	case string(sr.Str) == "max_tokens", string(sr.Str) == "model_context_window_exceeded":
		return nil, nil, ReasonTruncated
	case string(sr.Str) == "refusal":
		return nil, nil, ReasonRefusal
	case string(sr.Str) == "end_turn", string(sr.Str) == "stop_sequence", string(sr.Str) == "pause_turn":
		return nil, nil, ReasonNoToolUse
	default:
		return nil, nil, ReasonStopReason
	}
	content := member(root, "content")
	if content == nil || content.Kind != canon.Array {
		return nil, nil, ReasonShape
	}
	var input *canon.Value
	for i := range content.Elems {
		b := &content.Elems[i]
		if b.Kind != canon.Object {
			return nil, nil, ReasonShape
		}
		t := member(b, "type")
		if t == nil || t.Kind != canon.String {
			return nil, nil, ReasonShape
		}
		if string(t.Str) != "tool_use" {
			continue
		}
		if input != nil {
			return nil, nil, ReasonManyToolUse
		}
		if n := member(b, "name"); n == nil || n.Kind != canon.String || string(n.Str) != SchemaName {
			return nil, nil, ReasonToolName
		}
		if input = member(b, "input"); input == nil || input.Kind != canon.Object {
			return nil, nil, ReasonInputObject
		}
	}
	if input == nil {
		return nil, nil, ReasonNoToolUse
	}
	return bytes.Clone(body[input.Off:input.End]), input, ""
}
