package wire_test

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/wire"
)

const answerDoc = `{"findings":[],"summary":"PROVIDER-CANARY"}`

// openAIResponse is a chat.completion with one choice whose message is
// given as JSON members.
func openAIResponse(finish, message string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1767348000,"model":"m","choices":[{"index":0,` +
		`"message":{"role":"assistant",` + message + `},"logprobs":null,"finish_reason":"` + finish + `"}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
}

func quoted(s string) string {
	b, _ := canon.Marshal(s)
	return string(b)
}

// anthropicResponse is a message with the given content blocks.
func anthropicResponse(stop, content string) string {
	return `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[` + content + `],` +
		`"stop_reason":"` + stop + `","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`
}

const toolUse = `{"type":"tool_use","id":"toolu_1","name":"answer","input":` + answerDoc + `}`

// TestReadAnswer: the usable answers of each profile, and every unusable
// one refused UPSTREAM_FAILED with its fixed reason, quoting nothing of the
// provider's text.
func TestReadAnswer(t *testing.T) {
	type tc struct {
		name    string
		profile string
		status  int
		body    string
		answer  string // the answer when reason is ""
		reason  string
	}
	oa, an, ex := receipts.WireOpenAIChat, receipts.WireAnthropicMessages, receipts.WireExport
	good := openAIResponse("stop", `"content":`+quoted(answerDoc)+`,"refusal":null,"annotations":[]`)
	tests := []tc{
		{"openai answer", oa, 200, good, answerDoc, ""},
		{"openai answer without refusal member", oa, 200, openAIResponse("stop", `"content":`+quoted(answerDoc)), answerDoc, ""},
		{"openai empty tool_calls", oa, 200, openAIResponse("stop", `"content":`+quoted(answerDoc)+`,"tool_calls":[]`), answerDoc, ""},
		{"openai content with spaces kept", oa, 200, openAIResponse("stop", `"content":`+quoted(" {\"a\": 1}\n")), " {\"a\": 1}\n", ""},
		{"openai 429", oa, 429, `{"error":{"message":"PROVIDER-CANARY","type":"requests","code":"rate_limit_exceeded"}}`, "", wire.ReasonRateLimited},
		{"openai 500", oa, 500, `{"error":{"message":"PROVIDER-CANARY"}}`, "", wire.ReasonServerError},
		{"openai 503", oa, 503, ``, "", wire.ReasonServerError},
		{"openai 401", oa, 401, `{"error":{"message":"PROVIDER-CANARY"}}`, "", wire.ReasonClientError},
		{"openai 400", oa, 400, good, "", wire.ReasonClientError},
		{"openai 302", oa, 302, ``, "", wire.ReasonRedirect},
		{"openai 201", oa, 201, good, "", wire.ReasonStatus},
		{"openai 100", oa, 100, good, "", wire.ReasonStatus},
		{"openai not JSON", oa, 200, `PROVIDER-CANARY`, "", wire.ReasonNotJSON},
		{"openai duplicate key", oa, 200, `{"choices":[],"choices":[]}`, "", wire.ReasonNotJSON},
		{"openai trailing data", oa, 200, good + `{}`, "", wire.ReasonNotJSON},
		{"openai array", oa, 200, `[]`, "", wire.ReasonShape},
		{"openai no choices", oa, 200, `{"object":"chat.completion"}`, "", wire.ReasonShape},
		{"openai zero choices", oa, 200, `{"choices":[]}`, "", wire.ReasonChoices},
		{"openai two choices", oa, 200, strings.Replace(good, `"choices":[{`, `"choices":[{"index":1,"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"},{`, 1), "", wire.ReasonChoices},
		{"openai truncated", oa, 200, openAIResponse("length", `"content":"{\"summary\":\"PROVIDER-CANARY`+`"`), "", wire.ReasonTruncated},
		{"openai content filter", oa, 200, openAIResponse("content_filter", `"content":null`), "", wire.ReasonContentFilter},
		{"openai tool_calls finish", oa, 200, openAIResponse("tool_calls", `"content":null`), "", wire.ReasonToolCall},
		{"openai unknown finish", oa, 200, openAIResponse("PROVIDER-CANARY", `"content":"{}"`), "", wire.ReasonStopReason},
		{"openai finish missing", oa, 200, `{"choices":[{"message":{"content":"{}"}}]}`, "", wire.ReasonShape},
		{"openai refusal", oa, 200, openAIResponse("stop", `"content":null,"refusal":"PROVIDER-CANARY"`), "", wire.ReasonRefusal},
		{"openai empty refusal", oa, 200, openAIResponse("stop", `"content":"{}","refusal":""`), "", wire.ReasonRefusal},
		{"openai tool calls", oa, 200, openAIResponse("stop", `"content":"{}","tool_calls":[{"id":"c","type":"function","function":{"name":"PROVIDER-CANARY","arguments":"{}"}}]`), "", wire.ReasonToolCall},
		{"openai no content", oa, 200, openAIResponse("stop", `"content":null`), "", wire.ReasonNoContent},
		{"openai content missing", oa, 200, openAIResponse("stop", `"annotations":[]`), "", wire.ReasonNoContent},
		{"openai content not a string", oa, 200, openAIResponse("stop", `"content":{"a":1}`), "", wire.ReasonShape},
		{"openai content prose", oa, 200, openAIResponse("stop", `"content":"PROVIDER-CANARY"`), "", wire.ReasonContentJSON},
		{"openai content duplicate key", oa, 200, openAIResponse("stop", `"content":`+quoted(`{"a":1,"a":2}`)), "", wire.ReasonContentJSON},
		{"openai message missing", oa, 200, `{"choices":[{"finish_reason":"stop"}]}`, "", wire.ReasonShape},

		{"anthropic answer", an, 200, anthropicResponse("tool_use", toolUse), answerDoc, ""},
		{"anthropic answer after text", an, 200, anthropicResponse("tool_use", `{"type":"text","text":"PROVIDER-CANARY"},`+toolUse), answerDoc, ""},
		{"anthropic input as written", an, 200, anthropicResponse("tool_use", `{"type":"tool_use","id":"t","name":"answer","input":{ "a" : [1, 2] }}`), `{ "a" : [1, 2] }`, ""},
		{"anthropic 429", an, 429, `{"type":"error","error":{"type":"rate_limit_error","message":"PROVIDER-CANARY"}}`, "", wire.ReasonRateLimited},
		{"anthropic 529", an, 529, `{"type":"error","error":{"type":"overloaded_error","message":"PROVIDER-CANARY"}}`, "", wire.ReasonServerError},
		{"anthropic 400", an, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"PROVIDER-CANARY"}}`, "", wire.ReasonClientError},
		{"anthropic 307", an, 307, ``, "", wire.ReasonRedirect},
		{"anthropic not JSON", an, 200, `<html>PROVIDER-CANARY</html>`, "", wire.ReasonNotJSON},
		{"anthropic wrong type", an, 200, strings.Replace(anthropicResponse("tool_use", toolUse), `"type":"message"`, `"type":"error"`, 1), "", wire.ReasonShape},
		{"anthropic truncated", an, 200, anthropicResponse("max_tokens", `{"type":"text","text":"PROVIDER-CANARY"}`), "", wire.ReasonTruncated},
		{"anthropic truncated tool_use", an, 200, anthropicResponse("max_tokens", toolUse), "", wire.ReasonTruncated},
		{"anthropic refusal", an, 200, anthropicResponse("refusal", `{"type":"text","text":"PROVIDER-CANARY"}`), "", wire.ReasonRefusal},
		{"anthropic end_turn", an, 200, anthropicResponse("end_turn", `{"type":"text","text":"PROVIDER-CANARY"}`), "", wire.ReasonNoToolUse},
		{"anthropic unknown stop", an, 200, anthropicResponse("PROVIDER-CANARY", toolUse), "", wire.ReasonStopReason},
		{"anthropic stop missing", an, 200, `{"type":"message","content":[` + toolUse + `]}`, "", wire.ReasonShape},
		{"anthropic tool_use without block", an, 200, anthropicResponse("tool_use", `{"type":"text","text":"PROVIDER-CANARY"}`), "", wire.ReasonNoToolUse},
		{"anthropic other tool", an, 200, anthropicResponse("tool_use", `{"type":"tool_use","id":"t","name":"PROVIDER-CANARY","input":{}}`), "", wire.ReasonToolName},
		{"anthropic two tool_use", an, 200, anthropicResponse("tool_use", toolUse+`,`+toolUse), "", wire.ReasonManyToolUse},
		{"anthropic input not object", an, 200, anthropicResponse("tool_use", `{"type":"tool_use","id":"t","name":"answer","input":"PROVIDER-CANARY"}`), "", wire.ReasonInputObject},
		{"anthropic input missing", an, 200, anthropicResponse("tool_use", `{"type":"tool_use","id":"t","name":"answer"}`), "", wire.ReasonInputObject},
		{"anthropic block not object", an, 200, anthropicResponse("tool_use", `"PROVIDER-CANARY"`), "", wire.ReasonShape},
		{"anthropic content missing", an, 200, `{"type":"message","stop_reason":"tool_use"}`, "", wire.ReasonShape},

		{"export 200", ex, 200, `PROVIDER-CANARY not even JSON`, `PROVIDER-CANARY not even JSON`, ""},
		{"export 204", ex, 204, ``, ``, ""},
		{"export 429", ex, 429, `PROVIDER-CANARY`, "", wire.ReasonRateLimited},
		{"export 404", ex, 404, `PROVIDER-CANARY`, "", wire.ReasonClientError},
		{"export 301", ex, 301, `PROVIDER-CANARY`, "", wire.ReasonRedirect},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.ReadAnswer(tc.profile, tc.status, []byte(tc.body))
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("ReadAnswer: %v", err)
				}
				if diff := cmp.Diff(tc.answer, string(got)); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
				return
			}
			var ae *wire.AnswerError
			if !errors.As(err, &ae) {
				t.Fatalf("ReadAnswer = %q, %v; want an *AnswerError", got, err)
			}
			want := wire.AnswerError{Profile: tc.profile, Status: tc.status, Reason: tc.reason}
			if diff := cmp.Diff(want, *ae); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
			if ae.Code() != receipts.UpstreamFailed || !strings.Contains(err.Error(), "UPSTREAM_FAILED") {
				t.Errorf("code %s, message %q", ae.Code(), err)
			}
			if strings.Contains(err.Error(), "CANARY") {
				t.Errorf("error %q quotes the provider", err)
			}
		})
	}
}

// TestReadAnswerShares: a provider profile's answer shares no memory with
// the response.
func TestReadAnswerShares(t *testing.T) {
	body := []byte(anthropicResponse("tool_use", toolUse))
	a, err := wire.ReadAnswer(receipts.WireAnthropicMessages, 200, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := range body {
		body[i] = 'x'
	}
	if string(a) != answerDoc {
		t.Errorf("answer changed with the response: %q", a)
	}
}

func TestReadAnswerLimits(t *testing.T) {
	big := bytes.Repeat([]byte(" "), wire.MaxAnswerBytes+1)
	for _, profile := range []string{receipts.WireExport, receipts.WireOpenAIChat, receipts.WireAnthropicMessages} {
		_, err := wire.ReadAnswer(profile, 200, big)
		var ae *wire.AnswerError
		if !errors.As(err, &ae) || ae.Reason != wire.ReasonTooLarge {
			t.Errorf("%s: %v, want %s", profile, err, wire.ReasonTooLarge)
		}
	}
	_, err := wire.ReadAnswer("smtp@1", 200, []byte("{}"))
	var we *wire.Error
	if !errors.As(err, &we) || we.Code != receipts.PlanMismatch || we.Field != "wire.profile" {
		t.Errorf("unknown profile: %v", err)
	}
}

var answerReasons = map[string]bool{
	wire.ReasonRateLimited: true, wire.ReasonServerError: true, wire.ReasonRedirect: true, wire.ReasonClientError: true,
	wire.ReasonStatus: true, wire.ReasonTooLarge: true, wire.ReasonNotJSON: true, wire.ReasonShape: true,
	wire.ReasonChoices: true, wire.ReasonTruncated: true, wire.ReasonRefusal: true, wire.ReasonContentFilter: true,
	wire.ReasonToolCall: true, wire.ReasonStopReason: true, wire.ReasonNoContent: true, wire.ReasonContentJSON: true,
	wire.ReasonNoToolUse: true, wire.ReasonToolName: true, wire.ReasonManyToolUse: true, wire.ReasonInputObject: true,
}

// FuzzReadAnswer: for any status and body, ReadAnswer either returns an
// answer that is strict JSON (an object for anthropic-messages@1) or an
// *AnswerError of a fixed reason whose message is made of its fields
// alone. It never panics.
func FuzzReadAnswer(f *testing.F) {
	f.Add(uint8(0), 200, []byte(openAIResponse("stop", `"content":`+quoted(answerDoc))))
	f.Add(uint8(0), 200, []byte(openAIResponse("length", `"content":"{"`)))
	f.Add(uint8(0), 200, []byte(openAIResponse("stop", `"content":null,"refusal":"no"`)))
	f.Add(uint8(1), 200, []byte(anthropicResponse("tool_use", toolUse)))
	f.Add(uint8(1), 200, []byte(anthropicResponse("end_turn", `{"type":"text","text":"x"}`)))
	f.Add(uint8(1), 429, []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"m"}}`))
	f.Add(uint8(2), 200, []byte(`{}`))
	profiles := []string{receipts.WireOpenAIChat, receipts.WireAnthropicMessages, receipts.WireExport}
	f.Fuzz(func(t *testing.T, p uint8, status int, body []byte) {
		profile := profiles[int(p)%len(profiles)]
		a, err := wire.ReadAnswer(profile, status, body)
		a2, canonical, err2 := wire.ReadAnswerCanonical(profile, status, body)
		if !bytes.Equal(a, a2) || (err == nil) != (err2 == nil) {
			t.Fatalf("ReadAnswerCanonical read another answer (%v, %v)", err, err2)
		}
		// The canonical form is the answer's, or nil exactly when the answer
		// has none (or, for export@1, is not parsed).
		if want, cerr := canon.Canonicalize(a); err == nil && profile != receipts.WireExport && (cerr == nil) != (canonical != nil) ||
			cerr == nil && canonical != nil && !bytes.Equal(canonical, want) || profile == receipts.WireExport && canonical != nil {
			t.Fatalf("canonical form %q, want %q (%v)", canonical, want, cerr)
		}
		if err != nil {
			var ae *wire.AnswerError
			if !errors.As(err, &ae) || !answerReasons[ae.Reason] || ae.Status != status || ae.Profile != profile {
				t.Fatalf("refusal %v is not a fixed *AnswerError", err)
			}
			want := (&wire.AnswerError{Profile: profile, Status: status, Reason: ae.Reason}).Error()
			if err.Error() != want {
				t.Fatalf("message %q is not made of the fields", err)
			}
			return
		}
		switch profile {
		case receipts.WireExport:
			if !bytes.Equal(a, body) || status/100 != 2 {
				t.Fatal("export@1 answer is not the 2xx body")
			}
			return
		case receipts.WireAnthropicMessages:
			if v, err := canon.Parse(a, canon.Options{}); err != nil || v.Kind != canon.Object {
				t.Fatalf("anthropic answer is not a JSON object: %v", err)
			}
		default:
			if _, err := canon.Parse(a, canon.Options{}); err != nil {
				t.Fatalf("openai answer is not strict JSON: %v", err)
			}
		}
		if status != 200 {
			t.Fatalf("answer accepted with status %d", status)
		}
	})
}

// BenchmarkReadAnswer reads an openai-chat@1 answer of 500 findings (about
// 140 KB, the size of the answer to a 500-finding report) and writes its
// canonical form, as a gateway does for each irreversible answer; the
// SHA-256 of the same bytes beside it, in the same run, is the baseline.
func BenchmarkReadAnswer(b *testing.B) {
	var doc strings.Builder
	doc.WriteString(`{"summary":"Ranked by severity.","findings":[`)
	for i := range 500 {
		if i > 0 {
			doc.WriteByte(',')
		}
		fmt.Fprintf(&doc, `{"diagnostic":"GO-2024-%04d in golang.org/x/net@v0.17.0: HTTP/2 rapid reset can cause excessive work",`+
			`"severity":"high","owner_module":"⟦pc:owner.module:%08x⟧","owner_team":"⟦pc:owner.team:%08x⟧",`+
			`"action":"upgrade golang.org/x/net to v0.17.0 or later"}`, i, i, i)
	}
	doc.WriteString(`]}`)
	body := []byte(openAIResponse("stop", `"content":`+quoted(doc.String())))
	b.Run("read", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := wire.ReadAnswerCanonical(receipts.WireOpenAIChat, 200, body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			sha256.Sum256(body)
		}
	})
}
