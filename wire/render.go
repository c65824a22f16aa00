package wire

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// Limits of a plan's wire fields.
const (
	MaxModelBytes       = 256
	MaxInstructionBytes = 64 << 10
	MaxOutputTokens     = 1<<31 - 1
)

// AnthropicVersion is the anthropic-version header anthropic-messages@1 is
// sent with: the API version whose request and answer shapes it renders and
// reads.
const AnthropicVersion = "2023-06-01"

// SchemaName is the name the output schema is given in a wire body: the
// json_schema name of openai-chat@1 and the tool name of
// anthropic-messages@1.
const SchemaName = "answer"

// CheckPlan checks the plan's wire fields alone, without an export or a
// schema: the profile is known; export@1 (or no wire) names no model,
// instruction or max_output_tokens; any other profile has a model of 1 to
// MaxModelBytes printable ASCII bytes (0x20–0x7E), an instruction of 1 to
// MaxInstructionBytes bytes of valid UTF-8, max_output_tokens between 1 and
// MaxOutputTokens, and an output_schema_digest. The instruction is checked
// for nothing else: it is public text written by the operator and approved
// with the route, and it is not searched for owner values here (the
// verifier's no-residual claim searches the whole wire body). A refusal is
// an *Error with code PLAN_MISMATCH naming the field.
func CheckPlan(plan *receipts.Plan) error {
	w := plan.Wire
	switch plan.WireProfile() {
	case receipts.WireExport:
		if w != nil && (w.Model != "" || w.Instruction != "" || w.MaxOutputTokens != 0) {
			return planError("wire", reasonExportFields)
		}
		return nil
	case receipts.WireOpenAIChat, receipts.WireAnthropicMessages:
	default:
		return planError("wire.profile", reasonUnknownProfile)
	}
	switch {
	case w.Model == "":
		return planError("wire.model", reasonModelEmpty)
	case len(w.Model) > MaxModelBytes:
		return planError("wire.model", reasonModelLong)
	}
	for i := 0; i < len(w.Model); i++ {
		if c := w.Model[i]; c < 0x20 || c > 0x7e {
			return planError("wire.model", reasonModelChars)
		}
	}
	switch {
	case w.Instruction == "":
		return planError("wire.instruction", reasonInstrEmpty)
	case len(w.Instruction) > MaxInstructionBytes:
		return planError("wire.instruction", reasonInstrLong)
	case !utf8.ValidString(w.Instruction):
		return planError("wire.instruction", reasonInstrUTF8)
	case w.MaxOutputTokens < 1:
		return planError("wire.max_output_tokens", reasonTokensLow)
	case w.MaxOutputTokens > MaxOutputTokens:
		return planError("wire.max_output_tokens", reasonTokensHigh)
	case plan.OutputSchemaDigest == "":
		return planError("output_schema_digest", reasonNoSchemaDigest)
	}
	return nil
}

// Render returns the wire body of a cut: the exact bytes sent to the
// plan's target, a pure function of the export bytes, the plan and the
// output schema document.
//
// For export@1 (a plan without wire) the body is the export itself: the
// returned slice is export, and schema is not used. For openai-chat@1 and
// anthropic-messages@1 the body is RFC 8785 canonical JSON built from the
// export's parts, the plan's wire fields and S′ (see the package
// documentation); the schema is required, and its digest must be the
// plan's output_schema_digest. The export must be a canonical Export@1
// document (what the censor writes) with at least one part.
//
// Every refusal is an *Error: PLAN_MISMATCH naming the plan field or
// "output_schema", or the class of a document refusal (MALFORMED_RECORD,
// INVALID_UTF8, LIMIT_EXCEEDED) with its position, for the export or the
// schema.
func Render(export []byte, plan *receipts.Plan, schema []byte) ([]byte, error) {
	profile := plan.WireProfile()
	if knownProfile(profile) && len(schema) == 0 {
		return nil, planError("output_schema", reasonNoSchema)
	}
	if err := CheckPlan(plan); err != nil {
		return nil, err
	}
	if profile == receipts.WireExport {
		return export, nil
	}
	s, err := ParseSchema(schema)
	if err != nil {
		return nil, err
	}
	if s.digest != plan.OutputSchemaDigest {
		return nil, planError("output_schema_digest", reasonSchemaDigest)
	}
	texts, err := exportTexts(export)
	if err != nil {
		return nil, err
	}
	var body canon.Value
	switch profile {
	case receipts.WireOpenAIChat:
		body = openAIBody(plan.Wire, texts, s)
	default:
		for i, t := range texts {
			if len(t) == 0 {
				e := planError("export", reasonEmptyText)
				e.Code, e.Part = receipts.MalformedRecord, i
				return nil, e
			}
		}
		body = anthropicBody(plan.Wire, texts, s)
	}
	out, err := body.Canonical()
	if err != nil {
		// The tree is built from checked strings and a parsed schema.
		return nil, docError("export", err)
	}
	return out, nil
}

// openAIBody is
//
//	{"model":M,"messages":[{"role":"system","content":I},{"role":"user","content":T}…],
//	 "max_completion_tokens":N,"response_format":{"type":"json_schema",
//	 "json_schema":{"name":"answer","strict":B,"schema":S′}}}
func openAIBody(w *receipts.Wire, texts [][]byte, s *Schema) canon.Value {
	msgs := make([]canon.Value, 0, 1+len(texts))
	msgs = append(msgs, object("role", str("system"), "content", str(w.Instruction)))
	for _, t := range texts {
		msgs = append(msgs, object("role", str("user"), "content", canon.Value{Kind: canon.String, Str: t}))
	}
	return object(
		"model", str(w.Model),
		"messages", canon.Value{Kind: canon.Array, Elems: msgs},
		"max_completion_tokens", num(w.MaxOutputTokens),
		"response_format", object(
			"type", str("json_schema"),
			"json_schema", object(
				"name", str(SchemaName),
				"strict", canon.Value{Kind: canon.Bool, Bool: s.strict.Strict},
				"schema", s.stripped,
			),
		),
	)
}

// anthropicBody is
//
//	{"model":M,"max_tokens":N,"system":I,"messages":[{"role":"user","content":
//	 [{"type":"text","text":T}…]}],"tools":[{"name":"answer","input_schema":S′}],
//	 "tool_choice":{"type":"tool","name":"answer"}}
func anthropicBody(w *receipts.Wire, texts [][]byte, s *Schema) canon.Value {
	blocks := make([]canon.Value, len(texts))
	for i, t := range texts {
		blocks[i] = object("type", str("text"), "text", canon.Value{Kind: canon.String, Str: t})
	}
	return object(
		"model", str(w.Model),
		"max_tokens", num(w.MaxOutputTokens),
		"system", str(w.Instruction),
		"messages", canon.Value{Kind: canon.Array, Elems: []canon.Value{
			object("role", str("user"), "content", canon.Value{Kind: canon.Array, Elems: blocks}),
		}},
		"tools", canon.Value{Kind: canon.Array, Elems: []canon.Value{
			object("name", str(SchemaName), "input_schema", s.stripped),
		}},
		"tool_choice", object("type", str("tool"), "name", str(SchemaName)),
	)
}

// exportTexts reads a canonical Export@1 document and returns its parts'
// texts, in order.
func exportTexts(export []byte) ([][]byte, error) {
	tree, err := canon.Parse(export, canon.Options{})
	if err != nil {
		return nil, docError("export", err)
	}
	shape := func(v *canon.Value) error {
		e := planError("export", reasonExportShape)
		e.Code, e.Offset = receipts.MalformedRecord, v.Off
		e.Line, e.Column = canon.LineCol(export, v.Off)
		return e
	}
	if tree.Kind != canon.Object || len(tree.Members) != 2 {
		return nil, shape(tree)
	}
	profile, parts := member(tree, "profile"), member(tree, "parts")
	if profile == nil || parts == nil || profile.Kind != canon.String || parts.Kind != canon.Array {
		return nil, shape(tree)
	}
	if string(profile.Str) != receipts.ProfileName {
		e := shape(profile).(*Error)
		e.Reason = reasonExportProfile
		return nil, e
	}
	if len(parts.Elems) == 0 {
		e := shape(parts).(*Error)
		e.Reason = reasonExportNoParts
		return nil, e
	}
	texts := make([][]byte, len(parts.Elems))
	for i := range parts.Elems {
		p := &parts.Elems[i]
		if p.Kind != canon.Object || len(p.Members) != 2 {
			return nil, partShape(shape(p), i)
		}
		kind, text := member(p, "kind"), member(p, "text")
		if kind == nil || text == nil || kind.Kind != canon.String || text.Kind != canon.String {
			return nil, partShape(shape(p), i)
		}
		texts[i] = text.Str
	}
	canonical, err := tree.Canonical()
	if err != nil {
		return nil, docError("export", err)
	}
	if !bytes.Equal(canonical, export) {
		e := planError("export", reasonExportCanonical)
		e.Code = receipts.MalformedRecord
		return nil, e
	}
	return texts, nil
}

func knownProfile(p string) bool {
	return p == receipts.WireOpenAIChat || p == receipts.WireAnthropicMessages
}

func partShape(err error, i int) error {
	err.(*Error).Part = i
	return err
}

func str(s string) canon.Value { return canon.Value{Kind: canon.String, Str: []byte(s)} }

func num(n int) canon.Value { return canon.Value{Kind: canon.Number, Num: strconv.Itoa(n)} }

// object builds an object from alternating keys and values.
func object(kv ...any) canon.Value {
	v := canon.Value{Kind: canon.Object, Members: make([]canon.Member, 0, len(kv)/2)}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Members = append(v.Members, canon.Member{Key: []byte(kv[i].(string)), Value: kv[i+1].(canon.Value)})
	}
	return v
}
