package standin_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/wire"
)

const key = "sk-standin-test-key"

// export is a reversible cut of two records: its tokens must come back in
// the answer at the marked paths.
const export = `{"parts":[{"kind":"block","text":"finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner.module=\"pcv:abcdefghij:module:abcdefghijklmnopqrst\" owner.team=\"pcv:abcdefghij:team:bbbbbbbbbbbbbbbbbbbb\"\n"},{"kind":"query","text":"ask triage.rank-by-severity\n"}],"profile":"closed-diagnostic@1"}`

// body renders the wire body of the export for a profile with
// examples/schema.json.
func body(t testing.TB, profile string) []byte {
	t.Helper()
	c, err := canon.Canonicalize(examples.Schema)
	if err != nil {
		t.Fatal(err)
	}
	p := &receipts.Plan{
		Wire:               &receipts.Wire{Profile: profile, Model: "standin-model", Instruction: "Triage.", MaxOutputTokens: 2048},
		OutputSchemaDigest: receipts.SHA256(c),
	}
	b, err := wire.Render([]byte(export), p, examples.Schema)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type call struct {
	status int
	header http.Header
	body   []byte
}

func post(t testing.TB, url string, hdr map[string]string, b []byte) call {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(b))
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return call{resp.StatusCode, resp.Header, out}
}

var profiles = []struct {
	profile string
	path    string
	headers map[string]string
}{
	{receipts.WireOpenAIChat, standin.OpenAIPath, map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}},
	{receipts.WireAnthropicMessages, standin.AnthropicPath, map[string]string{"X-Api-Key": key, "Anthropic-Version": "2023-06-01", "Content-Type": "application/json"}},
}

// TestProviderModes: each mode's answer, read by the wire package as the
// product reads it.
func TestProviderModes(t *testing.T) {
	tests := []struct {
		mode   string
		status int
		reason string // wire.ReadAnswer's; "" for a usable answer
	}{
		{standin.Honest, 200, ""},
		{standin.Invent, 200, ""},
		{standin.Unmarked, 200, ""},
		{standin.Refusal, 200, wire.ReasonRefusal},
		{standin.Truncated, 200, wire.ReasonTruncated},
		{standin.RateLimited, 429, wire.ReasonRateLimited},
		{standin.ServerError, 500, wire.ReasonServerError},
	}
	for _, pr := range profiles {
		srv := httptest.NewServer(standin.New(standin.Options{Credential: key, RetryAfter: "3"}))
		defer srv.Close()
		for _, tt := range tests {
			t.Run(pr.profile+"/"+tt.mode, func(t *testing.T) {
				b := body(t, pr.profile)
				c := post(t, srv.URL+"/"+tt.mode+pr.path, pr.headers, b)
				if c.status != tt.status {
					t.Fatalf("status %d, want %d: %s", c.status, tt.status, c.body)
				}
				ans, err := wire.ReadAnswer(pr.profile, c.status, c.body)
				if tt.reason != "" {
					var ae *wire.AnswerError
					if !errors.As(err, &ae) || ae.Reason != tt.reason {
						t.Fatalf("ReadAnswer: %v, want %s", err, tt.reason)
					}
					if tt.status == 429 && c.header.Get("Retry-After") != "3" {
						t.Errorf("Retry-After %q", c.header.Get("Retry-After"))
					}
					return
				}
				if err != nil {
					t.Fatalf("ReadAnswer: %v", err)
				}
				var a standin.Answer
				if err := canon.Unmarshal(ans, &a, canon.Options{}); err != nil {
					t.Fatalf("answer does not read as examples/schema.json's shape: %v", err)
				}
				mod := a.Findings[0].OwnerModule
				switch tt.mode {
				case standin.Honest:
					if mod != "pcv:abcdefghij:module:abcdefghijklmnopqrst" || a.Findings[0].OwnerTeam != "pcv:abcdefghij:team:bbbbbbbbbbbbbbbbbbbb" {
						t.Errorf("honest answer %+v", a)
					}
				case standin.Invent:
					if mod == "pcv:abcdefghij:module:abcdefghijklmnopqrst" || len(mod) != len("pcv:abcdefghij:module:abcdefghijklmnopqrst") {
						t.Errorf("invented token %q", mod)
					}
				case standin.Unmarked:
					if a.Findings[0].Action != mod {
						t.Errorf("unmarked %+v", a.Findings[0])
					}
				}
			})
		}
	}
	t.Run("anthropic/no-tool-use", func(t *testing.T) {
		srv := httptest.NewServer(standin.Handler())
		defer srv.Close()
		c := post(t, srv.URL+"/"+standin.NoToolUse+standin.AnthropicPath, profiles[1].headers, body(t, receipts.WireAnthropicMessages))
		if _, err := wire.ReadAnswer(receipts.WireAnthropicMessages, c.status, c.body); !isReason(err, wire.ReasonNoToolUse) {
			t.Errorf("ReadAnswer: %v", err)
		}
		c = post(t, srv.URL+"/"+standin.NoToolUse+standin.OpenAIPath, profiles[0].headers, body(t, receipts.WireOpenAIChat))
		if _, err := wire.ReadAnswer(receipts.WireOpenAIChat, c.status, c.body); !isReason(err, wire.ReasonContentJSON) {
			t.Errorf("openai prose: %v", err)
		}
		c = post(t, srv.URL+"/"+standin.Overloaded+standin.AnthropicPath, profiles[1].headers, body(t, receipts.WireAnthropicMessages))
		if c.status != 529 || c.header.Get("Retry-After") == "" {
			t.Errorf("overloaded: %d %v", c.status, c.header)
		}
	})
}

func isReason(err error, reason string) bool {
	var ae *wire.AnswerError
	return errors.As(err, &ae) && ae.Reason == reason
}

// TestProviderCountedModes: "rate-limited-2" answers 429 twice, then
// honestly; a script overrides the path's mode request by request.
func TestProviderCountedModes(t *testing.T) {
	s := standin.New(standin.Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	pr := profiles[0]
	var got []int
	for range 3 {
		got = append(got, post(t, srv.URL+"/rate-limited-2"+pr.path, pr.headers, body(t, pr.profile)).status)
	}
	if diff := cmp.Diff([]int{429, 429, 200}, got); diff != "" {
		t.Errorf("statuses (-want +got):\n%s", diff)
	}

	s = standin.New(standin.Options{Script: []string{standin.ServerError, standin.RateLimited}})
	srv2 := httptest.NewServer(s)
	defer srv2.Close()
	got = nil
	for range 3 {
		got = append(got, post(t, srv2.URL+pr.path, pr.headers, body(t, pr.profile)).status)
	}
	if diff := cmp.Diff([]int{500, 429, 200}, got); diff != "" {
		t.Errorf("scripted statuses (-want +got):\n%s", diff)
	}
}

// TestProviderRecordsBytes: the stand-in records exactly the bytes and
// headers it received.
func TestProviderRecordsBytes(t *testing.T) {
	s := standin.New(standin.Options{})
	srv := httptest.NewServer(s)
	defer srv.Close()
	b := body(t, receipts.WireAnthropicMessages)
	post(t, srv.URL+standin.AnthropicPath, profiles[1].headers, b)
	got := s.Requests()
	if len(got) != 1 || !bytes.Equal(got[0].Body, b) || got[0].Header.Get("X-Api-Key") != key || got[0].Path != standin.AnthropicPath {
		t.Fatalf("recorded %+v", got)
	}
}

// TestProviderRefusesRequests: what the providers refuse, the stand-ins
// refuse, with the provider's status and error object shape.
func TestProviderRefusesRequests(t *testing.T) {
	s := standin.New(standin.Options{Credential: key})
	srv := httptest.NewServer(s)
	defer srv.Close()
	edit := func(profile string, f func(m map[string]any)) []byte {
		var m map[string]any
		json.Unmarshal(body(t, profile), &m)
		f(m)
		b, _ := json.Marshal(m)
		return b
	}
	without := func(h map[string]string, k string) map[string]string {
		out := map[string]string{}
		for kk, v := range h {
			if kk != k {
				out[kk] = v
			}
		}
		return out
	}
	with := func(h map[string]string, k, v string) map[string]string {
		out := without(h, k)
		out[k] = v
		return out
	}
	oa, an := profiles[0], profiles[1]
	tests := []struct {
		name    string
		pr      int
		headers map[string]string
		body    []byte
		status  int
		errType string
	}{
		{"openai no key", 0, without(oa.headers, "Authorization"), body(t, oa.profile), 401, "invalid_request_error"},
		{"openai wrong key", 0, with(oa.headers, "Authorization", "Bearer other"), body(t, oa.profile), 401, "invalid_request_error"},
		{"openai not JSON", 0, oa.headers, []byte("{"), 400, "invalid_request_error"},
		{"openai unknown member", 0, oa.headers, edit(oa.profile, func(m map[string]any) { m["labels"] = 1 }), 400, "invalid_request_error"},
		{"openai no model", 0, oa.headers, edit(oa.profile, func(m map[string]any) { delete(m, "model") }), 400, "invalid_request_error"},
		{"openai no messages", 0, oa.headers, edit(oa.profile, func(m map[string]any) { m["messages"] = []any{} }), 400, "invalid_request_error"},
		{"openai messages twice", 0, oa.headers, append([]byte(`{"messages":[{"role":"user","content":"x"}],`), body(t, oa.profile)[1:]...), 400, "invalid_request_error"},
		{"openai messages twice, with content parts", 0, oa.headers, append([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],`), body(t, oa.profile)[1:]...), 400, "invalid_request_error"},
		{"openai message without content", 0, oa.headers, edit(oa.profile, func(m map[string]any) {
			m["messages"] = []any{map[string]any{"role": "user"}}
		}), 400, "invalid_request_error"},
		{"openai content not text", 0, oa.headers, edit(oa.profile, func(m map[string]any) {
			m["messages"] = []any{map[string]any{"role": "user", "content": 7}}
		}), 400, "invalid_request_error"},
		{"openai content part not text", 0, oa.headers, edit(oa.profile, func(m map[string]any) {
			m["messages"] = []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url", "text": "x"}}}}
		}), 400, "invalid_request_error"},
		{"openai unknown role", 0, oa.headers, edit(oa.profile, func(m map[string]any) {
			m["messages"] = []any{map[string]any{"role": "tool", "content": "x"}}
		}), 400, "invalid_request_error"},
		{"openai zero tokens", 0, oa.headers, edit(oa.profile, func(m map[string]any) { m["max_completion_tokens"] = 0 }), 400, "invalid_request_error"},
		{"openai strict over a loose schema", 0, oa.headers, edit(oa.profile, func(m map[string]any) {
			m["response_format"].(map[string]any)["json_schema"].(map[string]any)["strict"] = true
		}), 400, "invalid_request_error"},
		{"openai stream", 0, oa.headers, edit(oa.profile, func(m map[string]any) { m["stream"] = true }), 400, "invalid_request_error"},
		{"anthropic no key", 1, without(an.headers, "X-Api-Key"), body(t, an.profile), 401, "authentication_error"},
		{"anthropic wrong key", 1, with(an.headers, "X-Api-Key", "other"), body(t, an.profile), 401, "authentication_error"},
		{"anthropic no version", 1, without(an.headers, "Anthropic-Version"), body(t, an.profile), 400, "invalid_request_error"},
		{"anthropic unknown member", 1, an.headers, edit(an.profile, func(m map[string]any) { m["response_format"] = 1 }), 400, "invalid_request_error"},
		{"anthropic no max_tokens", 1, an.headers, edit(an.profile, func(m map[string]any) { delete(m, "max_tokens") }), 400, "invalid_request_error"},
		{"anthropic empty text block", 1, an.headers, edit(an.profile, func(m map[string]any) {
			m["messages"] = []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": ""}}}}
		}), 400, "invalid_request_error"},
		{"anthropic tool_choice names no tool", 1, an.headers, edit(an.profile, func(m map[string]any) {
			m["tool_choice"] = map[string]any{"type": "tool", "name": "other"}
		}), 400, "invalid_request_error"},
		{"anthropic input_schema not an object schema", 1, an.headers, edit(an.profile, func(m map[string]any) {
			m["tools"] = []any{map[string]any{"name": "answer", "input_schema": map[string]any{"type": "array"}}}
		}), 400, "invalid_request_error"},
		{"anthropic first message not user", 1, an.headers, edit(an.profile, func(m map[string]any) {
			m["messages"] = []any{map[string]any{"role": "assistant", "content": "x"}}
		}), 400, "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := profiles[tt.pr]
			c := post(t, srv.URL+pr.path, tt.headers, tt.body)
			if c.status != tt.status {
				t.Fatalf("status %d, want %d: %s", c.status, tt.status, c.body)
			}
			var typ string
			if pr.profile == receipts.WireOpenAIChat {
				var e struct {
					Error struct {
						Message string  `json:"message"`
						Type    string  `json:"type"`
						Param   *string `json:"param"`
						Code    *string `json:"code"`
					} `json:"error"`
				}
				if err := canon.Unmarshal(c.body, &e, canon.Options{}); err != nil {
					t.Fatalf("not an OpenAI error object: %v", err)
				}
				typ = e.Error.Type
			} else {
				var e struct {
					Type  string `json:"type"`
					Error struct {
						Type    string `json:"type"`
						Message string `json:"message"`
					} `json:"error"`
					RequestID string `json:"request_id"`
				}
				if err := canon.Unmarshal(c.body, &e, canon.Options{}); err != nil || e.Type != "error" || !strings.HasPrefix(e.RequestID, "req_") {
					t.Fatalf("not an Anthropic error object: %v %s", err, c.body)
				}
				typ = e.Error.Type
			}
			if typ != tt.errType {
				t.Errorf("error type %q, want %q", typ, tt.errType)
			}
			if _, err := wire.ReadAnswer(pr.profile, c.status, c.body); err == nil {
				t.Error("an error answer read as usable")
			}
		})
	}
}

// TestExportStandinStillServes: the Export@1 stand-in answers as before.
func TestExportStandinStillServes(t *testing.T) {
	srv := httptest.NewServer(standin.Handler())
	defer srv.Close()
	c := post(t, srv.URL+"/v1/"+standin.Honest, nil, []byte(export))
	var a standin.Answer
	if c.status != 200 || json.Unmarshal(c.body, &a) != nil || len(a.Findings) != 1 {
		t.Fatalf("export stand-in: %d %s", c.status, c.body)
	}
	if c := post(t, srv.URL+"/v1/other", nil, []byte(export)); c.status != 404 {
		t.Errorf("unknown mode: %d", c.status)
	}
}

// TestProviderReadsContentParts: a user message whose content is an array
// of text parts is read as the parts joined, as the same text in a string.
func TestProviderReadsContentParts(t *testing.T) {
	srv := httptest.NewServer(standin.New(standin.Options{Credential: key}))
	defer srv.Close()
	oa := profiles[0]
	var m map[string]any
	if err := json.Unmarshal(body(t, oa.profile), &m); err != nil {
		t.Fatal(err)
	}
	asString := post(t, srv.URL+oa.path, oa.headers, mustJSON(t, m))
	for _, msg := range m["messages"].([]any) {
		msg := msg.(map[string]any)
		if text, ok := msg["content"].(string); ok && msg["role"] == "user" {
			half := len(text) / 2
			msg["content"] = []any{map[string]any{"type": "text", "text": text[:half]}, map[string]any{"type": "text", "text": text[half:]}}
		}
	}
	asParts := post(t, srv.URL+oa.path, oa.headers, mustJSON(t, m))
	if asString.status != http.StatusOK || asParts.status != http.StatusOK {
		t.Fatalf("status %d and %d: %s", asString.status, asParts.status, asParts.body)
	}
	content := func(b []byte) string {
		var r struct {
			Choices []struct {
				Message struct {
					Content string `json:"content"`
				} `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("answer %s: %v", b, err)
		}
		return r.Choices[0].Message.Content
	}
	if a, b := content(asString.body), content(asParts.body); a != b || !strings.Contains(a, "pcv:abcdefghij:module:") {
		t.Errorf("the parts were read otherwise than the string:\n%s\n%s", a, b)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
