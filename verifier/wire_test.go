package verifier

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// testSchema is an output schema a strict provider accepts, with a
// rehydration marking that never leaves.
const testSchema = `{"type":"object","additionalProperties":false,"required":["findings"],
 "properties":{"findings":{"type":"array","maxItems":10,"items":{"type":"object","additionalProperties":false,
  "required":["owner_module","advice"],"properties":{
   "owner_module":{"type":"string","x-privacycut-rehydrate":{"category":"module","purpose":"triage","max":10}},
   "advice":{"type":"string","maxLength":200}}}}}}`

const testInstruction = "Rank the findings by severity.\nAnswer in JSON."

func wireOf(profile string) *receipts.Wire {
	return &receipts.Wire{Profile: profile, Model: "model-1", Instruction: testInstruction, MaxOutputTokens: 1024}
}

// wireCut is an honest cut of sampleParts sent as profile.
func wireCut(t *testing.T, profile string, mode string) Request {
	t.Helper()
	return makeCut(t, sampleParts, cutOptions{Mode: mode, Wire: wireOf(profile), Schema: []byte(testSchema)})
}

var providerProfiles = []string{receipts.WireOpenAIChat, receipts.WireAnthropicMessages}

// TestVerifyWireHonest: an honest cut passes every claim under each
// profile and mode, and its wire digest is S(body) (the export digest for
// export@1).
func TestVerifyWireHonest(t *testing.T) {
	for _, profile := range providerProfiles {
		for _, mode := range []string{receipts.ModeIrreversible, receipts.ModeReversible} {
			t.Run(profile+"/"+mode, func(t *testing.T) {
				req := wireCut(t, profile, mode)
				v := Verify(req)
				checkShape(t, v)
				if diff := cmp.Diff([]string{}, failedClaims(v)); diff != "" {
					t.Fatalf("failed claims (-want +got):\n%s\n%+v", diff, v.Claims)
				}
				if want := receipts.SHA256(req.Wire); v.WireDigest != want {
					t.Errorf("wire digest %s, want %s", v.WireDigest, want)
				}
				if c := v.Claims[len(v.Claims)-1]; c.Name != receipts.ClaimWireMatch || !strings.Contains(c.Detail, "strict=true") {
					t.Errorf("last claim %+v", c)
				}
			})
		}
	}
	t.Run("export@1", func(t *testing.T) {
		for _, w := range []*receipts.Wire{nil, {Profile: receipts.WireExport}} {
			req := makeCut(t, sampleParts, cutOptions{Wire: w})
			for _, body := range [][]byte{nil, req.Export} {
				req.Wire = body
				v := Verify(req)
				if len(v.Failed()) != 0 || v.WireDigest != req.ExportDigest {
					t.Fatalf("wire %+v, body given %v: failed %v, wire digest %s", w, body != nil, v.Failed(), v.WireDigest)
				}
			}
		}
	})
}

// TestVerifyWireCorruptions: each seeded corruption of a wire body, every
// other digest consistent, fails the claim named and no other.
func TestVerifyWireCorruptions(t *testing.T) {
	type corruption struct {
		name  string
		opt   func(o *cutOptions) // changes the cut before it is made
		req   func(t *testing.T, r *Request)
		claim string
	}
	rerender := func(r *Request, w *receipts.Wire, texts []string, schema []byte) {
		r.Wire = renderWithCuttest(t, w, texts, schema)
	}
	corruptions := []corruption{
		{name: "a byte changed in the wire body", req: func(t *testing.T, r *Request) {
			i := bytes.Index(r.Wire, []byte("Rank"))
			r.Wire = bytes.Clone(r.Wire)
			r.Wire[i] = 'r'
		}, claim: receipts.ClaimWireMatch},
		{name: "the instruction swapped", req: func(t *testing.T, r *Request) {
			w := planWire(t, r)
			w.Instruction = "Ignore the findings."
			rerender(r, w, exportTexts(t, r), r.OutputSchema)
		}, claim: receipts.ClaimWireMatch},
		{name: "a part reordered", req: func(t *testing.T, r *Request) {
			texts := exportTexts(t, r)
			texts[0], texts[1] = texts[1], texts[0]
			rerender(r, planWire(t, r), texts, r.OutputSchema)
		}, claim: receipts.ClaimWireMatch},
		{name: "an owner value in the instruction", opt: func(o *cutOptions) {
			o.Wire.Instruction = "Focus on git.corp.example/pay/ledger."
		}, claim: receipts.ClaimNoResidual},
		{name: "an escaped owner value, as it reads, in the instruction", opt: func(o *cutOptions) {
			o.Wire.Instruction = `Ask a "b" c first.`
		}, claim: receipts.ClaimNoResidual},
		{name: "an owner value as the model", opt: func(o *cutOptions) {
			o.Wire.Model = "pay core"
		}, claim: receipts.ClaimNoResidual},
		{name: "an owner value in the schema", opt: func(o *cutOptions) {
			o.Schema = []byte(strings.Replace(testSchema, `"maxLength":200`, `"maxLength":200,"description":"for pay core"`, 1))
		}, claim: receipts.ClaimNoResidual},
		{name: "the schema altered", req: func(t *testing.T, r *Request) {
			r.OutputSchema = []byte(strings.Replace(testSchema, `"maxItems":10`, `"maxItems":11`, 1))
			rerender(r, planWire(t, r), exportTexts(t, r), r.OutputSchema)
		}, claim: receipts.ClaimWireMatch},
		{name: "the schema rendered without its plan's document", req: func(t *testing.T, r *Request) {
			rerender(r, planWire(t, r), exportTexts(t, r), []byte(strings.Replace(testSchema, `"maxItems":10`, `"maxItems":11`, 1)))
		}, claim: receipts.ClaimWireMatch},
		{name: "the model changed", req: func(t *testing.T, r *Request) {
			w := planWire(t, r)
			w.Model = "model-2"
			rerender(r, w, exportTexts(t, r), r.OutputSchema)
		}, claim: receipts.ClaimWireMatch},
		{name: "the strict flag set on a schema that is not strict", opt: func(o *cutOptions) {
			o.Schema = []byte(strings.Replace(testSchema, `"additionalProperties":false,"required":["findings"]`, `"required":["findings"]`, 1))
		}, req: func(t *testing.T, r *Request) {
			if !bytes.Contains(r.Wire, []byte(`"strict":false`)) {
				t.Skip("the profile has no strict flag")
			}
			r.Wire = bytes.Replace(r.Wire, []byte(`"strict":false`), []byte(`"strict":true`), 1)
		}, claim: receipts.ClaimWireMatch},
		{name: "no wire body", req: func(t *testing.T, r *Request) { r.Wire = nil }, claim: receipts.ClaimWireMatch},
		{name: "no output schema", req: func(t *testing.T, r *Request) { r.OutputSchema = nil }, claim: receipts.ClaimWireMatch},
		{name: "the export sent for a provider profile", req: func(t *testing.T, r *Request) { r.Wire = r.Export }, claim: receipts.ClaimWireMatch},
	}
	for _, profile := range providerProfiles {
		for _, tc := range corruptions {
			t.Run(profile+"/"+tc.name, func(t *testing.T) {
				opt := cutOptions{Wire: wireOf(profile), Schema: []byte(testSchema)}
				if tc.opt != nil {
					tc.opt(&opt)
				}
				req := makeCut(t, sampleParts, opt)
				if tc.req != nil {
					tc.req(t, &req)
				}
				v := Verify(req)
				checkShape(t, v)
				if diff := cmp.Diff([]string{tc.claim}, failedClaims(v)); diff != "" {
					t.Fatalf("failed claims (-want +got):\n%s\n%+v", diff, v.Claims)
				}
				checkContentFreeVerification(t, v, "git.corp.example", "pay core", "Rank the", "Ignore")
			})
		}
	}
	t.Run("export@1 with another body", func(t *testing.T) {
		req := makeCut(t, sampleParts, cutOptions{})
		req.Wire = wireCut(t, receipts.WireOpenAIChat, "").Wire
		if got := failedClaims(Verify(req)); !slices.Equal(got, []string{receipts.ClaimWireMatch}) {
			t.Fatalf("failed %v", got)
		}
	})
}

// TestVerifyWireStrict: the strict flag follows the schema, under both
// profiles' renderers.
func TestVerifyWireStrict(t *testing.T) {
	for _, tc := range []struct {
		name   string
		schema string
		strict bool
	}{
		{"strict", testSchema, true},
		{"nested object without additionalProperties", strings.Replace(testSchema, `"type":"object","additionalProperties":false,
  "required":["owner_module","advice"]`, `"type":"object","required":["owner_module","advice"]`, 1), false},
		{"a property not required", strings.Replace(testSchema, `"required":["owner_module","advice"]`, `"required":["advice"]`, 1), false},
		{"additionalProperties true", strings.Replace(testSchema, `"additionalProperties":false,"required":["findings"]`, `"additionalProperties":true,"required":["findings"]`, 1), false},
		{"a nullable object", `{"type":["object","null"],"properties":{"a":{"type":"string"}},"required":["a"]}`, false},
		{"a strict nullable object", `{"type":["object","null"],"additionalProperties":false,"properties":{"a":{"type":"string"}},"required":["a"]}`, true},
		{"no object", `{"type":"string"}`, true},
	} {
		for _, profile := range providerProfiles {
			t.Run(tc.name+"/"+profile, func(t *testing.T) {
				req := makeCut(t, sampleParts, cutOptions{Wire: wireOf(profile), Schema: []byte(tc.schema)})
				v := Verify(req)
				if len(v.Failed()) != 0 {
					t.Fatalf("failed %v: %+v", v.Failed(), v.Claims)
				}
				want := "strict=" + map[bool]string{true: "true", false: "false"}[tc.strict]
				if d := v.Claims[len(v.Claims)-1].Detail; !strings.Contains(d, want) {
					t.Fatalf("wire-match %q, want %s", d, want)
				}
			})
		}
	}
}

// TestVerifyWireMalformedPlan: a plan whose wire is malformed fails
// plan-match, naming the field.
func TestVerifyWireMalformedPlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		wire   receipts.Wire
		schema bool
		detail string
	}{
		{"unknown profile", receipts.Wire{Profile: "gemini@1", Model: "m", MaxOutputTokens: 1}, true, "wire: profile unknown"},
		{"no model", receipts.Wire{Profile: receipts.WireOpenAIChat, Instruction: "i", MaxOutputTokens: 1}, true, "wire: model empty"},
		{"no max_output_tokens", receipts.Wire{Profile: receipts.WireAnthropicMessages, Model: "m", Instruction: "i"}, true, "max_output_tokens"},
		{"export@1 with a model", receipts.Wire{Profile: receipts.WireExport, Model: "m"}, false, "takes no model"},
		{"provider profile without an output schema digest", receipts.Wire{Profile: receipts.WireOpenAIChat, Model: "m", MaxOutputTokens: 1}, false, "output_schema_digest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opt := cutOptions{Plan: func(p *receipts.Plan) { w := tc.wire; p.Wire = &w }}
			if tc.schema {
				opt.Schema = []byte(testSchema)
			}
			v := Verify(makeCut(t, sampleParts, opt))
			if !slices.Contains(v.Failed(), receipts.ClaimPlanMatch) {
				t.Fatalf("plan-match holds; failed %v", v.Failed())
			}
			if d := v.Claims[6].Detail; !strings.Contains(d, tc.detail) {
				t.Fatalf("plan-match %q, want %q", d, tc.detail)
			}
		})
	}
}

// planWire returns a copy of the request's plan's wire.
func planWire(t *testing.T, r *Request) *receipts.Wire {
	t.Helper()
	p, err := parsePlan(r.Plan)
	if err != nil || p.Wire == nil {
		t.Fatalf("plan: %v", err)
	}
	w := *p.Wire
	return &w
}

// exportTexts returns the texts of the request's export.
func exportTexts(t *testing.T, r *Request) []string {
	t.Helper()
	var e struct {
		Parts []struct {
			Kind, Text string
		} `json:"parts"`
		Profile string `json:"profile"`
	}
	if err := json.Unmarshal(r.Export, &e); err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, p := range e.Parts {
		texts = append(texts, p.Text)
	}
	return texts
}

// checkContentFreeVerification fails if the verification, encoded, holds
// any of the planted strings.
func checkContentFreeVerification(t *testing.T, v receipts.Verification, planted ...string) {
	t.Helper()
	b, err := canon.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range planted {
		if bytes.Contains(b, []byte(p)) {
			t.Fatalf("verification holds %q: %s", p, b)
		}
	}
}

// TestVerifyWireSearchedWhole: a wire body that is not the one rendered
// from the export and the plan is searched whole: an owner value in it
// fails no-residual beside wire-match, whatever the plan says.
func TestVerifyWireSearchedWhole(t *testing.T) {
	leak := `{"messages":[{"content":"git.corp.example/pay/ledger","role":"user"}],"model":"m"}`
	for _, tc := range []struct {
		name   string
		change func(r *Request)
		body   string
	}{
		{"export@1", func(r *Request) {}, leak},
		{"plan undecodable", func(r *Request) { r.Plan = []byte("{") }, leak},
		{"a provider profile", func(r *Request) { *r = wireCut(t, receipts.WireOpenAIChat, "") }, leak},
		{"not JSON, searched as its bytes", func(r *Request) {}, "x" + leak},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := makeCut(t, sampleParts, cutOptions{})
			tc.change(&req)
			req.Wire = []byte(tc.body)
			got := failedClaims(Verify(req))
			if !slices.Contains(got, receipts.ClaimNoResidual) || !slices.Contains(got, receipts.ClaimWireMatch) {
				t.Fatalf("failed %v", got)
			}
		})
	}
}

// TestWireStringsKept: the index of a rendered body's own strings is kept
// for the next verification of the same strings, is built again for other
// strings, and is never kept when the strings hold an owner value: such a
// request fails no-residual every time, and the clean index stays.
func TestWireStringsKept(t *testing.T) {
	clean := makeCut(t, sampleParts, cutOptions{Wire: wireOf(receipts.WireOpenAIChat), Schema: []byte(testSchema)})
	leakyWire := wireOf(receipts.WireOpenAIChat)
	leakyWire.Instruction = "Focus on git.corp.example/pay/ledger."
	leaky := makeCut(t, sampleParts, cutOptions{Wire: leakyWire, Schema: []byte(testSchema)})
	otherWire := wireOf(receipts.WireOpenAIChat)
	otherWire.Instruction = "Rank the findings."
	other := makeCut(t, sampleParts, cutOptions{Wire: otherWire, Schema: []byte(testSchema)})
	steps := []struct {
		name  string
		req   Request
		pass  bool
		built int64 // indexes built by the step
	}{
		{"clean", clean, true, 1},
		{"clean again", clean, true, 0},
		{"an owner value in the instruction", leaky, false, 1},
		{"the same again", leaky, false, 1},
		{"clean after it", clean, true, 0},
		{"other strings", other, true, 1},
		{"other strings again", other, true, 0},
	}
	// The first step starts from strings no other test used.
	keepWireStrings(nil, nil)
	for _, s := range steps {
		before := wireStringsBuilt.Load()
		v := Verify(s.req)
		if got := v.Verdict == receipts.VerdictPass; got != s.pass {
			t.Fatalf("%s: verdict %s, failed %v", s.name, v.Verdict, v.Failed())
		}
		if !s.pass && !slices.Equal(v.Failed(), []string{receipts.ClaimNoResidual}) {
			t.Fatalf("%s: failed %v, want only %s", s.name, v.Failed(), receipts.ClaimNoResidual)
		}
		if got := wireStringsBuilt.Load() - before; got != s.built {
			t.Fatalf("%s: %d indexes built, want %d", s.name, got, s.built)
		}
		lastWireStrings.Lock()
		held := bytes.Contains(lastWireStrings.text, []byte("git.corp.example/pay/ledger"))
		lastWireStrings.Unlock()
		if held {
			t.Fatalf("%s: the kept strings hold an owner value", s.name)
		}
	}
}
