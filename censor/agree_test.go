package censor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
)

var agreeNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

type agreeFixture struct {
	vocab      *grammar.Vocabulary
	vocabBytes []byte
	key        *receipts.EvidenceKey
}

func newAgreeFixture(t testing.TB) *agreeFixture {
	vb, err := os.ReadFile("../examples/vocabulary.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := grammar.LoadVocabulary(vb)
	if err != nil {
		t.Fatal(err)
	}
	k, err := receipts.NewEvidenceKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return &agreeFixture{vocab: v, vocabBytes: vb, key: k}
}

// cut runs the censor and returns the verifier request for its output, or
// nil when the censor refuses.
func (f *agreeFixture) cut(t testing.TB, source []byte) (*censor.Output, *verifier.Request) {
	d, refs := grammar.LoadProjection(source, grammar.LoadOptions{})
	if refs != nil {
		return nil, nil
	}
	plan, err := censor.NewPlan(d, f.vocab, f.key, censor.PlanOptions{Consumer: receipts.Consumer{Kind: "model", ID: "m"},
		Purpose: "triage", Target: "https://model.example/", Now: agreeNow})
	if err != nil {
		return nil, nil
	}
	out, err := censor.Cut(context.Background(), censor.Input{Doc: d, Vocabulary: f.vocab, Plan: plan, Key: f.key})
	var re *censor.RefusedError
	if errors.As(err, &re) {
		return nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	// The export written in one pass (Irreversible) is the one written
	// through the template that other token sources use.
	viaTemplate, err := censor.Cut(context.Background(), censor.Input{Doc: d, Vocabulary: f.vocab, Plan: plan, Key: f.key, Tokens: templateSource{}})
	if err != nil || !reflect.DeepEqual(out, viaTemplate) {
		t.Fatalf("the one-pass and the template exports differ (err %v):\n%s\n%s", err, out.Export, viaTemplate.Export)
	}
	pb, _ := canon.Marshal(plan)
	rb, _ := canon.Marshal(out.Receipts)
	return out, &verifier.Request{Source: source, Export: out.Export, ExportDigest: out.ExportDigest,
		Plan: pb, Vocabulary: f.vocabBytes, Receipts: rb, EvidenceKey: f.key, Now: agreeNow}
}

// templateSource issues the irreversible tokens, but is not censor.Irreversible:
// the censor takes its template path for it.
type templateSource struct{}

func (templateSource) Mode() string { return receipts.ModeIrreversible }

func (templateSource) Issue(ctx context.Context, digest string, pairs []censor.Pair) ([]string, error) {
	return censor.Irreversible{}.Issue(ctx, digest, pairs)
}

// projectionWith builds a projection whose first record carries value as an
// owner value of category cat, around real vocabulary items.
func projectionWith(cat, value string, extra string) []byte {
	text := "finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner." + cat + "=\"" + value + "\"\n" +
		"finding GO-2022-0969 golang.org/x/net@v0.0.0-20220524220425-1d687d428aca affected https://go.dev/issue/54658 owner.module=\"" + value + "\" owner.team=\"t\"\n" + extra
	tb, _ := json.Marshal(text)
	return []byte(`{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[{"kind":"block","key":"k","text":` + string(tb) +
		`,"label":{"class":"private","weight":1,"categories":[],"subjects":[],"parents":["p"],"handling":[]},"lineage":["l"]}]}`)
}

// rebind recomputes, with the evidence key, every digest that depends on the
// export, as the strongest forger could: export digest, candidate digest,
// receipt digests and parents. Only the content claims can then catch a
// tampered export.
func rebind(t testing.TB, f *agreeFixture, req *verifier.Request, out *censor.Output, export []byte) *verifier.Request {
	var src struct {
		Parts []struct {
			Kind string `json:"kind"`
			Key  string `json:"key"`
		} `json:"parts"`
	}
	json.Unmarshal(req.Source, &src)
	var exp struct {
		Parts []struct {
			Kind string `json:"kind"`
			Text string `json:"text"`
		} `json:"parts"`
	}
	r := *req
	r.Export = export
	r.ExportDigest = receipts.SHA256(export)
	if err := json.Unmarshal(export, &exp); err != nil || len(exp.Parts) != len(src.Parts) {
		return &r // not even an export: digests still rebound above
	}
	type cpart struct {
		Kind string `json:"kind"`
		Key  string `json:"key"`
		Text string `json:"text"`
	}
	cand := struct {
		Schema string  `json:"schema"`
		Parts  []cpart `json:"parts"`
	}{Schema: "Candidate@1"}
	for i, p := range exp.Parts {
		cand.Parts = append(cand.Parts, cpart{Kind: p.Kind, Key: src.Parts[i].Key, Text: p.Text})
	}
	cd, err := f.key.HMACCanonical(cand)
	if err != nil {
		return &r
	}
	rs := append([]receipts.TransformationReceipt(nil), out.Receipts...)
	rs[0].OutputDigest = cd
	d0, _ := rs[0].Digest()
	rs[1].InputDigest, rs[1].OutputDigest, rs[1].ExportDigest, rs[1].Parents = cd, r.ExportDigest, r.ExportDigest, []string{d0}
	r.Receipts, _ = canon.Marshal(rs)
	return &r
}

// FuzzVerifierAgrees: every projection the censor accepts passes the
// verifier; a single-byte change to the export, with every digest recomputed
// to match, fails it.
func FuzzVerifierAgrees(f *testing.F) {
	f.Add("module", "git.corp.example/payments/ledger", "", uint32(0), byte('x'))
	f.Add("person", `Zoë \"zo\" Quill`, "ask triage.rank-by-severity owner.team=\"payments core\"\n", uint32(400), byte('1'))
	f.Add("file", "a b@c=d", "", uint32(180), byte(' '))
	f.Add("host", "redacted:module:1", "", uint32(77), byte('"'))
	f.Add("team", `\"`, "", uint32(5), byte('x'))
	f.Add("team", `redacted:team:1\" owner.module=\"redacted:module:1`, "", uint32(9), byte('y'))
	fx := newAgreeFixture(f)
	f.Fuzz(func(t *testing.T, cat, value, extra string, at uint32, b byte) {
		if strings.ContainsAny(cat, "\"\\") || len(value) > 512 || len(extra) > 512 {
			return
		}
		out, req := fx.cut(t, projectionWith(cat, value, extra))
		if out == nil {
			return
		}
		v := verifier.Verify(*req)
		if v.Verdict != "pass" {
			t.Fatalf("censor accepted, verifier failed %v (value %q, extra %q)", v.Failed(), value, extra)
		}
		export := append([]byte(nil), out.Export...)
		i := int(at) % len(export)
		if export[i] == b {
			return
		}
		export[i] = b
		if v := verifier.Verify(*rebind(t, fx, req, out, export)); v.Verdict == "pass" {
			t.Fatalf("export byte %d changed to %q, verifier passed:\n%s", i, b, export)
		}
	})
}

func TestVerifierAgreesExample(t *testing.T) {
	fx := newAgreeFixture(t)
	src, _ := os.ReadFile("../examples/projection.json")
	out, req := fx.cut(t, src)
	if out == nil {
		t.Fatal("example refused")
	}
	if v := verifier.Verify(*req); v.Verdict != "pass" {
		t.Fatalf("failed %v", v.Failed())
	}
	// Single-byte changes all over the example export fail, digests rebound
	// (every 7th byte: each verification reloads the 3,000-citation vocabulary).
	for i := 0; i < len(out.Export); i += 7 {
		export := append([]byte(nil), out.Export...)
		export[i] ^= 0x01
		if v := verifier.Verify(*rebind(t, fx, req, out, export)); v.Verdict == "pass" {
			t.Fatalf("byte %d flipped: verifier passed", i)
		}
	}
}

// FuzzVerifierReadsVocabulary: the verifier reads every vocabulary the
// grammar accepts as the grammar does. A projection is written from the
// vocabulary's own items, with value as owner values; whenever the censor
// cuts it, the verifier, given the same vocabulary bytes, passes the cut.
// (The converse is not asserted: the verifier does not check the items
// themselves and accepts vocabularies the grammar refuses.)
func FuzzVerifierReadsVocabulary(f *testing.F) {
	small := `{"schema":"Vocabulary@1","revision":"r","diagnostics":["GO-1"],"modules":{"m.example/a":["v1.0.0","v1.1.0"]},` +
		`"statuses":["affected"],"citations":["https://x.example/1"],"questions":["q.ask"]}`
	f.Add([]byte(small), "git.corp.example/ledger")
	f.Add([]byte(small), "v1.1.0") // a version as an owner value: ambiguous for both
	f.Add([]byte(small), "m.example/a")
	f.Add([]byte(strings.ReplaceAll(small, "GO-1", "Zo\u00eb")), "Zoe\u0301")
	f.Add([]byte(strings.ReplaceAll(small, "v1.1.0", "redacted:module:1")), "x")
	f.Add([]byte(strings.ReplaceAll(small, `"affected"`, `"affected","fixed"`)), `a \"b\" c`)
	f.Add([]byte(`{"schema":"Vocabulary@1","revision":"","diagnostics":["\u00e9"],"modules":{"\u00e9":["\u00e9"]},`+
		`"statuses":["\u00e9"],"citations":["\u00e9"],"questions":["\u00e9"]}`), "e")
	fx := newAgreeFixture(f)
	f.Fuzz(func(t *testing.T, vb []byte, value string) {
		if len(vb) > 4096 || len(value) > 256 {
			return
		}
		v, err := grammar.LoadVocabulary(vb)
		if err != nil {
			return
		}
		var d struct {
			Diagnostics []string            `json:"diagnostics"`
			Modules     map[string][]string `json:"modules"`
			Statuses    []string            `json:"statuses"`
			Citations   []string            `json:"citations"`
			Questions   []string            `json:"questions"`
		}
		if err := json.Unmarshal(vb, &d); err != nil {
			t.Fatalf("the grammar accepted a vocabulary encoding/json refuses: %v", err)
		}
		var text string
		if len(d.Diagnostics) > 0 && len(d.Statuses) > 0 {
			for m, vers := range d.Modules {
				if len(vers) == 0 {
					continue
				}
				text += "finding " + d.Diagnostics[0] + " " + m + "@" + vers[0] + " " + d.Statuses[0]
				if len(vers) > 1 {
					text += " fixed=" + vers[len(vers)-1]
				}
				if len(d.Citations) > 0 {
					text += " " + d.Citations[0]
				}
				text += " owner.module=\"" + value + "\" owner.team=\"t\"\n"
				break
			}
		}
		if len(d.Questions) > 0 {
			text += "ask " + d.Questions[0] + " owner.person=\"" + value + "\"\n"
		}
		if text == "" {
			return
		}
		tb, _ := json.Marshal(text)
		src := []byte(`{"schema":"Projection@1","profile":"closed-diagnostic@1","parts":[{"kind":"block","key":"k","text":` + string(tb) +
			`,"label":{"class":"private","weight":1,"categories":[],"subjects":[],"parents":["p"],"handling":[]},"lineage":["l"]}]}`)
		vfx := &agreeFixture{vocab: v, vocabBytes: vb, key: fx.key}
		out, req := vfx.cut(t, src)
		if out == nil {
			return
		}
		res := verifier.Verify(*req)
		if res.Verdict == "pass" || readsAsPublicRun(t, out.Export, value) && slices.Equal(res.Failed(), []string{"no-residual"}) {
			return
		}
		t.Fatalf("censor cut under a vocabulary the grammar accepts, verifier failed %v:\n%+v", res.Failed(), res.Claims)
	})
}

// readsAsPublicRun reports whether value holds a separator byte and reads in
// one of the export's texts: a run of public items and separators equal to
// an owner value. The censor leaves that cut to the verifier's no-residual
// claim, which must fail it (docs/DESIGN.md, "no-residual and the wire
// body"); any other disagreement fails the fuzz target.
func readsAsPublicRun(t *testing.T, export []byte, value string) bool {
	if !strings.ContainsAny(value, " @=\n") {
		return false
	}
	var exp struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	}
	if err := json.Unmarshal(export, &exp); err != nil {
		t.Fatalf("the censor wrote an export encoding/json refuses: %v", err)
	}
	for _, p := range exp.Parts {
		if strings.Contains(p.Text, value) {
			return true
		}
	}
	return false
}
