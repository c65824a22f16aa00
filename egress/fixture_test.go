package egress_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/wire"
)

const policy = "privacycut-policy/1"

// t0 is the fixed "now" of the tests.
var t0 = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

// exportBytes is a canonical Export@1 whose only owner value was replaced by
// an irreversible token: no raw value anywhere.
const exportBytes = `{"parts":[{"kind":"block","text":"finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module=\"redacted:module:1\"\n"}],"profile":"closed-diagnostic@1"}`

// Opaque digests standing in for the keyed digests of the censor.
var (
	srcDigest      = "hmac-sha256:" + strings.Repeat("a1", 32)
	candDigest     = "hmac-sha256:" + strings.Repeat("c3", 32)
	labelDigest    = "hmac-sha256:" + strings.Repeat("1b", 32)
	manifestDigest = "hmac-sha256:" + strings.Repeat("e5", 32)
	vocabDigest    = "sha256:" + strings.Repeat("7d", 32)
)

// fixture describes a cut; build derives every digest consistently from it,
// as the censor and the verifier would.
type fixture struct {
	Target   string
	Consumer receipts.Consumer
	MaxUses  int
	Expires  string
	Mode     string
	Lease    string
	Policy   string
	Vocab    string // the vocabulary digest of the plan, receipts and verification
	Input    string // the first receipt's input digest
	Export   []byte
	Wire     *receipts.Wire // nil: export@1
}

// wireSchema is the output schema of the fixtures with a wire profile.
const wireSchema = `{"type":"object","additionalProperties":false,"required":["summary"],"properties":{"summary":{"type":"string"}}}`

// newWireFixture is newFixture sent as openai-chat@1.
func newWireFixture() fixture {
	f := newFixture()
	f.Target = "https://models.example.net/v1/chat/completions"
	f.Wire = &receipts.Wire{Profile: receipts.WireOpenAIChat, Model: "triage-large", Instruction: "Triage these findings.", MaxOutputTokens: 1024}
	return f
}

func newFixture() fixture {
	return fixture{
		Target:   "https://models.example.net/v1/triage",
		Consumer: receipts.Consumer{Kind: "model", ID: "triage-large"},
		MaxUses:  2,
		Expires:  t0.Add(time.Hour).Format(time.RFC3339),
		Mode:     receipts.ModeIrreversible,
		Policy:   policy,
		Vocab:    vocabDigest,
		Input:    srcDigest,
		Export:   []byte(exportBytes),
	}
}

func (f fixture) build(tb testing.TB) egress.UnverifiedSeal {
	tb.Helper()
	req, err := f.request()
	if err != nil {
		tb.Fatalf("fixture: %v", err)
	}
	return req
}

// request derives the seal request; an error means a value did not encode.
func (f fixture) request() (egress.UnverifiedSeal, error) {
	var err error
	digest := func(v any) string {
		d, e := receipts.DigestCanonical(v)
		if e != nil && err == nil {
			err = e
		}
		return d
	}
	plan := receipts.Plan{
		Schema:         receipts.SchemaPlan,
		Consumer:       f.Consumer,
		Purpose:        "dependency-triage",
		Target:         f.Target,
		Mode:           f.Mode,
		ManifestDigest: manifestDigest,
		RestrictedRef:  srcDigest,
		Invariants:     append([]string(nil), receipts.RequiredInvariants...),
		ThreatModel:    "remote-model/1",
		Retention:      "no-retention/1",
		MaxUses:        f.MaxUses,
		Categories: receipts.PlanCategories{
			Allowed:    []string{"module", "package"},
			Prohibited: []string{"credential"},
		},
		VocabularyDigest: f.Vocab,
		MaxParents:       64,
		ExpiresAt:        f.Expires,
		PolicyRevision:   f.Policy,
	}
	var body []byte
	if f.Wire != nil {
		w := *f.Wire
		plan.Wire = &w
		c, cerr := canon.Canonicalize([]byte(wireSchema))
		if cerr != nil {
			return egress.UnverifiedSeal{}, cerr
		}
		plan.OutputSchemaDigest = receipts.SHA256(c)
		if body, err = wire.Render(f.Export, &plan, []byte(wireSchema)); err != nil {
			body = []byte("unrenderable")
			err = nil
		}
	}
	planDigest := digest(&plan)
	exportDigest := receipts.SHA256(f.Export)
	r0 := receipts.TransformationReceipt{
		Schema: receipts.SchemaTransformation, Stage: "censor", Revision: "censor/1", Index: 0,
		InputDigest: f.Input, OutputDigest: candDigest,
		PlanDigest: planDigest, VocabularyDigest: f.Vocab, LabelDigest: labelDigest,
		Parents:    []string{},
		Operations: []receipts.Operation{{Op: "replace-owner", Category: "module", Count: 1}},
	}
	r1 := receipts.TransformationReceipt{
		Schema: receipts.SchemaTransformation, Stage: "export", Revision: "export/1", Index: 1,
		InputDigest: candDigest, OutputDigest: exportDigest,
		PlanDigest: planDigest, VocabularyDigest: f.Vocab, LabelDigest: labelDigest,
		Parents:      []string{digest(&r0)},
		Operations:   []receipts.Operation{{Op: "drop-metadata", Category: "part", Count: 1}},
		Terminal:     true,
		ExportDigest: exportDigest,
	}
	var claims []receipts.Claim
	for _, n := range []string{"export-canonical", "coverage", "public-preserved", "owners-replaced",
		"token-consistency", "no-residual", "plan-match", "receipt-chain", "wire-match"} {
		claims = append(claims, receipts.Claim{Name: n, OK: true})
	}
	return egress.UnverifiedSeal{
		SourceDigest: srcDigest,
		Export:       append([]byte(nil), f.Export...),
		Plan:         plan,
		Receipts:     []receipts.TransformationReceipt{r0, r1},
		Verification: receipts.Verification{
			Schema: receipts.SchemaVerification, Verdict: "pass", Claims: claims,
			Verifier: "verifier/1", Mode: f.Mode,
			SourceDigest: srcDigest, ExportDigest: exportDigest, PlanDigest: planDigest,
			VocabularyDigest: f.Vocab, ReceiptsDigest: digest(&r1),
			WireDigest: wireDigest(body, exportDigest),
		},
		Wire:  body,
		Lease: f.Lease,
	}, err
}

// wireDigest is the verification's wire digest: of the body, or the export
// digest for export@1.
func wireDigest(body []byte, exportDigest string) string {
	if body == nil {
		return exportDigest
	}
	return receipts.SHA256(body)
}

func mustDigest(tb testing.TB, v any) string {
	tb.Helper()
	d, err := receipts.DigestCanonical(v)
	if err != nil {
		tb.Fatalf("digest: %v", err)
	}
	return d
}

// clock is an injectable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

// readJournal decodes every line of the journal strictly: each must be one
// whole JSON object ended by LF, with no unknown fields.
func readJournal(tb testing.TB, path string) []egress.Entry {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read journal: %v", err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		tb.Fatalf("journal does not end with a whole line")
	}
	var out []egress.Entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var e egress.Entry
		if err := dec.Decode(&e); err != nil {
			tb.Fatalf("journal line %d: %v", n, err)
		}
		if dec.More() {
			tb.Fatalf("journal line %d: trailing data", n)
		}
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("scan journal: %v", err)
	}
	return out
}
