package verifier

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// wire-match: the wire body given is the one the plan's wire profile makes
// of the export, byte for byte. For export@1 (a plan without wire) the
// body is the export itself. For openai-chat@1 and anthropic-messages@1 it
// is rendered here, as RFC 8785 canonical JSON, from the plan's wire
// (model, instruction, max_output_tokens), the export's part texts in
// order and S′, the output schema with every x-privacycut-* member removed
// at any depth; the schema document's digest must be the plan's
// output_schema_digest. The verification's wire_digest is S(given body),
// the export digest for export@1.

// The prefix of the schema members that are privacycut's own and never
// leave: S′ is the schema without them.
const privatePrefix = "x-privacycut-"

// wireCheck is what renderWire learns, for wire-match and no-residual.
type wireCheck struct {
	profile string
	digest  string // S(given body); the export digest for export@1 without a body

	schemaErr error        // the output schema cannot be used (not given, not strict JSON, another digest)
	stripped  *canon.Value // S′
	strict    bool         // S′ meets the providers' strict structured-output rules

	body      *canon.Value // the body rendered from the export and the plan, nil when it cannot be
	renderErr error        // why it cannot be
	diff      int          // first offset at which the given body differs from the rendered one, or -1
}

var (
	errNoSchema     = errors.New("verifier: wire: no output schema given")
	errSchemaDigest = errors.New("verifier: wire: the output schema's digest is not the plan's output_schema_digest")
	errNoExport     = errors.New("verifier: wire: the export's parts cannot be read")
	errNoBody       = errors.New("verifier: wire: no wire body given")
)

// renderWire renders the wire body of the plan's profile and compares the
// given body with it. It runs beside the walk and reads only what decode
// wrote.
func (c *check) renderWire() {
	w := &c.wire
	w.diff = -1
	given := c.req.Wire
	if len(given) > 0 {
		w.digest = receipts.SHA256(given)
	} else {
		w.digest = c.exportDigest
	}
	if c.plan == nil {
		return
	}
	w.profile = c.plan.WireProfile()
	if w.profile != receipts.WireOpenAIChat && w.profile != receipts.WireAnthropicMessages {
		return
	}
	w.stripped, w.schemaErr = c.outputSchema()
	if w.stripped != nil {
		w.strict = strictSchema(w.stripped)
	}
	switch {
	case c.exp == nil:
		w.renderErr = errNoExport
	case w.stripped == nil:
		w.renderErr = w.schemaErr
	default:
		w.body = renderBody(c.plan.Wire, c.exp, w.stripped, w.strict)
	}
	if w.body == nil {
		return
	}
	if len(given) == 0 {
		w.renderErr = errNoBody
		return
	}
	if w.diff, w.renderErr = compareCanonical(w.body, given); w.renderErr != nil {
		w.body = nil
	}
}

// outputSchema reads the output schema document, checks its digest against
// the plan's and returns S′.
func (c *check) outputSchema() (*canon.Value, error) {
	if len(c.req.OutputSchema) == 0 {
		return nil, errNoSchema
	}
	tree, err := canon.Parse(c.req.OutputSchema, canon.Options{})
	if err != nil {
		return nil, err
	}
	canonical, err := tree.Canonical()
	if err != nil {
		return nil, err
	}
	if receipts.SHA256(canonical) != c.plan.OutputSchemaDigest {
		return nil, errSchemaDigest
	}
	s := stripPrivate(tree)
	return &s, nil
}

// stripPrivate returns a copy of v without the members, at any depth,
// whose key begins with x-privacycut-. Strings are shared.
func stripPrivate(v *canon.Value) canon.Value {
	out := canon.Value{Kind: v.Kind, Bool: v.Bool, Num: v.Num, Str: v.Str}
	switch v.Kind {
	case canon.Array:
		out.Elems = make([]canon.Value, len(v.Elems))
		for i := range v.Elems {
			out.Elems[i] = stripPrivate(&v.Elems[i])
		}
	case canon.Object:
		out.Members = []canon.Member{}
		for i := range v.Members {
			m := &v.Members[i]
			if bytes.HasPrefix(m.Key, []byte(privatePrefix)) {
				continue
			}
			out.Members = append(out.Members, canon.Member{Key: m.Key, Value: stripPrivate(&m.Value)})
		}
	}
	return out
}

// strictSchema reports whether S′ meets the providers' strict
// structured-output rules: every object schema in it — every JSON object,
// at any depth, whose "type" is "object" or an array holding "object" —
// has "additionalProperties": false and lists every key of its
// "properties" in "required".
func strictSchema(v *canon.Value) bool {
	switch v.Kind {
	case canon.Array:
		for i := range v.Elems {
			if !strictSchema(&v.Elems[i]) {
				return false
			}
		}
	case canon.Object:
		if objectSchema(v) && !strictObject(v) {
			return false
		}
		for i := range v.Members {
			if !strictSchema(&v.Members[i].Value) {
				return false
			}
		}
	}
	return true
}

// objectSchema reports whether the JSON object v declares type object.
func objectSchema(v *canon.Value) bool {
	t := lookup(v, "type")
	switch {
	case t == nil:
		return false
	case t.Kind == canon.String:
		return string(t.Str) == "object"
	case t.Kind == canon.Array:
		for i := range t.Elems {
			if t.Elems[i].Kind == canon.String && string(t.Elems[i].Str) == "object" {
				return true
			}
		}
	}
	return false
}

// strictObject reports whether the object schema v forbids other
// properties and requires each of its own.
func strictObject(v *canon.Value) bool {
	if ap := lookup(v, "additionalProperties"); ap == nil || ap.Kind != canon.Bool || ap.Bool {
		return false
	}
	props := lookup(v, "properties")
	if props == nil {
		return true
	}
	if props.Kind != canon.Object {
		return false
	}
	req := lookup(v, "required")
	if len(props.Members) > 0 && (req == nil || req.Kind != canon.Array) {
		return false
	}
	for i := range props.Members {
		listed := false
		for j := range req.Elems {
			listed = listed || req.Elems[j].Kind == canon.String && bytes.Equal(req.Elems[j].Str, props.Members[i].Key)
		}
		if !listed {
			return false
		}
	}
	return true
}

// lookup returns the value of the member key of the object v, or nil.
func lookup(v *canon.Value, key string) *canon.Value {
	for i := range v.Members {
		if string(v.Members[i].Key) == key {
			return &v.Members[i].Value
		}
	}
	return nil
}

// renderBody builds the wire body of the plan's profile as a tree, whose
// canonical form is the body: canon writes the members of every object in
// RFC 8785 order, whatever their order here.
//
//	openai-chat@1: {"model":M,"messages":[{"role":"system","content":I},
//	  {"role":"user","content":<part text>}…],"max_completion_tokens":N,
//	  "response_format":{"type":"json_schema","json_schema":{"name":"answer",
//	  "strict":STRICT,"schema":S′}}}
//	anthropic-messages@1: {"model":M,"max_tokens":N,"system":I,"messages":[
//	  {"role":"user","content":[{"type":"text","text":<part text>}…]}],
//	  "tools":[{"name":"answer","input_schema":S′}],
//	  "tool_choice":{"type":"tool","name":"answer"}}
func renderBody(wire *receipts.Wire, parts []exportPart, schema *canon.Value, strict bool) *canon.Value {
	model, instruction := str(wire.Model), str(wire.Instruction)
	maxTokens := canon.Value{Kind: canon.Number, Num: strconv.Itoa(wire.MaxOutputTokens)}
	if wire.Profile == receipts.WireOpenAIChat {
		msgs := []canon.Value{object("role", str("system"), "content", instruction)}
		for _, p := range parts {
			msgs = append(msgs, object("role", str("user"), "content", canon.Value{Kind: canon.String, Str: p.text}))
		}
		body := object("model", model, "messages", array(msgs), "max_completion_tokens", maxTokens,
			"response_format", object("type", str("json_schema"), "json_schema",
				object("name", str("answer"), "strict", canon.Value{Kind: canon.Bool, Bool: strict}, "schema", *schema)))
		return &body
	}
	blocks := []canon.Value{}
	for _, p := range parts {
		blocks = append(blocks, object("type", str("text"), "text", canon.Value{Kind: canon.String, Str: p.text}))
	}
	body := object("model", model, "max_tokens", maxTokens, "system", instruction,
		"messages", array([]canon.Value{object("role", str("user"), "content", array(blocks))}),
		"tools", array([]canon.Value{object("name", str("answer"), "input_schema", *schema)}),
		"tool_choice", object("type", str("tool"), "name", str("answer")))
	return &body
}

func str(s string) canon.Value { return canon.Value{Kind: canon.String, Str: []byte(s)} }

func array(elems []canon.Value) canon.Value { return canon.Value{Kind: canon.Array, Elems: elems} }

// object builds an object of key, value pairs.
func object(kv ...any) canon.Value {
	v := canon.Value{Kind: canon.Object}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Members = append(v.Members, canon.Member{Key: []byte(kv[i].(string)), Value: kv[i+1].(canon.Value)})
	}
	return v
}

// wireMatch concludes the claim from what renderWire found.
func (c *check) wireMatch(o *outcome) {
	w := &c.wire
	if c.plan == nil {
		o.fail("plan: not decodable: the wire profile is unknown")
		return
	}
	switch w.profile {
	case receipts.WireExport:
		if len(c.req.Wire) > 0 && !bytes.Equal(c.req.Wire, c.req.Export) {
			o.fail("wire body is not the export (profile %s)", receipts.WireExport)
		}
		o.facts = "profile=" + receipts.WireExport
		return
	case receipts.WireOpenAIChat, receipts.WireAnthropicMessages:
	default:
		o.fail("wire profile unknown")
		return
	}
	if w.schemaErr != nil {
		o.fail("output schema: %s", errText(w.schemaErr))
	}
	switch {
	case w.renderErr != nil && w.renderErr != w.schemaErr:
		o.fail("wire body: %s", errText(w.renderErr))
	case w.body != nil && w.diff >= 0:
		o.fail("wire body differs from the %s body of the export and the plan at byte %d", w.profile, w.diff)
	}
	o.facts = "profile=" + w.profile + " strict=" + strconv.FormatBool(w.strict) + " bytes=" + itoa(len(c.req.Wire))
}
