package wire_test

// The official SDKs check the wire bodies' shapes: the SDK's own encoder,
// given the same fields, writes the same JSON document, and the body
// decodes into the SDK's request type and encodes back to itself, with
// nothing dropped. The SDKs are dependencies of these tests only.

import (
	"encoding/json"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/wire"
)

// inputs are the fields a body is rendered from, read independently of
// the renderer.
type inputs struct {
	model, instruction string
	tokens             int64
	texts              []string
	schema             map[string]any // S′
	strict             bool
}

func testInputs(t *testing.T, profile string) (inputs, []byte) {
	t.Helper()
	export, schema := readTestdata(t, "export.json"), readTestdata(t, "schema.json")
	p := testPlan(t, profile)
	body, err := wire.Render(export, p, schema)
	if err != nil {
		t.Fatal(err)
	}
	var exp struct{ Parts []struct{ Kind, Text string } }
	if err := json.Unmarshal(export, &exp); err != nil {
		t.Fatal(err)
	}
	in := inputs{model: p.Wire.Model, instruction: p.Wire.Instruction, tokens: int64(p.Wire.MaxOutputTokens)}
	for _, part := range exp.Parts {
		in.texts = append(in.texts, part.Text)
	}
	var full map[string]any
	json.Unmarshal(schema, &full)
	in.schema = stripReserved(full).(map[string]any)
	st, err := wire.CheckStrict(schema)
	if err != nil {
		t.Fatal(err)
	}
	in.strict = st.Strict
	return in, body
}

// stripReserved removes x-privacycut-* members, written apart from the
// package's stripper.
func stripReserved(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if len(k) >= len(wire.ReservedPrefix) && k[:len(wire.ReservedPrefix)] == wire.ReservedPrefix {
				continue
			}
			out[k] = stripReserved(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripReserved(e)
		}
		return out
	}
	return v
}

func canonical(t *testing.T, b []byte) string {
	t.Helper()
	c, err := canon.Canonicalize(b)
	if err != nil {
		t.Fatalf("canonicalize: %v", err)
	}
	return string(c)
}

func TestOpenAISDKShape(t *testing.T) {
	in, body := testInputs(t, receipts.WireOpenAIChat)
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(in.instruction)}
	for _, text := range in.texts {
		msgs = append(msgs, openai.UserMessage(text))
	}
	params := openai.ChatCompletionNewParams{
		Model:               shared.ChatModel(in.model),
		Messages:            msgs,
		MaxCompletionTokens: openai.Int(in.tokens),
		ResponseFormat: openai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{
					Name:   "answer",
					Strict: openai.Bool(in.strict),
					Schema: in.schema,
				},
			},
		},
	}
	sdk, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(canonical(t, sdk), string(body)); diff != "" {
		t.Errorf("wire body differs from the SDK's encoding (-sdk +wire):\n%s", diff)
	}

	var decoded openai.ChatCompletionNewParams
	if err := json.Unmarshal(body, &decoded); err != nil {
		t.Fatalf("body does not decode into ChatCompletionNewParams: %v", err)
	}
	again, err := json.Marshal(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(body), canonical(t, again)); diff != "" {
		t.Errorf("body does not survive the SDK's decoder (-wire +sdk):\n%s", diff)
	}
}

func TestAnthropicSDKShape(t *testing.T) {
	in, body := testInputs(t, receipts.WireAnthropicMessages)
	var blocks []anthropic.ContentBlockParamUnion
	for _, text := range in.texts {
		blocks = append(blocks, anthropic.NewTextBlock(text))
	}
	props := in.schema["properties"]
	var required []string
	for _, r := range in.schema["required"].([]any) {
		required = append(required, r.(string))
	}
	extra := map[string]any{}
	for k, v := range in.schema {
		if k != "properties" && k != "required" && k != "type" {
			extra[k] = v
		}
	}
	params := anthropic.MessageNewParams{
		Model:     anthropic.Model(in.model),
		MaxTokens: in.tokens,
		System:    []anthropic.TextBlockParam{{Text: in.instruction}},
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(blocks...)},
		Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        "answer",
			InputSchema: anthropic.ToolInputSchemaParam{Properties: props, Required: required, ExtraFields: extra},
		}}},
		ToolChoice: anthropic.ToolChoiceParamOfTool("answer"),
	}
	sdk, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	// The SDK always writes the system prompt as text blocks; the API
	// takes a string or blocks, and the wire profile writes the string.
	// That is the one difference allowed, and only for exactly one block
	// holding exactly the instruction.
	if diff := cmp.Diff(string(body), canonical(t, systemAsString(t, sdk, in.instruction))); diff != "" {
		t.Errorf("wire body differs from the SDK's encoding (-wire +sdk):\n%s", diff)
	}

	var decoded anthropic.MessageNewParams
	if err := json.Unmarshal(body, &decoded); err != nil {
		t.Fatalf("body does not decode into MessageNewParams: %v", err)
	}
	if len(decoded.System) != 1 || decoded.System[0].Text != in.instruction {
		t.Errorf("the SDK reads system as %+v", decoded.System)
	}
	again, err := json.Marshal(decoded)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(body), canonical(t, systemAsString(t, again, in.instruction))); diff != "" {
		t.Errorf("body does not survive the SDK's decoder (-wire +sdk):\n%s", diff)
	}
}

// systemAsString rewrites a request whose system is exactly one text block
// holding instruction into one whose system is that string.
func systemAsString(t *testing.T, doc []byte, instruction string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	var blocks []map[string]any
	if err := json.Unmarshal(m["system"], &blocks); err != nil || len(blocks) != 1 || len(blocks[0]) != 2 ||
		blocks[0]["type"] != "text" || blocks[0]["text"] != instruction {
		t.Fatalf("SDK system is not one text block of the instruction: %s", m["system"])
	}
	m["system"], _ = json.Marshal(instruction)
	out, _ := json.Marshal(m)
	return out
}
