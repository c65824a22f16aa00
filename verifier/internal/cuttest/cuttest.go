// Package cuttest builds honest cuts, and cuts made consistently around
// chosen tokens or plans, by plain string work: a small independent censor
// for the verifier's tests and its plugin's. It imports neither the
// verifier nor the censor.
package cuttest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// Vocab is the vocabulary of the cuts built here.
const Vocab = `{"schema":"Vocabulary@1","revision":"t/1",
 "diagnostics":["GO-2023-2102","GO-2024-2687"],
 "modules":{"golang.org/x/net":["v0.15.0","v0.17.0"],"golang.org/x/crypto":["v0.14.0"]},
 "statuses":["affected","fixed"],
 "citations":["https://go.dev/issue/63417"],
 "questions":["triage.explain"]}`

// KeyBytes are the evidence key of the cuts built here.
var KeyBytes = []byte("0123456789abcdef0123456789abcdef")

// Key returns a fresh evidence key holding KeyBytes.
func Key(t testing.TB) *receipts.EvidenceKey {
	t.Helper()
	k, err := receipts.NewEvidenceKey(KeyBytes)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Now is a time at which the plans built here have not expired.
var Now = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// Part is one part of a projection built in code.
type Part struct {
	Kind, Key, Text string
}

// Sample is a cut of two parts, with an escaped owner value.
var Sample = []Part{
	{"block", "scan", "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module=\"git.corp.example/pay/ledger\" owner.team=\"pay core\"\n" +
		"finding GO-2024-2687 golang.org/x/crypto@v0.14.0 fixed https://go.dev/issue/63417 owner.module=\"git.corp.example/pay/ledger\"\n"},
	{"query", "q", "ask triage.explain owner.person=\"a \\\"b\\\" c\"\n"},
}

// Options change how Make builds a cut.
type Options struct {
	Allowed []string
	Mode    string
	// Plan, when set, changes the plan before it is digested into the
	// receipts: a cut made under that plan.
	Plan func(*receipts.Plan)
	// Token, when set, gives the token written at the occ-th owner slot of
	// the cut (counting from 0) in place of tok, the honest one: a cut whose
	// digests and receipts are all bound to those tokens.
	Token func(occ int, tok string) string
	// Wire is the plan's wire profile; nil is export@1. A provider profile
	// needs Schema, the output schema document, whose digest the plan
	// then binds; the cut carries the wire body rendered (WireBody).
	Wire   *receipts.Wire
	Schema []byte
}

// Cut is a cut's inputs to the verifier.
type Cut struct {
	Source, Export []byte
	ExportDigest   string
	Plan           []byte
	Vocabulary     []byte
	Receipts       []byte
	Key            *receipts.EvidenceKey
	// The wire body and the output schema of a provider profile, nil for
	// export@1.
	Wire, OutputSchema []byte
	// For a reversible cut: the lease its tokens were issued under (Lease),
	// and the token issued for each (category, value as it reads): the
	// honest tokens, whatever Options.Token wrote.
	Lease  string
	Issued map[[2]string]string
	// Of a vector's reversible cut: the namespace and namespace key its
	// tokens were issued under, from which a stand-in for the vault
	// recomputes them (Issued is nil then).
	Namespace    string
	NamespaceKey []byte
}

// Lease is the lease of the reversible cuts built here.
const Lease = "pcl:cuttestcuttestcuttestcut"

// unescape reads an owner value as written between its quotes.
func unescape(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] == '\\' && i+1 < len(raw) {
			i++
		}
		b.WriteByte(raw[i])
	}
	return b.String()
}

// Make builds an honest irreversible (or reversible, with fixed tokens)
// cut of parts.
func Make(t testing.TB, parts []Part, opt Options) Cut {
	t.Helper()
	if opt.Allowed == nil {
		opt.Allowed = []string{"module", "package", "function", "file", "team", "person", "host"}
	}
	if opt.Mode == "" {
		opt.Mode = receipts.ModeIrreversible
	}
	key := Key(t)
	type srcLabelW struct {
		Class      string   `json:"class"`
		Weight     int      `json:"weight"`
		Categories []string `json:"categories"`
		Subjects   []string `json:"subjects"`
		Parents    []string `json:"parents"`
		Handling   []string `json:"handling"`
	}
	type srcPartW struct {
		Kind    string    `json:"kind"`
		Key     string    `json:"key"`
		Text    string    `json:"text"`
		Label   srcLabelW `json:"label"`
		Lineage []string  `json:"lineage"`
	}
	parent := "sha256:" + strings.Repeat("ab", 32)
	lbl := srcLabelW{Class: "private", Weight: 2, Categories: []string{}, Subjects: []string{}, Parents: []string{parent}, Handling: []string{}}
	var sp []srcPartW
	for _, p := range parts {
		sp = append(sp, srcPartW{Kind: p.Kind, Key: p.Key, Text: p.Text, Label: lbl, Lineage: []string{parent}})
	}
	source := must(canon.Marshal(struct {
		Schema  string     `json:"schema"`
		Profile string     `json:"profile"`
		Parts   []srcPartW `json:"parts"`
	}{"Projection@1", receipts.ProfileName, sp}))

	// Censor by scanning for ` owner.<cat>="…"`.
	seen := map[string]map[string]string{}
	issued := map[[2]string]string{}
	occ := 0
	counts := map[string]int{}
	texts := make([]string, len(parts))
	for i, p := range parts {
		var b strings.Builder
		text := p.Text
		for {
			k := strings.Index(text, ` owner.`)
			if k < 0 {
				b.WriteString(text)
				break
			}
			eq := k + strings.Index(text[k:], `="`)
			cat := text[k+7 : eq]
			s, e := eq+2, eq+2
			for text[e] != '"' {
				if text[e] == '\\' {
					e++
				}
				e++
			}
			if seen[cat] == nil {
				seen[cat] = map[string]string{}
			}
			tok, ok := seen[cat][text[s:e]]
			if !ok {
				n := len(seen[cat]) + 1
				if opt.Mode == receipts.ModeReversible {
					m := strings.Map(func(r rune) rune { return 'a' + (r - '0') }, strconv.Itoa(n))
					tok = "pcv:abcdefghij:" + cat + ":" + strings.Repeat("q", 20-len(m)) + m
				} else {
					tok = "redacted:" + cat + ":" + strconv.Itoa(n)
				}
				seen[cat][text[s:e]] = tok
				issued[[2]string{cat, unescape(text[s:e])}] = tok
			}
			if opt.Token != nil {
				tok = opt.Token(occ, tok)
			}
			occ++
			counts[cat]++
			b.WriteString(text[:s])
			b.WriteString(tok)
			text = text[e:]
		}
		texts[i] = b.String()
	}
	type kt struct {
		Kind string `json:"kind"`
		Text string `json:"text"`
	}
	type kkt struct {
		Key  string `json:"key"`
		Kind string `json:"kind"`
		Text string `json:"text"`
	}
	type kkd struct {
		Key        string `json:"key"`
		Kind       string `json:"kind"`
		TextDigest string `json:"text_digest"`
	}
	var ex []kt
	var cand []kkt
	var man []kkd
	for i, p := range parts {
		ex = append(ex, kt{p.Kind, texts[i]})
		cand = append(cand, kkt{p.Key, p.Kind, texts[i]})
		man = append(man, kkd{p.Key, p.Kind, key.HMAC([]byte(p.Text))})
	}
	export := must(canon.Marshal(struct {
		Parts   []kt   `json:"parts"`
		Profile string `json:"profile"`
	}{ex, receipts.ProfileName}))
	canonSrc := must(canon.Canonicalize(source))
	srcDigest := key.HMAC(canonSrc)
	manDigest := mustS(key.HMACCanonical(struct {
		Parts  []kkd  `json:"parts"`
		Schema string `json:"schema"`
	}{man, "Manifest@1"}))
	candDigest := mustS(key.HMACCanonical(struct {
		Parts  []kkt  `json:"parts"`
		Schema string `json:"schema"`
	}{cand, "Candidate@1"}))
	labelDigest := mustS(key.HMACCanonical(map[string]any{
		"class": "private", "weight": 2, "categories": []string{}, "subjects": []string{},
		"parents": []string{parent}, "handling": []string{},
	}))
	vocDigest := receipts.SHA256(must(canon.Canonicalize([]byte(Vocab))))
	plan := receipts.Plan{
		Schema: receipts.SchemaPlan, Consumer: receipts.Consumer{Kind: "service", ID: "bot"},
		Purpose: "triage", Target: "https://models.example/v1", Mode: opt.Mode,
		ManifestDigest: manDigest, RestrictedRef: srcDigest,
		Invariants: receipts.RequiredInvariants, ThreatModel: "remote", Retention: receipts.RetentionNone, MaxUses: 1,
		Categories:       receipts.PlanCategories{Allowed: opt.Allowed, Prohibited: []string{"credential"}},
		VocabularyDigest: vocDigest, MaxParents: 64, ExpiresAt: "2030-01-02T00:00:00Z", PolicyRevision: receipts.PolicyRevision,
	}
	if opt.Mode == receipts.ModeReversible {
		plan.RemoteDeadlineS, plan.ReturnWindowS, plan.Station = 600, 3600, "station-1"
		plan.OutputSchemaDigest = receipts.SHA256([]byte(`{"type":"object"}`))
	}
	if opt.Wire != nil {
		w := *opt.Wire
		plan.Wire = &w
	}
	if opt.Schema != nil {
		plan.OutputSchemaDigest = receipts.SHA256(must(canon.Canonicalize(opt.Schema)))
	}
	if opt.Plan != nil {
		opt.Plan(&plan)
	}
	planJSON := must(canon.Marshal(plan))
	planDigest := receipts.SHA256(planJSON)
	ops := []receipts.Operation{}
	for _, c := range []string{"module", "package", "function", "file", "team", "person", "host"} {
		if counts[c] > 0 {
			ops = append(ops, receipts.Operation{Op: "replace-owner", Category: c, Count: counts[c]})
		}
	}
	r0 := receipts.TransformationReceipt{
		Schema: receipts.SchemaTransformation, Stage: "censor", Revision: "censor/1", Index: 0,
		InputDigest: srcDigest, OutputDigest: candDigest, PlanDigest: planDigest, VocabularyDigest: vocDigest,
		LabelDigest: labelDigest, Parents: []string{}, Operations: ops,
	}
	r0d := mustS(r0.Digest())
	ed := receipts.SHA256(export)
	r1 := receipts.TransformationReceipt{
		Schema: receipts.SchemaTransformation, Stage: "export", Revision: "export/1", Index: 1,
		InputDigest: candDigest, OutputDigest: ed, PlanDigest: planDigest, VocabularyDigest: vocDigest,
		LabelDigest: labelDigest, Parents: []string{r0d},
		Operations: []receipts.Operation{{Op: "drop-metadata", Category: "part", Count: len(parts)}},
		Terminal:   true, ExportDigest: ed,
	}
	cut := Cut{
		Source: source, Export: export, ExportDigest: ed, Plan: planJSON, Vocabulary: []byte(Vocab),
		Receipts: must(canon.Marshal([]receipts.TransformationReceipt{r0, r1})), Key: key,
	}
	if opt.Mode == receipts.ModeReversible {
		cut.Lease, cut.Issued = Lease, issued
	}
	if w := plan.Wire; w != nil && opt.Schema != nil && (w.Profile == receipts.WireOpenAIChat || w.Profile == receipts.WireAnthropicMessages) {
		cut.Wire = WireBody(t, plan.Wire, texts, opt.Schema)
		cut.OutputSchema = opt.Schema
	}
	return cut
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func mustS(s string, err error) string {
	if err != nil {
		panic(err)
	}
	return s
}

// BigText returns a closed-diagnostic@1 text of at least n bytes with
// distinct and repeated owner values, some holding boundary bytes.
func BigText(n int) string {
	var b strings.Builder
	b.Grow(n + 512)
	for i := 0; b.Len() < n; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module=\"git.corp.example/svc%d/api\" owner.team=\"team %d\"\n", i%5000, i%97)
		case 1:
			fmt.Fprintf(&b, "finding GO-2024-2687 golang.org/x/crypto@v0.14.0 fixed https://go.dev/issue/63417 owner.package=\"git.corp.example/svc%d/api/internal/db\" owner.person=\"dev%d@corp.example\"\n", i%3000, i%211)
		case 2:
			fmt.Fprintf(&b, "ask triage.explain owner.host=\"build-%d.corp.example\"\n", i%700)
		default:
			b.WriteString("finding GO-2023-2102 golang.org/x/net@v0.17.0 affected https://go.dev/issue/63417\n")
		}
	}
	return b.String()
}
