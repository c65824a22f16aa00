// Package wire renders the exact request a cut is sent as — its wire body —
// and reads the provider's answer back, per wire profile.
//
// A plan's wire member names the profile, the model, the instruction and
// the output-token ceiling. The wire body is a pure function of the export
// bytes, the plan and the output schema document, written as RFC 8785
// canonical JSON ([Render]):
//
//   - export@1 (a plan without wire): the export bytes themselves.
//   - openai-chat@1 (OpenAI Chat Completions):
//     {"model":M,"messages":[{"role":"system","content":I},
//     {"role":"user","content":T1},…],"max_completion_tokens":N,
//     "response_format":{"type":"json_schema","json_schema":{"name":"answer",
//     "strict":B,"schema":S′}}} — one user message per export part, in order.
//   - anthropic-messages@1 (Anthropic Messages, anthropic-version
//     2023-06-01): {"model":M,"max_tokens":N,"system":I,"messages":[{"role":
//     "user","content":[{"type":"text","text":T1},…]}],"tools":[{"name":
//     "answer","input_schema":S′}],"tool_choice":{"type":"tool","name":
//     "answer"}} — one text block per export part, in order.
//
// S′ is the output schema with every member whose name begins with
// "x-privacycut-" removed, at any depth ([Strip]); the digest a plan binds
// is of the schema as given, markings included ([Schema.Digest]). B is true
// exactly when S′ meets the providers' strict structured-output rules: every
// object schema has "additionalProperties": false and lists every property
// in "required" ([CheckStrict] says where and why not). Object schemas are
// found by the walk [Strictness] documents.
//
// A worked example. The export
//
//	{"parts":[{"kind":"query","text":"ask triage.explain\n"}],"profile":"closed-diagnostic@1"}
//
// under a plan with wire {"profile":"openai-chat@1","model":"m1",
// "instruction":"Answer in JSON.","max_output_tokens":512} and the schema
//
//	{"type":"object","additionalProperties":false,"required":["summary"],
//	 "properties":{"summary":{"type":"string",
//	   "x-privacycut-rehydrate":{"category":"team","purpose":"triage","max":1}}}}
//
// has the wire body (one line)
//
//	{"max_completion_tokens":512,"messages":[{"content":"Answer in JSON.","role":"system"},
//	{"content":"ask triage.explain\n","role":"user"}],"model":"m1","response_format":
//	{"json_schema":{"name":"answer","schema":{"additionalProperties":false,"properties":
//	{"summary":{"type":"string"}},"required":["summary"],"type":"object"},"strict":true},
//	"type":"json_schema"}}
//
// # Answers
//
// [ReadAnswer] takes the HTTP status and body of the provider's response
// and returns the answer document: for openai-chat@1 the content of exactly
// one choice that finished with "stop", without refusal or tool calls,
// parsed as strict JSON; for anthropic-messages@1 the input of exactly one
// tool_use block named "answer" of a message that stopped with "tool_use";
// for export@1 the body of a 2xx response. Anything else is an
// [*AnswerError] with code UPSTREAM_FAILED and a fixed reason.
//
// # Security properties
//
// Guaranteed:
//
//   - The body holds the export parts' texts, the plan's model and
//     instruction, the ceiling and S′, and nothing else: no part kind, key,
//     label, digest or marking. Equal inputs give equal bytes; reformatting
//     the schema document changes neither its digest nor the body.
//   - A body is rendered only for a schema whose digest is the plan's
//     output_schema_digest, and only from a canonical Export@1 document.
//   - Every response is read with the strict parser: a duplicate key,
//     invalid UTF-8 or trailing data makes it unusable, so no two readers
//     can see two different answers.
//   - Errors are content-free: fixed reasons, plan field names, part
//     indexes, positions and HTTP statuses, never the instruction, a part's
//     text, a piece of the schema or the provider's text.
//
// Not guaranteed:
//
//   - The instruction is not searched for owner values: this package does
//     not know them. It is public text the operator writes and the route's
//     reviewer approves; the verifier's no-residual claim searches the whole
//     wire body. It is checked only for being 1 byte to 64 KiB of valid
//     UTF-8.
//   - ReadAnswer checks the shape of the provider's response, not the
//     answer against the schema: rehydration validates the answer.
//   - Strictness is the two rules above. A schema may meet them and still
//     use a keyword a provider does not support in strict mode.
//
// The caller's duties: send exactly the rendered bytes (the seal binds
// their digest and the gate admits only them), and treat an answer as
// untrusted remote output.
package wire
