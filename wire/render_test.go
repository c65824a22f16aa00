package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/wire"
)

var update = flag.Bool("update", false, "rewrite the golden wire bodies in testdata")

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// schemaDigest is what a plan's output_schema_digest binds: S(canonical
// schema document).
func schemaDigest(t testing.TB, doc []byte) string {
	t.Helper()
	c, err := canon.Canonicalize(doc)
	if err != nil {
		t.Fatal(err)
	}
	return receipts.SHA256(c)
}

// testPlan is a plan with the given profile over testdata/schema.json.
func testPlan(t testing.TB, profile string) *receipts.Plan {
	t.Helper()
	p := &receipts.Plan{
		Schema:             receipts.SchemaPlan,
		Mode:               receipts.ModeIrreversible,
		Target:             "https://api.example.test/v1/chat/completions",
		OutputSchemaDigest: schemaDigest(t, readTestdata(t, "schema.json")),
	}
	if profile != receipts.WireExport {
		p.Wire = &receipts.Wire{
			Profile:         profile,
			Model:           "triage-model-2026-01",
			Instruction:     string(readTestdata(t, "instruction.txt")),
			MaxOutputTokens: 4096,
		}
	}
	return p
}

var goldens = map[string]string{
	receipts.WireOpenAIChat:        "openai-chat.golden.json",
	receipts.WireAnthropicMessages: "anthropic-messages.golden.json",
}

// TestRenderGolden: the wire bodies of both provider profiles for the
// example export and schema are the golden files, byte for byte; -update
// rewrites them.
func TestRenderGolden(t *testing.T) {
	export, schema := readTestdata(t, "export.json"), readTestdata(t, "schema.json")
	for profile, golden := range goldens {
		t.Run(profile, func(t *testing.T) {
			body, err := wire.Render(export, testPlan(t, profile), schema)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			path := filepath.Join("testdata", golden)
			if *update {
				if err := os.WriteFile(path, body, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(body)); diff != "" {
				t.Errorf("wire body (-golden +got):\n%s", diff)
			}
			c, err := canon.Canonicalize(body)
			if err != nil || !bytes.Equal(c, body) {
				t.Errorf("wire body is not its canonical form (err %v)", err)
			}
			if bytes.Contains(body, []byte(wire.ReservedPrefix)) {
				t.Error("wire body holds an x-privacycut- member")
			}
		})
	}
}

// TestRenderShape decodes each body and checks its documented shape: the
// system instruction, one user message or text block per part in order,
// the token ceiling, S′ and strict.
func TestRenderShape(t *testing.T) {
	export, schema := readTestdata(t, "export.json"), readTestdata(t, "schema.json")
	var exp struct {
		Parts []struct{ Kind, Text string }
	}
	if err := json.Unmarshal(export, &exp); err != nil {
		t.Fatal(err)
	}
	stripped, err := wire.Strip(schema)
	if err != nil {
		t.Fatal(err)
	}
	sameSchema := func(t *testing.T, got json.RawMessage) {
		t.Helper()
		c, err := canon.Canonicalize(got)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(stripped), string(c)); diff != "" {
			t.Errorf("schema (-S′ +got):\n%s", diff)
		}
	}
	instr := string(readTestdata(t, "instruction.txt"))
	texts := func() []string {
		var out []string
		for _, p := range exp.Parts {
			out = append(out, p.Text)
		}
		return out
	}()

	t.Run(receipts.WireOpenAIChat, func(t *testing.T) {
		body, err := wire.Render(export, testPlan(t, receipts.WireOpenAIChat), schema)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
			MaxCompletionTokens int `json:"max_completion_tokens"`
			ResponseFormat      struct {
				Type       string `json:"type"`
				JSONSchema struct {
					Name   string          `json:"name"`
					Strict bool            `json:"strict"`
					Schema json.RawMessage `json:"schema"`
				} `json:"json_schema"`
			} `json:"response_format"`
		}
		if err := canon.Unmarshal(body, &got, canon.Options{}); err != nil {
			t.Fatalf("body does not decode into the documented shape: %v", err)
		}
		if got.Model != "triage-model-2026-01" || got.MaxCompletionTokens != 4096 || got.ResponseFormat.Type != "json_schema" ||
			got.ResponseFormat.JSONSchema.Name != "answer" || got.ResponseFormat.JSONSchema.Strict {
			t.Errorf("fields: %+v", got)
		}
		if len(got.Messages) != 1+len(texts) || got.Messages[0].Role != "system" || got.Messages[0].Content != instr {
			t.Fatalf("messages: %+v", got.Messages)
		}
		for i, text := range texts {
			if m := got.Messages[1+i]; m.Role != "user" || m.Content != text {
				t.Errorf("message %d: %+v", 1+i, m)
			}
		}
		sameSchema(t, got.ResponseFormat.JSONSchema.Schema)
	})
	t.Run(receipts.WireAnthropicMessages, func(t *testing.T) {
		body, err := wire.Render(export, testPlan(t, receipts.WireAnthropicMessages), schema)
		if err != nil {
			t.Fatal(err)
		}
		type block struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		var got struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			System    string `json:"system"`
			Messages  []struct {
				Role    string  `json:"role"`
				Content []block `json:"content"`
			} `json:"messages"`
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"input_schema"`
			} `json:"tools"`
			ToolChoice struct {
				Type string `json:"type"`
				Name string `json:"name"`
			} `json:"tool_choice"`
		}
		if err := canon.Unmarshal(body, &got, canon.Options{}); err != nil {
			t.Fatalf("body does not decode into the documented shape: %v", err)
		}
		if got.Model != "triage-model-2026-01" || got.MaxTokens != 4096 || got.System != instr ||
			got.ToolChoice.Type != "tool" || got.ToolChoice.Name != "answer" || len(got.Tools) != 1 || got.Tools[0].Name != "answer" {
			t.Errorf("fields: %+v", got)
		}
		if len(got.Messages) != 1 || got.Messages[0].Role != "user" || len(got.Messages[0].Content) != len(texts) {
			t.Fatalf("messages: %+v", got.Messages)
		}
		for i, text := range texts {
			if b := got.Messages[0].Content[i]; b.Type != "text" || b.Text != text {
				t.Errorf("block %d: %+v", i, b)
			}
		}
		sameSchema(t, got.Tools[0].InputSchema)
	})
}

// TestRenderExport: export@1 is the export itself, with or without a wire
// member naming it, and whatever schema is given.
func TestRenderExport(t *testing.T) {
	export := readTestdata(t, "export.json")
	for _, p := range []*receipts.Plan{
		{Schema: receipts.SchemaPlan},
		{Schema: receipts.SchemaPlan, Wire: &receipts.Wire{Profile: receipts.WireExport}},
	} {
		body, err := wire.Render(export, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(body, export) {
			t.Errorf("export@1 body is not the export")
		}
	}
}

// TestRenderIndependentOfFormatting: reformatting the schema document or
// reordering its members changes neither its digest nor the body.
func TestRenderIndependentOfFormatting(t *testing.T) {
	export, schema := readTestdata(t, "export.json"), readTestdata(t, "schema.json")
	var v any
	json.Unmarshal(schema, &v)
	reformatted, _ := json.MarshalIndent(v, "", "\t") // members sorted, new white space
	for profile := range goldens {
		p := testPlan(t, profile)
		a, err := wire.Render(export, p, schema)
		if err != nil {
			t.Fatal(err)
		}
		b, err := wire.Render(export, p, reformatted)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s: a reformatted schema changed the body", profile)
		}
	}
}

// TestRenderDistinct: every input of the body changes it — a part's text,
// the part order, the instruction, the model, the ceiling, the schema.
func TestRenderDistinct(t *testing.T) {
	export, schema := readTestdata(t, "export.json"), readTestdata(t, "schema.json")
	swapped := bytes.Replace(export, []byte(`redacted:team:1\"\n"}`), []byte(`redacted:team:2\"\n"}`), 1)
	altSchema := bytes.Replace(schema, []byte(`"maxLength": 4000`), []byte(`"maxLength": 3999`), 1)
	for profile := range goldens {
		base, err := wire.Render(export, testPlan(t, profile), schema)
		if err != nil {
			t.Fatal(err)
		}
		variants := map[string]func() ([]byte, error){
			"text": func() ([]byte, error) { return wire.Render(swapped, testPlan(t, profile), schema) },
			"instruction": func() ([]byte, error) {
				p := testPlan(t, profile)
				p.Wire.Instruction += " "
				return wire.Render(export, p, schema)
			},
			"model": func() ([]byte, error) {
				p := testPlan(t, profile)
				p.Wire.Model = "other-model"
				return wire.Render(export, p, schema)
			},
			"tokens": func() ([]byte, error) {
				p := testPlan(t, profile)
				p.Wire.MaxOutputTokens++
				return wire.Render(export, p, schema)
			},
			"schema": func() ([]byte, error) {
				p := testPlan(t, profile)
				p.OutputSchemaDigest = schemaDigest(t, altSchema)
				return wire.Render(export, p, altSchema)
			},
			"order": func() ([]byte, error) {
				var e struct {
					Parts   []map[string]string `json:"parts"`
					Profile string              `json:"profile"`
				}
				json.Unmarshal(export, &e)
				e.Parts[1], e.Parts[2] = e.Parts[2], e.Parts[1]
				re, _ := json.Marshal(e)
				re, _ = canon.Canonicalize(re)
				return wire.Render(re, testPlan(t, profile), schema)
			},
		}
		for name, f := range variants {
			b, err := f()
			if err != nil {
				t.Errorf("%s %s: %v", profile, name, err)
				continue
			}
			if bytes.Equal(b, base) {
				t.Errorf("%s: changing the %s left the body as it was", profile, name)
			}
		}
	}
}

const canary = "CANARY-git.corp.example/payments/ledger"

// TestRenderRefusals: every refusal is an *Error with its code, field and
// part, and quotes nothing of the plan, the export or the schema.
func TestRenderRefusals(t *testing.T) {
	export, schema := readTestdata(t, "export.json"), readTestdata(t, "schema.json")
	type want struct {
		Code  receipts.Code
		Field string
		Part  int
	}
	mismatch := func(field string) want { return want{receipts.PlanMismatch, field, -1} }
	withSchema := func(doc string) func(*receipts.Plan) []byte {
		return func(p *receipts.Plan) []byte {
			p.OutputSchemaDigest = schemaDigest(t, []byte(doc))
			return []byte(doc)
		}
	}
	tests := []struct {
		name    string
		profile string
		plan    func(*receipts.Plan)
		schema  func(*receipts.Plan) []byte // nil: testdata/schema.json
		export  string                      // "": testdata/export.json
		want    want
	}{
		{name: "unknown profile", plan: func(p *receipts.Plan) { p.Wire.Profile = "grpc@1" }, want: mismatch("wire.profile")},
		{name: "empty profile", plan: func(p *receipts.Plan) { p.Wire.Profile = "" }, want: mismatch("wire.profile")},
		{name: "export with model", profile: receipts.WireExport, plan: func(p *receipts.Plan) {
			p.Wire = &receipts.Wire{Profile: receipts.WireExport, Model: canary}
		}, want: mismatch("wire")},
		{name: "export with instruction", profile: receipts.WireExport, plan: func(p *receipts.Plan) {
			p.Wire = &receipts.Wire{Profile: receipts.WireExport, Instruction: canary}
		}, want: mismatch("wire")},
		{name: "no model", plan: func(p *receipts.Plan) { p.Wire.Model = "" }, want: mismatch("wire.model")},
		{name: "model with newline", plan: func(p *receipts.Plan) { p.Wire.Model = canary + "\n" }, want: mismatch("wire.model")},
		{name: "model not ASCII", plan: func(p *receipts.Plan) { p.Wire.Model = canary + "é" }, want: mismatch("wire.model")},
		{name: "model too long", plan: func(p *receipts.Plan) { p.Wire.Model = canary + strings.Repeat("m", 256) }, want: mismatch("wire.model")},
		{name: "no instruction", plan: func(p *receipts.Plan) { p.Wire.Instruction = "" }, want: mismatch("wire.instruction")},
		{name: "instruction not UTF-8", plan: func(p *receipts.Plan) { p.Wire.Instruction = canary + "\xff" }, want: mismatch("wire.instruction")},
		{name: "instruction too long", plan: func(p *receipts.Plan) { p.Wire.Instruction = canary + strings.Repeat("i", 64<<10) }, want: mismatch("wire.instruction")},
		{name: "zero tokens", plan: func(p *receipts.Plan) { p.Wire.MaxOutputTokens = 0 }, want: mismatch("wire.max_output_tokens")},
		{name: "negative tokens", plan: func(p *receipts.Plan) { p.Wire.MaxOutputTokens = -1 }, want: mismatch("wire.max_output_tokens")},
		{name: "too many tokens", plan: func(p *receipts.Plan) { p.Wire.MaxOutputTokens = 1 << 31 }, want: mismatch("wire.max_output_tokens")},
		{name: "no schema", schema: func(*receipts.Plan) []byte { return nil }, want: mismatch("output_schema")},
		{name: "no schema digest", plan: func(p *receipts.Plan) { p.OutputSchemaDigest = "" }, want: mismatch("output_schema_digest")},
		{name: "schema digest differs", schema: func(*receipts.Plan) []byte {
			return []byte(`{"type":"object","description":"` + canary + `"}`)
		}, want: mismatch("output_schema_digest")},
		{name: "schema not JSON", schema: func(*receipts.Plan) []byte { return []byte(`{"type":"` + canary) }, want: want{receipts.MalformedRecord, "output_schema", -1}},
		{name: "schema duplicate key", schema: func(*receipts.Plan) []byte {
			return []byte(`{"type":"object","type":"` + canary + `"}`)
		}, want: want{receipts.MalformedRecord, "output_schema", -1}},
		{name: "schema not an object", schema: withSchema(`["` + canary + `"]`), want: mismatch("output_schema")},
		{name: "schema reserved property", schema: withSchema(`{"type":"object","properties":{"x-privacycut-` + canary + `":{"type":"string"}}}`), want: mismatch("output_schema")},
		{name: "schema too large", schema: func(*receipts.Plan) []byte {
			return []byte(`{"description":"` + canary + strings.Repeat("d", 1<<20) + `"}`)
		}, want: want{receipts.LimitExceeded, "output_schema", -1}},
		{name: "export not JSON", export: `{"parts":[{"kind":"block","text":"` + canary, want: want{receipts.MalformedRecord, "export", -1}},
		{name: "export invalid UTF-8", export: `{"parts":[{"kind":"block","text":"` + canary + "\xff" + `"}],"profile":"closed-diagnostic@1"}`, want: want{receipts.InvalidUTF8, "export", -1}},
		{name: "export other profile", export: `{"parts":[{"kind":"block","text":"` + canary + `"}],"profile":"prose@1"}`, want: want{receipts.MalformedRecord, "export", -1}},
		{name: "export no parts", export: `{"parts":[],"profile":"closed-diagnostic@1"}`, want: want{receipts.MalformedRecord, "export", -1}},
		{name: "export extra member", export: `{"label":"` + canary + `","parts":[{"kind":"block","text":"x"}],"profile":"closed-diagnostic@1"}`, want: want{receipts.MalformedRecord, "export", -1}},
		{name: "export part extra member", export: `{"parts":[{"kind":"block","text":"a\n"},{"key":"` + canary + `","kind":"block","text":"b"}],"profile":"closed-diagnostic@1"}`, want: want{receipts.MalformedRecord, "export", 1}},
		{name: "export part text not a string", export: `{"parts":[{"kind":"block","text":1}],"profile":"closed-diagnostic@1"}`, want: want{receipts.MalformedRecord, "export", 0}},
		{name: "export not canonical", export: `{"profile":"closed-diagnostic@1","parts":[{"kind":"block","text":"` + canary + `"}]}`, want: want{receipts.MalformedRecord, "export", -1}},
		{name: "anthropic empty text", profile: receipts.WireAnthropicMessages, export: `{"parts":[{"kind":"block","text":"` + canary + `"},{"kind":"query","text":""}],"profile":"closed-diagnostic@1"}`, want: want{receipts.MalformedRecord, "export", 1}},
	}
	for _, tc := range tests {
		profiles := []string{receipts.WireOpenAIChat, receipts.WireAnthropicMessages}
		if tc.profile != "" {
			profiles = []string{tc.profile}
		}
		for _, profile := range profiles {
			t.Run(tc.name+"/"+profile, func(t *testing.T) {
				p := testPlan(t, profile)
				if tc.plan != nil {
					tc.plan(p)
				}
				s := schema
				if tc.schema != nil {
					s = tc.schema(p)
				}
				e := export
				if tc.export != "" {
					e = []byte(tc.export)
				}
				body, err := wire.Render(e, p, s)
				var we *wire.Error
				if !errors.As(err, &we) {
					t.Fatalf("Render = %d bytes, %v; want an *wire.Error", len(body), err)
				}
				if diff := cmp.Diff(tc.want, want{we.Code, we.Field, we.Part}); diff != "" {
					t.Errorf("refusal (-want +got):\n%s", diff)
				}
				if body != nil {
					t.Error("a refusal returned a body")
				}
				if msg := err.Error(); strings.Contains(msg, "CANARY") || strings.Contains(msg, "corp.example") {
					t.Errorf("error %q quotes input", msg)
				}
			})
		}
	}
}

// TestRenderStrictSchema: a schema that meets the strict rules is sent
// with strict true.
func TestRenderStrictSchema(t *testing.T) {
	export := readTestdata(t, "export.json")
	schema := []byte(`{"type":"object","additionalProperties":false,"required":["summary"],
	  "properties":{"summary":{"type":"string","x-privacycut-note":{"a":1}}}}`)
	for profile := range goldens {
		p := testPlan(t, profile)
		p.OutputSchemaDigest = schemaDigest(t, schema)
		body, err := wire.Render(export, p, schema)
		if err != nil {
			t.Fatal(err)
		}
		wantSchema := `{"additionalProperties":false,"properties":{"summary":{"type":"string"}},"required":["summary"],"type":"object"}`
		if !bytes.Contains(body, []byte(wantSchema)) {
			t.Errorf("%s: body does not carry S′ %s", profile, wantSchema)
		}
		if profile == receipts.WireOpenAIChat && !bytes.Contains(body, []byte(`"name":"answer","schema":`+wantSchema+`,"strict":true}`)) {
			t.Errorf("openai body is not strict: %s", body)
		}
	}
}

// BenchmarkRender renders the testdata export and one of about 120 KB,
// the size of a 500-finding report's.
func BenchmarkRender(b *testing.B) {
	export, schema := readTestdata(b, "export.json"), readTestdata(b, "schema.json")
	tree, err := canon.Parse(export, canon.Options{})
	if err != nil {
		b.Fatal(err)
	}
	text := &tree.Members[0].Value.Elems[0].Members[1].Value
	text.Str = bytes.Repeat(text.Str, 120<<10/len(text.Str))
	large, err := tree.Canonical()
	if err != nil {
		b.Fatal(err)
	}
	p := testPlan(b, receipts.WireOpenAIChat)
	for _, bc := range []struct {
		name   string
		export []byte
	}{{"testdata", export}, {"120KB", large}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.export)))
			for b.Loop() {
				if _, err := wire.Render(bc.export, p, schema); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestDocExample: the package documentation's worked example.
func TestDocExample(t *testing.T) {
	export := []byte(`{"parts":[{"kind":"query","text":"ask triage.explain\n"}],"profile":"closed-diagnostic@1"}`)
	schema := []byte(`{"type":"object","additionalProperties":false,"required":["summary"],
	 "properties":{"summary":{"type":"string",
	   "x-privacycut-rehydrate":{"category":"team","purpose":"triage","max":1}}}}`)
	p := &receipts.Plan{
		Wire:               &receipts.Wire{Profile: receipts.WireOpenAIChat, Model: "m1", Instruction: "Answer in JSON.", MaxOutputTokens: 512},
		OutputSchemaDigest: schemaDigest(t, schema),
	}
	body, err := wire.Render(export, p, schema)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"max_completion_tokens":512,"messages":[{"content":"Answer in JSON.","role":"system"},` +
		`{"content":"ask triage.explain\n","role":"user"}],"model":"m1","response_format":` +
		`{"json_schema":{"name":"answer","schema":{"additionalProperties":false,"properties":` +
		`{"summary":{"type":"string"}},"required":["summary"],"type":"object"},"strict":true},` +
		`"type":"json_schema"}}`
	if diff := cmp.Diff(want, string(body)); diff != "" {
		t.Errorf("body (-doc +got):\n%s", diff)
	}
}

// FuzzRender: Render writes the body built as a tree from the texts
// exportTexts decodes (the RFC 8785 canonical form of the documented
// shape), and refuses exactly what exportTexts refuses, with its error.
func FuzzRender(f *testing.F) {
	export := readTestdata(f, "export.json")
	f.Add(uint8(0), "m", "Answer.", export)
	f.Add(uint8(1), "m\"\\", "I\u2028\x01\n", export)
	for _, e := range []string{
		`{"parts":[{"kind":"a\"b","text":"x\u001f\t"},{"kind":"q","text":""}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"a","text":"\u0041"}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"a","text":"\/"}],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"a","text":"é"} ],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"kind":"a","text":"x"},],"profile":"closed-diagnostic@1"}`,
		`{"parts":[{"text":"x","kind":"a"}],"profile":"closed-diagnostic@1"}`,
	} {
		f.Add(uint8(0), "m", "i", []byte(e))
		f.Add(uint8(1), "m", "i", []byte(e))
	}
	schema := readTestdata(f, "schema.json")
	stripped, err := wire.Strip(schema)
	if err != nil {
		f.Fatal(err)
	}
	sPrime, err := canon.Parse(stripped, canon.Options{})
	if err != nil {
		f.Fatal(err)
	}
	strict, err := wire.CheckStrict(schema)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, pi uint8, model, instr string, export []byte) {
		profile := []string{receipts.WireOpenAIChat, receipts.WireAnthropicMessages}[pi%2]
		p := testPlan(t, profile)
		p.Wire.Model, p.Wire.Instruction = model, instr
		if wire.CheckPlan(p) != nil {
			return
		}
		body, err := wire.Render(export, p, schema)
		texts, terr := wire.ExportTexts(export)
		empty := profile == receipts.WireAnthropicMessages && terr == nil && slices.ContainsFunc(texts, func(b []byte) bool { return len(b) == 0 })
		switch {
		case terr != nil:
			if diff := cmp.Diff(terr, err); diff != "" {
				t.Fatalf("refusal differs from exportTexts' (-exportTexts +Render):\n%s", diff)
			}
		case empty:
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != receipts.MalformedRecord || we.Part != slices.IndexFunc(texts, func(b []byte) bool { return len(b) == 0 }) {
				t.Fatalf("empty text: %v", err)
			}
		case err != nil:
			t.Fatalf("Render refused what exportTexts accepts: %v", err)
		default:
			want, err := treeBody(p.Wire, texts, sPrime, strict.Strict).Canonical()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(body, want) {
				t.Fatalf("body differs from the tree's:\n got %q\nwant %q", body, want)
			}
		}
	})
}

// treeBody is the documented wire body of the texts, as a tree.
func treeBody(w *receipts.Wire, texts [][]byte, sPrime *canon.Value, strict bool) *canon.Value {
	str := func(s []byte) canon.Value { return canon.Value{Kind: canon.String, Str: s} }
	num := canon.Value{Kind: canon.Number, Num: strconv.Itoa(w.MaxOutputTokens)}
	object := func(kv ...any) canon.Value {
		v := canon.Value{Kind: canon.Object}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Members = append(v.Members, canon.Member{Key: []byte(kv[i].(string)), Value: kv[i+1].(canon.Value)})
		}
		return v
	}
	array := func(elems ...canon.Value) canon.Value { return canon.Value{Kind: canon.Array, Elems: elems} }
	var v canon.Value
	if w.Profile == receipts.WireOpenAIChat {
		msgs := []canon.Value{object("role", str([]byte("system")), "content", str([]byte(w.Instruction)))}
		for _, t := range texts {
			msgs = append(msgs, object("role", str([]byte("user")), "content", str(t)))
		}
		v = object("model", str([]byte(w.Model)), "messages", array(msgs...), "max_completion_tokens", num,
			"response_format", object("type", str([]byte("json_schema")), "json_schema", object(
				"name", str([]byte("answer")), "strict", canon.Value{Kind: canon.Bool, Bool: strict}, "schema", *sPrime)))
	} else {
		var blocks []canon.Value
		for _, t := range texts {
			blocks = append(blocks, object("type", str([]byte("text")), "text", str(t)))
		}
		v = object("model", str([]byte(w.Model)), "max_tokens", num, "system", str([]byte(w.Instruction)),
			"messages", array(object("role", str([]byte("user")), "content", array(blocks...))),
			"tools", array(object("name", str([]byte("answer")), "input_schema", *sPrime)),
			"tool_choice", object("type", str([]byte("tool")), "name", str([]byte("answer"))))
	}
	return &v
}
