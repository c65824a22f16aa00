package cuttest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// WireBody renders the wire body of a provider profile for the export
// texts, with Go structs encoded by canon.Marshal (which writes RFC 8785):
// a renderer of its own, written from the formats' description.
func WireBody(t testing.TB, w *receipts.Wire, texts []string, schema []byte) []byte {
	t.Helper()
	var doc any
	if err := canon.Unmarshal(schema, &doc, canon.Options{}); err != nil {
		t.Fatalf("cuttest: output schema: %v", err)
	}
	doc = strip(doc)
	stripped := json.RawMessage(must(canon.Marshal(doc)))
	switch w.Profile {
	case receipts.WireOpenAIChat:
		type message struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		type jsonSchema struct {
			Name   string          `json:"name"`
			Strict bool            `json:"strict"`
			Schema json.RawMessage `json:"schema"`
		}
		type responseFormat struct {
			Type       string     `json:"type"`
			JSONSchema jsonSchema `json:"json_schema"`
		}
		body := struct {
			Model               string         `json:"model"`
			Messages            []message      `json:"messages"`
			MaxCompletionTokens int            `json:"max_completion_tokens"`
			ResponseFormat      responseFormat `json:"response_format"`
		}{Model: w.Model, MaxCompletionTokens: w.MaxOutputTokens,
			Messages:       []message{{"system", w.Instruction}},
			ResponseFormat: responseFormat{"json_schema", jsonSchema{"answer", Strict(doc), stripped}}}
		for _, text := range texts {
			body.Messages = append(body.Messages, message{"user", text})
		}
		return must(canon.Marshal(body))
	case receipts.WireAnthropicMessages:
		type block struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		type message struct {
			Role    string  `json:"role"`
			Content []block `json:"content"`
		}
		type tool struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		type choice struct {
			Type string `json:"type"`
			Name string `json:"name"`
		}
		msg := message{Role: "user", Content: []block{}}
		for _, text := range texts {
			msg.Content = append(msg.Content, block{"text", text})
		}
		body := struct {
			Model      string    `json:"model"`
			MaxTokens  int       `json:"max_tokens"`
			System     string    `json:"system"`
			Messages   []message `json:"messages"`
			Tools      []tool    `json:"tools"`
			ToolChoice choice    `json:"tool_choice"`
		}{w.Model, w.MaxOutputTokens, w.Instruction, []message{msg}, []tool{{"answer", stripped}}, choice{"tool", "answer"}}
		return must(canon.Marshal(body))
	}
	t.Fatalf("cuttest: no wire body for profile %q", w.Profile)
	return nil
}

// strip removes every member whose key begins with x-privacycut-, at any
// depth.
func strip(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if !strings.HasPrefix(k, "x-privacycut-") {
				out[k] = strip(e)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = strip(e)
		}
		return out
	}
	return v
}

// Strict reports whether a decoded schema meets the strict structured-output
// rules: every object whose type is (or includes) "object" has
// additionalProperties false and requires each of its properties.
func Strict(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		isObject := x["type"] == "object"
		if ts, ok := x["type"].([]any); ok {
			for _, t := range ts {
				isObject = isObject || t == "object"
			}
		}
		if isObject {
			if x["additionalProperties"] != false {
				return false
			}
			props, _ := x["properties"].(map[string]any)
			if _, ok := x["properties"]; ok && props == nil {
				return false
			}
			req, _ := x["required"].([]any)
			for name := range props {
				found := false
				for _, r := range req {
					found = found || r == name
				}
				if !found {
					return false
				}
			}
		}
		for _, e := range x {
			if !Strict(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !Strict(e) {
				return false
			}
		}
	}
	return true
}
