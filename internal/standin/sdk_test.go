package standin_test

// The official SDKs talk to the stand-ins: every answer decodes into the
// SDK's response type with no member the SDK does not know, every error
// into the SDK's error type, and the SDK's own redelivery honours the
// stand-in's Retry-After. The SDKs are dependencies of these tests only.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/receipts"
)

func openAIClient(base string, retries int) openai.Client {
	return openai.NewClient(ooption.WithBaseURL(base), ooption.WithAPIKey(key), ooption.WithMaxRetries(retries))
}

func anthropicClient(base string, retries int) anthropic.Client {
	return anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey(key), aoption.WithMaxRetries(retries))
}

// openAIParams decodes the wire body into the SDK's request type, so that
// the SDK sends what privacycut would.
func openAIParams(t *testing.T) openai.ChatCompletionNewParams {
	t.Helper()
	var p openai.ChatCompletionNewParams
	if err := json.Unmarshal(body(t, receipts.WireOpenAIChat), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func anthropicParams(t *testing.T) anthropic.MessageNewParams {
	t.Helper()
	var p anthropic.MessageNewParams
	if err := json.Unmarshal(body(t, receipts.WireAnthropicMessages), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

func noExtra(t *testing.T, what string, extra map[string]any) {
	t.Helper()
	if len(extra) > 0 {
		t.Errorf("%s has members the SDK does not know: %v", what, extra)
	}
}

func TestOpenAISDKReadsStandin(t *testing.T) {
	srv := httptest.NewServer(standin.New(standin.Options{Credential: key}))
	defer srv.Close()
	for _, mode := range []string{standin.Honest, standin.Refusal, standin.Truncated, standin.NoToolUse} {
		t.Run(mode, func(t *testing.T) {
			c := openAIClient(srv.URL+"/"+mode+"/v1/", 0)
			comp, err := c.Chat.Completions.New(context.Background(), openAIParams(t))
			if err != nil {
				t.Fatalf("SDK: %v", err)
			}
			noExtra(t, "chat.completion", fieldsOf(comp.JSON.ExtraFields))
			noExtra(t, "choice", fieldsOf(comp.Choices[0].JSON.ExtraFields))
			noExtra(t, "message", fieldsOf(comp.Choices[0].Message.JSON.ExtraFields))
			noExtra(t, "usage", fieldsOf(comp.Usage.JSON.ExtraFields))
			if !comp.JSON.ID.Valid() || !comp.JSON.Created.Valid() || !comp.Choices[0].JSON.FinishReason.Valid() || len(comp.Choices) != 1 {
				t.Errorf("required fields missing: %s", comp.RawJSON())
			}
			m := comp.Choices[0].Message
			switch mode {
			case standin.Refusal:
				if m.Refusal == "" || m.Content != "" {
					t.Errorf("refusal read as %+v", m)
				}
			case standin.Truncated:
				if comp.Choices[0].FinishReason != "length" {
					t.Errorf("finish_reason %q", comp.Choices[0].FinishReason)
				}
			default:
				if comp.Choices[0].FinishReason != "stop" || m.Content == "" {
					t.Errorf("answer %+v", comp.Choices[0])
				}
			}
		})
	}
}

func TestOpenAISDKErrors(t *testing.T) {
	srv := httptest.NewServer(standin.New(standin.Options{Credential: key, RetryAfter: "0"}))
	defer srv.Close()
	for _, tt := range []struct {
		mode   string
		status int
	}{{standin.RateLimited, 429}, {standin.ServerError, 500}, {standin.Overloaded, 503}} {
		c := openAIClient(srv.URL+"/"+tt.mode+"/v1/", 0)
		_, err := c.Chat.Completions.New(context.Background(), openAIParams(t))
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != tt.status || ae.Type == "" || ae.Message == "" {
			t.Errorf("%s: %v", tt.mode, err)
			continue
		}
		noExtra(t, "error", fieldsOf(ae.JSON.ExtraFields))
	}
	c := openai.NewClient(ooption.WithBaseURL(srv.URL+"/v1/"), ooption.WithAPIKey("wrong"), ooption.WithMaxRetries(0))
	_, err := c.Chat.Completions.New(context.Background(), openAIParams(t))
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Code != "invalid_api_key" {
		t.Errorf("wrong key: %v", err)
	}
	// The SDK's own redelivery after two 429s with Retry-After: 0.
	s := standin.New(standin.Options{Credential: key, RetryAfter: "0", Script: []string{standin.RateLimited, standin.RateLimited}})
	srv2 := httptest.NewServer(s)
	defer srv2.Close()
	c2 := openAIClient(srv2.URL+"/v1/", 2)
	if _, err := c2.Chat.Completions.New(context.Background(), openAIParams(t)); err != nil {
		t.Errorf("SDK redelivery: %v", err)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("stand-in got %d requests, want 3", n)
	}
}

func TestAnthropicSDKReadsStandin(t *testing.T) {
	srv := httptest.NewServer(standin.New(standin.Options{Credential: key}))
	defer srv.Close()
	for _, mode := range []string{standin.Honest, standin.Refusal, standin.Truncated, standin.NoToolUse} {
		t.Run(mode, func(t *testing.T) {
			c := anthropicClient(srv.URL+"/"+mode+"/", 0)
			msg, err := c.Messages.New(context.Background(), anthropicParams(t))
			if err != nil {
				t.Fatalf("SDK: %v", err)
			}
			noExtra(t, "message", fieldsOf(msg.JSON.ExtraFields))
			noExtra(t, "usage", fieldsOf(msg.Usage.JSON.ExtraFields))
			for _, b := range msg.Content {
				switch b.Type {
				case "tool_use":
					noExtra(t, "tool_use block", fieldsOf(b.AsToolUse().JSON.ExtraFields))
				case "text":
					noExtra(t, "text block", fieldsOf(b.AsText().JSON.ExtraFields))
				default:
					t.Errorf("content block of type %q", b.Type)
				}
			}
			if !msg.JSON.ID.Valid() || !msg.JSON.StopReason.Valid() || msg.Type != "message" {
				t.Errorf("required fields missing: %s", msg.RawJSON())
			}
			want := map[string]anthropic.StopReason{
				standin.Honest: "tool_use", standin.Refusal: "refusal", standin.Truncated: "max_tokens", standin.NoToolUse: "end_turn",
			}[mode]
			if msg.StopReason != want {
				t.Errorf("stop_reason %q, want %q", msg.StopReason, want)
			}
			if mode == standin.Honest {
				tu := msg.Content[0].AsToolUse()
				if tu.Name != "answer" || len(tu.Input) == 0 {
					t.Errorf("tool_use %+v", tu)
				}
			}
		})
	}
}

func TestAnthropicSDKErrors(t *testing.T) {
	srv := httptest.NewServer(standin.New(standin.Options{Credential: key, RetryAfter: "0"}))
	defer srv.Close()
	for _, tt := range []struct {
		mode   string
		status int
		typ    string
	}{{standin.RateLimited, 429, "rate_limit_error"}, {standin.ServerError, 500, "api_error"}, {standin.Overloaded, 529, "overloaded_error"}} {
		c := anthropicClient(srv.URL+"/"+tt.mode+"/", 0)
		_, err := c.Messages.New(context.Background(), anthropicParams(t))
		var ae *anthropic.Error
		if !errors.As(err, &ae) || ae.StatusCode != tt.status || string(ae.Type()) != tt.typ || ae.RequestID == "" {
			t.Errorf("%s: %v", tt.mode, err)
		}
	}
	c := anthropic.NewClient(aoption.WithBaseURL(srv.URL+"/"), aoption.WithAPIKey("wrong"), aoption.WithMaxRetries(0))
	_, err := c.Messages.New(context.Background(), anthropicParams(t))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 401 || ae.Type() != "authentication_error" {
		t.Errorf("wrong key: %v", err)
	}
	s := standin.New(standin.Options{Credential: key, RetryAfter: "0", Script: []string{standin.Overloaded}})
	srv2 := httptest.NewServer(s)
	defer srv2.Close()
	c2 := anthropicClient(srv2.URL+"/", 1)
	if _, err := c2.Messages.New(context.Background(), anthropicParams(t)); err != nil {
		t.Errorf("SDK redelivery: %v", err)
	}
	if n := len(s.Requests()); n != 2 {
		t.Errorf("stand-in got %d requests, want 2", n)
	}
}

// fieldsOf lists the names of an SDK type's extra fields.
func fieldsOf[F any](m map[string]F) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	return out
}
