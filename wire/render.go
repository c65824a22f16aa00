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
	spans, ok := exportSpans(export)
	if !ok {
		if _, err := exportTexts(export); err != nil {
			return nil, err
		}
		// Unreachable: exportTexts accepts what exportSpans does
		// (FuzzExportSpans). Refused rather than rendered another way.
		e := planError("export", reasonExportCanonical)
		e.Code = receipts.MalformedRecord
		return nil, e
	}
	if profile == receipts.WireOpenAIChat {
		return openAIBody(plan.Wire, export, spans, s), nil
	}
	for i, sp := range spans {
		if sp[0] == sp[1] {
			e := planError("export", reasonEmptyText)
			e.Code, e.Part = receipts.MalformedRecord, i
			return nil, e
		}
	}
	return anthropicBody(plan.Wire, export, spans, s), nil
}

// The bodies are written directly in RFC 8785 canonical form, members in
// sorted order, each text copied from the export as it is escaped there
// (exportSpans checks that it is canonical); tests check the bytes against
// canon.Canonicalize and against a body built as a tree.

// openAIBody is
//
//	{"max_completion_tokens":N,"messages":[{"content":I,"role":"system"},
//	 {"content":T,"role":"user"}…],"model":M,"response_format":{"json_schema":
//	 {"name":"answer","schema":S′,"strict":B},"type":"json_schema"}}
func openAIBody(w *receipts.Wire, export []byte, spans [][2]int, s *Schema) []byte {
	b := make([]byte, 0, bodySize(w, export, spans, s)+len(spans)*len(`,{"content":"","role":"user"}`))
	b = append(b, `{"max_completion_tokens":`...)
	b = strconv.AppendInt(b, int64(w.MaxOutputTokens), 10)
	b = append(b, `,"messages":[{"content":`...)
	b = appendString(b, w.Instruction)
	b = append(b, `,"role":"system"}`...)
	for _, sp := range spans {
		b = append(b, `,{"content":"`...)
		b = append(b, export[sp[0]:sp[1]]...)
		b = append(b, `","role":"user"}`...)
	}
	b = append(b, `],"model":`...)
	b = appendString(b, w.Model)
	b = append(b, `,"response_format":{"json_schema":{"name":"`+SchemaName+`","schema":`...)
	b = append(b, s.canonical...)
	b = append(b, `,"strict":`...)
	b = strconv.AppendBool(b, s.strict.Strict)
	return append(b, `},"type":"json_schema"}}`...)
}

// anthropicBody is
//
//	{"max_tokens":N,"messages":[{"content":[{"text":T,"type":"text"}…],
//	 "role":"user"}],"model":M,"system":I,"tool_choice":{"name":"answer",
//	 "type":"tool"},"tools":[{"input_schema":S′,"name":"answer"}]}
func anthropicBody(w *receipts.Wire, export []byte, spans [][2]int, s *Schema) []byte {
	b := make([]byte, 0, bodySize(w, export, spans, s)+len(spans)*len(`,{"text":"","type":"text"}`))
	b = append(b, `{"max_tokens":`...)
	b = strconv.AppendInt(b, int64(w.MaxOutputTokens), 10)
	b = append(b, `,"messages":[{"content":[`...)
	for i, sp := range spans {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"text":"`...)
		b = append(b, export[sp[0]:sp[1]]...)
		b = append(b, `","type":"text"}`...)
	}
	b = append(b, `],"role":"user"}],"model":`...)
	b = appendString(b, w.Model)
	b = append(b, `,"system":`...)
	b = appendString(b, w.Instruction)
	b = append(b, `,"tool_choice":{"name":"`+SchemaName+`","type":"tool"},"tools":[{"input_schema":`...)
	b = append(b, s.canonical...)
	return append(b, `,"name":"`+SchemaName+`"}]}`...)
}

// bodySize is the size of a body's variable parts and fixed members, to
// within the escapes of the model and the instruction.
func bodySize(w *receipts.Wire, export []byte, spans [][2]int, s *Schema) int {
	n := 256 + len(w.Model) + len(w.Instruction) + len(s.canonical)
	for _, sp := range spans {
		n += sp[1] - sp[0]
	}
	return n
}

// appendString appends s, valid UTF-8 (CheckPlan), as a canonical JSON
// string.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = canon.AppendStringBody(b, []byte(s))
	return append(b, '"')
}

// exportSpans returns where each part's escaped text lies in export, if
// export is a canonical Export@1 document with at least one part:
// exactly {"parts":[{"kind":K,"text":T}(,{…})*],"profile":"closed-diagnostic@1"}
// with K and T canonical strings (members are sorted and there is no
// space). Whatever else it refuses, exportTexts refuses too, saying why.
func exportSpans(export []byte) ([][2]int, bool) {
	const head, tail = `{"parts":[`, `],"profile":"` + receipts.ProfileName + `"}`
	if !bytes.HasPrefix(export, []byte(head)) || !bytes.HasSuffix(export, []byte(tail)) {
		return nil, false
	}
	body := export[:len(export)-len(tail)]
	var spans [][2]int
	for i := len(head); ; {
		if len(spans) > 0 {
			if i == len(body) {
				return spans, true
			}
			if body[i] != ',' {
				return nil, false
			}
			i++
		}
		if !bytes.HasPrefix(body[i:], []byte(`{"kind":`)) {
			return nil, false
		}
		end, ok := canon.CanonicalStringEnd(body, i+len(`{"kind":`))
		if !ok || !bytes.HasPrefix(body[end:], []byte(`,"text":`)) {
			return nil, false
		}
		from := end + len(`,"text":`)
		if end, ok = canon.CanonicalStringEnd(body, from); !ok || end == len(body) || body[end] != '}' {
			return nil, false
		}
		spans = append(spans, [2]int{from + 1, end - 1})
		i = end + 1
	}
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
