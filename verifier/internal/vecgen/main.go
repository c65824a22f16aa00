// Command vecgen writes the verifier's CCTV-style test vectors.
//
// It is a third, deliberately simple implementation of a privacy cut: it
// builds every document by string concatenation, following docs/DESIGN.md
// literally, and imports neither censor nor verifier (only receipts, to
// check that each hand-built canonical document is what RFC 8785 says, and
// for nothing else). Randomness is fixed, so the output is byte-stable.
//
// One txtar file per vector (written here without a txtar library). Its comment starts with "expect: pass" or
// "expect: fail <claim>[,<claim>…]"; its files are source.json,
// export.json, export_digest, plan.json, vocab.json, receipts.json, key.hex
// and now; for a provider wire profile wire.json (the wire body) and
// schema.json (the output schema document); for a reversible cut lease (the
// lease id) and issuer (the namespace and, in hex, the namespace key the
// tokens were issued under: what a test's stand-in for the vault needs to
// answer whether a token was issued for a value). Each file holds its data
// followed by one LF that is not part of the data.
//
// Usage:
//
//	go run ./internal/vecgen -out testdata/vectors
package main

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/privacycut/privacycut/canon"
)

func main() {
	out := flag.String("out", "testdata/vectors", "directory to write the vectors to")
	flag.Parse()
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, v := range vectors() {
		// txtar: the comment, then "-- name --" lines each followed by
		// the file's data and one LF.
		var a bytes.Buffer
		a.WriteString(v.expect + "\n# " + v.about + "\n")
		for _, name := range []string{"source.json", "export.json", "export_digest", "plan.json", "vocab.json", "receipts.json", "key.hex", "now", "wire.json", "schema.json", "lease", "issuer"} {
			data, ok := v.files[name]
			if !ok {
				continue // the wire files of a provider profile, the issuer of a reversible cut
			}
			if strings.HasPrefix(data, "-- ") || strings.Contains(data, "\n-- ") {
				log.Fatalf("vecgen: %s of %s holds a txtar marker", name, v.name)
			}
			a.WriteString("-- " + name + " --\n" + data + "\n")
		}
		if err := os.WriteFile(filepath.Join(*out, v.name+".txt"), a.Bytes(), 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// ---------------------------------------------------------------------------
// Fixed inputs.

// rng is the fixed randomness: key, namespace, namespace key.
var rng = rand.New(rand.NewChaCha8([32]byte([]byte("privacycut/verifier/vectors/v1.."))))

func randBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

var (
	evidenceKey = randBytes(32)
	nsKey       = randBytes(32)
	b32         = base32.StdEncoding.WithPadding(base32.NoPadding)
	namespace   = strings.ToLower(b32.EncodeToString(randBytes(7)))[:10]
	leaseID     = "pcl:" + strings.ToLower(b32.EncodeToString(randBytes(17)))[:26]
)

const (
	now       = "2030-01-01T00:00:00Z"
	expiresAt = "2030-01-02T00:00:00Z"
	parentA   = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	parentB   = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
)

// vocabJSON is the Vocabulary@1, pretty-printed (digests are over the
// canonical form).
const vocabJSON = `{
  "schema": "Vocabulary@1",
  "revision": "vectors/1",
  "diagnostics": ["GO-2023-2102", "GO-2024-2687"],
  "modules": {
    "golang.org/x/net": ["v0.15.0", "v0.17.0", "v0.23.0"],
    "golang.org/x/crypto": ["v0.14.0", "v0.17.0"]
  },
  "statuses": ["affected", "unaffected", "fixed"],
  "citations": ["https://go.dev/issue/63417", "https://pkg.go.dev/vuln/GO-2024-2687"],
  "questions": ["triage.rank-by-severity", "triage.explain"]
}`

type part struct {
	kind, key, text string
	label           string // JSON object as written in the source
}

var parts = []part{
	{
		kind: "block", key: "scan/findings",
		text: `finding GO-2023-2102 golang.org/x/net@v0.15.0 affected fixed=v0.17.0 https://go.dev/issue/63417 owner.module="git.corp.example/payments/ledger" owner.team="payments core"` + "\n" +
			`finding GO-2024-2687 golang.org/x/net@v0.23.0 affected https://pkg.go.dev/vuln/GO-2024-2687 owner.module="git.corp.example/payments/ledger" owner.package="git.corp.example/payments/ledger/internal/db"` + "\n" +
			`finding GO-2023-2102 golang.org/x/crypto@v0.14.0 unaffected https://go.dev/issue/63417 owner.module="git.corp.example/identity/sso" owner.person="Zoë \"zo\" Quill" owner.person="ana@corp.example"` + "\n" +
			`finding GO-2024-2687 golang.org/x/crypto@v0.17.0 fixed https://pkg.go.dev/vuln/GO-2024-2687 owner.host="build-7.corp.example"` + "\n",
		label: `{"class": "private", "weight": 3, "categories": ["owner.module", "owner.team"], "subjects": ["ns/payments"], "parents": ["` + parentB + `", "` + parentA + `"], "handling": []}`,
	},
	{
		kind: "query", key: "q",
		text: `ask triage.rank-by-severity owner.team="payments core" owner.module="git.corp.example/identity/sso"` + "\n" +
			`ask triage.explain` + "\n",
		label: `{"class": "internal", "weight": 1, "categories": [], "subjects": [], "parents": ["` + parentA + `"], "handling": ["no-train"]}`,
	},
}

// joinedLabel is the join of the labels above, written by hand in canonical
// form: highest class and weight, unions sorted.
const joinedLabel = `{"categories":["owner.module","owner.team"],"class":"private","handling":["no-train"],"parents":["` + parentA + `","` + parentB + `"],"subjects":["ns/payments"],"weight":3}`

var categoryOrder = []string{"module", "package", "function", "file", "team", "person", "host"}

// The output schema of the wire vectors, as given (its rehydration marking
// never leaves), and S′, written by hand in canonical form.
const schemaJSON = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["findings"],
  "properties": {
    "findings": {
      "type": "array",
      "maxItems": 20,
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["owner_module", "advice"],
        "properties": {
          "owner_module": {"type": "string", "maxLength": 128,
            "x-privacycut-rehydrate": {"category": "module", "purpose": "vulnerability triage", "max": 20}},
          "advice": {"type": "string", "maxLength": 2000}
        }
      }
    }
  }
}`

const schemaPrime = `{"additionalProperties":false,"properties":{"findings":{"items":{"additionalProperties":false,` +
	`"properties":{"advice":{"maxLength":2000,"type":"string"},"owner_module":{"maxLength":128,"type":"string"}},` +
	`"required":["owner_module","advice"],"type":"object"},"maxItems":20,"type":"array"}},"required":["findings"],"type":"object"}`

const instruction = "You triage dependency vulnerabilities.\nRank the findings by severity and answer with the schema."

// wireSpec is a plan's wire and the schema its body is rendered with.
type wireSpec struct {
	profile, model, instruction string
	maxTokens                   int
	schema                      string // the schema document as given
	sPrime                      string // S′, by hand, canonical
	strict                      bool
}

func openAI() wireSpec {
	return wireSpec{"openai-chat@1", "gpt-4o-2024-08-06", instruction, 2048, schemaJSON, schemaPrime, true}
}

func anthropic() wireSpec {
	return wireSpec{"anthropic-messages@1", "claude-sonnet-4-5", instruction, 2048, schemaJSON, schemaPrime, true}
}

// body writes the wire body of w for the export texts, members in
// canonical order by hand.
func (w *wireSpec) body(texts []string) string {
	var b strings.Builder
	switch w.profile {
	case "openai-chat@1":
		b.WriteString(`{"max_completion_tokens":` + strconv.Itoa(w.maxTokens) + `,"messages":[{"content":` + jstr(w.instruction) + `,"role":"system"}`)
		for _, t := range texts {
			b.WriteString(`,{"content":` + jstr(t) + `,"role":"user"}`)
		}
		b.WriteString(`],"model":` + jstr(w.model) + `,"response_format":{"json_schema":{"name":"answer","schema":` + w.sPrime +
			`,"strict":` + strconv.FormatBool(w.strict) + `},"type":"json_schema"}}`)
	case "anthropic-messages@1":
		b.WriteString(`{"max_tokens":` + strconv.Itoa(w.maxTokens) + `,"messages":[{"content":[`)
		for i, t := range texts {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(`{"text":` + jstr(t) + `,"type":"text"}`)
		}
		b.WriteString(`],"role":"user"}],"model":` + jstr(w.model) + `,"system":` + jstr(w.instruction) +
			`,"tool_choice":{"name":"answer","type":"tool"},"tools":[{"input_schema":` + w.sPrime + `,"name":"answer"}]}`)
	default:
		log.Fatalf("vecgen: no body for %s", w.profile)
	}
	return mustCanonical(b.String())
}

// ---------------------------------------------------------------------------
// Encoding by hand.

// jstr writes s as an RFC 8785 string.
func jstr(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '\r':
			b.WriteString(`\r`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if c < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func sha(b string) string {
	s := sha256.Sum256([]byte(b))
	return "sha256:" + hex.EncodeToString(s[:])
}

func mac(b string) string {
	m := hmac.New(sha256.New, evidenceKey)
	m.Write([]byte(b))
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// mustCanonical checks that a hand-built document is already canonical.
func mustCanonical(doc string) string {
	c, err := canon.Canonicalize([]byte(doc))
	if err != nil {
		log.Fatalf("vecgen: hand-built document does not parse: %v", err)
	}
	if string(c) != doc {
		log.Fatalf("vecgen: hand-built document is not canonical:\n%s\n%s", doc, c)
	}
	return doc
}

func canonical(doc string) string {
	c, err := canon.Canonicalize([]byte(doc))
	if err != nil {
		log.Fatalf("vecgen: document does not parse: %v", err)
	}
	return string(c)
}

// ---------------------------------------------------------------------------
// The cut, step by step.

func sourceJSON() string {
	var b strings.Builder
	b.WriteString("{\n  \"schema\": \"Projection@1\",\n  \"profile\": \"closed-diagnostic@1\",\n  \"parts\": [\n")
	for i, p := range parts {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "    {\"kind\": %s, \"key\": %s,\n     \"text\": %s,\n     \"label\": %s,\n     \"lineage\": [%s]}",
			jstr(p.kind), jstr(p.key), jstr(p.text), p.label, jstr(parentA))
	}
	b.WriteString("\n  ]\n}")
	return b.String()
}

// tokenizer returns the token for a value (as written) of a category.
type tokenizer func(cat, value string) string

func irreversible() tokenizer {
	seen := map[string]map[string]int{}
	return func(cat, value string) string {
		if seen[cat] == nil {
			seen[cat] = map[string]int{}
		}
		n, ok := seen[cat][value]
		if !ok {
			n = len(seen[cat]) + 1
			seen[cat][value] = n
		}
		return "redacted:" + cat + ":" + strconv.Itoa(n)
	}
}

func reversible() tokenizer {
	return func(cat, value string) string {
		plain := strings.NewReplacer(`\"`, `"`, `\\`, `\`).Replace(value)
		m := hmac.New(sha256.New, nsKey)
		m.Write([]byte("privacycut/token/v1\x00" + cat + "\x00" + plain))
		return "pcv:" + namespace + ":" + cat + ":" + strings.ToLower(b32.EncodeToString(m.Sum(nil)))[:20]
	}
}

// censorText replaces each owner value with its token, counting spans.
func censorText(text string, tok tokenizer, counts map[string]int) string {
	var b strings.Builder
	for {
		i := strings.Index(text, ` owner.`)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		eq := i + strings.Index(text[i:], `="`)
		cat := text[i+len(" owner.") : eq]
		start := eq + 2
		end := start
		for text[end] != '"' {
			if text[end] == '\\' {
				end++
			}
			end++
		}
		b.WriteString(text[:start])
		b.WriteString(tok(cat, text[start:end]))
		counts[cat]++
		text = text[end:]
	}
}

type bundle struct {
	mode        string
	texts       []string // censored texts
	counts      map[string]int
	consumerID  string
	target      string
	source      string
	planJSON    string
	exportJSON  string
	exportDig   string
	receipts    []string
	receiptsDoc string
	wire        *wireSpec // nil: export@1
	wireBody    string
}

func exportOf(texts []string) string {
	var b strings.Builder
	b.WriteString(`{"parts":[`)
	for i, t := range texts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"kind":` + jstr(parts[i].kind) + `,"text":` + jstr(t) + `}`)
	}
	b.WriteString(`],"profile":"closed-diagnostic@1"}`)
	return mustCanonical(b.String())
}

func candidateOf(texts []string) string {
	var b strings.Builder
	b.WriteString(`{"parts":[`)
	for i, t := range texts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"key":` + jstr(parts[i].key) + `,"kind":` + jstr(parts[i].kind) + `,"text":` + jstr(t) + `}`)
	}
	b.WriteString(`],"schema":"Candidate@1"}`)
	return mustCanonical(b.String())
}

func manifestOf() string {
	var b strings.Builder
	b.WriteString(`{"parts":[`)
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`{"key":` + jstr(p.key) + `,"kind":` + jstr(p.kind) + `,"text_digest":` + jstr(mac(p.text)) + `}`)
	}
	b.WriteString(`],"schema":"Manifest@1"}`)
	return mustCanonical(b.String())
}

func planOf(mode, consumerID, target string) string {
	return planWith(mode, consumerID, target, nil)
}

// planWith is the plan of a cut sent as w (nil: export@1).
func planWith(mode, consumerID, target string, w *wireSpec) string {
	rev := func(field string) string {
		if mode == "reversible" {
			return field
		}
		return ""
	}
	schemaDigest := `"output_schema_digest":"sha256:3333333333333333333333333333333333333333333333333333333333333333",`
	wire := ""
	if w != nil {
		schemaDigest = `"output_schema_digest":` + jstr(sha(canonical(w.schema))) + `,`
		wire = `,"wire":{"instruction":` + jstr(w.instruction) + `,"max_output_tokens":` + strconv.Itoa(w.maxTokens) +
			`,"model":` + jstr(w.model) + `,"profile":` + jstr(w.profile) + `}`
	} else {
		schemaDigest = rev(schemaDigest)
	}
	doc := `{"categories":{"allowed":["module","package","team","person","host"],"prohibited":["credential"]},` +
		`"consumer":{"id":` + jstr(consumerID) + `,"kind":"service"},` +
		`"expires_at":"` + expiresAt + `",` +
		`"invariants":["preserve-diagnostics","preserve-dependencies","preserve-status","preserve-citations","preserve-order","owner-equality"],` +
		`"manifest_digest":` + jstr(mac(manifestOf())) + `,` +
		`"max_parents":64,"max_uses":1,"mode":` + jstr(mode) + `,` +
		schemaDigest +
		`"policy_revision":"privacycut-policy/1","purpose":"vulnerability triage",` +
		rev(`"remote_deadline_s":120,`) +
		`"restricted_ref":` + jstr(mac(canonical(sourceJSON()))) + `,"retention":"no-retention",` +
		rev(`"return_window_s":600,`) +
		`"schema":"DisclosurePlan@1",` +
		rev(`"station":"station-1",`) +
		`"target":` + jstr(target) + `,"threat_model":"remote-model",` +
		`"vocabulary_digest":` + jstr(sha(canonical(vocabJSON))) + wire + `}`
	return mustCanonical(doc)
}

// receiptsOf builds the two receipts of DESIGN.md.
func receiptsOf(planDigest string, counts map[string]int, candidate, export string, nparts int) []string {
	var ops []string
	for _, c := range categoryOrder {
		if counts[c] > 0 {
			ops = append(ops, `{"category":"`+c+`","count":`+strconv.Itoa(counts[c])+`,"op":"replace-owner"}`)
		}
	}
	r0 := mustCanonical(`{"index":0,"input_digest":` + jstr(mac(canonical(sourceJSON()))) +
		`,"label_digest":` + jstr(mac(joinedLabel)) +
		`,"operations":[` + strings.Join(ops, ",") + `]` +
		`,"output_digest":` + jstr(mac(candidate)) +
		`,"parents":[],"plan_digest":` + jstr(planDigest) +
		`,"revision":"censor/1","schema":"TransformationReceipt@1","stage":"censor","terminal":false` +
		`,"vocabulary_digest":` + jstr(sha(canonical(vocabJSON))) + `}`)
	ed := sha(export)
	r1 := mustCanonical(`{"export_digest":` + jstr(ed) + `,"index":1,"input_digest":` + jstr(mac(candidate)) +
		`,"label_digest":` + jstr(mac(joinedLabel)) +
		`,"operations":[{"category":"part","count":` + strconv.Itoa(nparts) + `,"op":"drop-metadata"}]` +
		`,"output_digest":` + jstr(ed) +
		`,"parents":[` + jstr(sha(r0)) + `],"plan_digest":` + jstr(planDigest) +
		`,"revision":"export/1","schema":"TransformationReceipt@1","stage":"export","terminal":true` +
		`,"vocabulary_digest":` + jstr(sha(canonical(vocabJSON))) + `}`)
	return []string{r0, r1}
}

// good builds the honest bundle for mode.
func good(mode string) *bundle {
	b := &bundle{mode: mode, counts: map[string]int{}, consumerID: "triage-bot", target: "https://models.example/v1/triage"}
	tok := irreversible()
	if mode == "reversible" {
		tok = reversible()
	}
	for _, p := range parts {
		b.texts = append(b.texts, censorText(p.text, tok, b.counts))
	}
	b.source = sourceJSON()
	b.planJSON = planOf(mode, b.consumerID, b.target)
	b.rebind()
	return b
}

// rebind recomputes the export, the wire body and every digest that
// depends on the texts, as a forger holding the evidence key would.
func (b *bundle) rebind() {
	b.exportJSON = exportOf(b.texts)
	b.exportDig = sha(b.exportJSON)
	b.receipts = receiptsOf(sha(b.planJSON), b.counts, candidateOf(b.texts), b.exportJSON, len(b.texts))
	b.receiptsDoc = "[" + strings.Join(b.receipts, ",\n") + "]"
	if b.wire != nil {
		b.wireBody = b.wire.body(b.texts)
	}
}

// sendAs makes b a cut sent as w: its plan binds the wire and the schema,
// and everything is rebound.
func (b *bundle) sendAs(w wireSpec) *bundle {
	b.wire = &w
	b.planJSON = planWith(b.mode, b.consumerID, b.target, b.wire)
	b.rebind()
	return b
}

func (b *bundle) files() map[string]string {
	f := map[string]string{
		"source.json":   b.source,
		"export.json":   b.exportJSON,
		"export_digest": b.exportDig,
		"plan.json":     b.planJSON,
		"vocab.json":    vocabJSON,
		"receipts.json": b.receiptsDoc,
		"key.hex":       hex.EncodeToString(evidenceKey),
		"now":           now,
	}
	if b.wire != nil {
		f["wire.json"] = b.wireBody
		f["schema.json"] = b.wire.schema
	}
	if b.mode == "reversible" {
		f["lease"] = leaseID
		f["issuer"] = namespace + " " + hex.EncodeToString(nsKey)
	}
	return f
}

type vector struct {
	name, expect, about string
	files               map[string]string
}

func pass(name, about string, b *bundle) vector {
	return vector{name, "expect: pass", about, b.files()}
}

func fail(name, about string, b *bundle, claims ...string) vector {
	return vector{name, "expect: fail " + strings.Join(claims, ","), about, b.files()}
}

// records splits a text into its LF-terminated records.
func records(t string) []string {
	rs := strings.SplitAfter(t, "\n")
	return rs[:len(rs)-1]
}

func vectors() []vector {
	var vs []vector
	vs = append(vs, pass("good-irreversible", "an honest irreversible cut", good("irreversible")))
	vs = append(vs, pass("good-reversible", "an honest reversible cut", good("reversible")))

	b := good("irreversible")
	b.texts[0] = strings.Replace(b.texts[0], `"redacted:team:1"`, `"payments core"`, 1)
	b.rebind()
	vs = append(vs, fail("value-left", "an owner value left in the export, every digest rebound", b, "owners-replaced", "no-residual"))

	b = good("irreversible")
	b.texts[0] = strings.Replace(b.texts[0], `owner.module="redacted:module:2"`, `owner.module="redacted:module:X"`, 1)
	b.texts[0] = strings.Replace(b.texts[0], `owner.module="redacted:module:1"`, `owner.module="redacted:module:2"`, 1)
	b.texts[0] = strings.Replace(b.texts[0], `owner.module="redacted:module:X"`, `owner.module="redacted:module:1"`, 1)
	b.rebind()
	vs = append(vs, fail("token-swapped", "the tokens of two module values swapped at two slots, digests rebound", b, "token-consistency"))

	b = good("irreversible")
	b.texts[0] = strings.Replace(b.texts[0], "golang.org/x/net@v0.15.0", "golang.org/x/net@v0.23.0", 1)
	b.rebind()
	vs = append(vs, fail("vocabulary-item-altered", "a public item replaced by another vocabulary item, digests rebound", b, "public-preserved"))

	b = good("irreversible")
	b.source = sourceJSON()
	vocabAltered := strings.Replace(vocabJSON, `"v0.23.0"`, `"v0.23.1"`, 1)
	vAlt := b.files()
	vAlt["vocab.json"] = vocabAltered
	vs = append(vs, vector{"vocabulary-document-altered", "expect: fail coverage,plan-match,receipt-chain",
		"a version in the vocabulary document altered", vAlt})

	b = good("irreversible")
	rs := records(b.texts[0])
	b.texts[0] = rs[0] + rs[2] + rs[3]
	b.rebind()
	vs = append(vs, fail("record-dropped", "the second record of part 0 dropped, digests rebound", b, "public-preserved"))

	b = good("irreversible")
	rs = records(b.texts[0])
	b.texts[0] = rs[1] + rs[0] + rs[2] + rs[3]
	b.rebind()
	vs = append(vs, fail("record-reordered", "the first two records of part 0 swapped, digests rebound", b, "public-preserved"))

	b = good("irreversible")
	b.exportJSON = strings.Replace(b.exportJSON, `,"profile"`, `, "profile"`, 1)
	b.exportDig = sha(b.exportJSON)
	b.receipts = receiptsOf(sha(b.planJSON), b.counts, candidateOf(b.texts), b.exportJSON, len(b.texts))
	b.receiptsDoc = "[" + strings.Join(b.receipts, ",\n") + "]"
	vs = append(vs, fail("extra-byte", "one extra space in the export JSON, export digest and receipts rebound", b, "export-canonical"))

	b = good("irreversible")
	b.texts[1] = strings.Replace(b.texts[1], "ask triage.explain", "ask  triage.explain", 1)
	b.rebind()
	vs = append(vs, fail("extra-byte-in-text", "one extra space inside an export text, digests rebound", b, "public-preserved"))

	b = good("irreversible")
	b.receiptsDoc = "[" + b.receipts[1] + "]"
	vs = append(vs, fail("receipt-dropped", "the censor receipt dropped", b, "receipt-chain"))

	b = good("irreversible")
	b.receiptsDoc = "[" + b.receipts[1] + ",\n" + b.receipts[0] + "]"
	vs = append(vs, fail("receipts-reordered", "the two receipts in reverse order", b, "receipt-chain"))

	b = good("irreversible")
	r0 := strings.Replace(b.receipts[0], `{"category":"module","count":4,"op":"replace-owner"}`, `{"category":"module","count":3,"op":"replace-owner"}`, 1)
	if r0 == b.receipts[0] {
		log.Fatal("vecgen: receipt-redigested: operation not found")
	}
	r1 := strings.Replace(b.receipts[1], sha(b.receipts[0]), sha(r0), 1)
	b.receiptsDoc = "[" + r0 + ",\n" + r1 + "]"
	vs = append(vs, fail("receipt-redigested", "the censor receipt's counts altered and its parent link re-digested to match", b, "receipt-chain"))

	b = good("irreversible")
	b.planJSON = planOf("irreversible", "exfil-bot", b.target)
	vs = append(vs, fail("plan-consumer-substituted", "the plan's consumer replaced after the receipts were made", b, "plan-match"))

	b = good("irreversible")
	b.planJSON = planOf("irreversible", b.consumerID, "https://attacker.example/collect")
	vs = append(vs, fail("plan-target-substituted", "the plan's target replaced after the receipts were made", b, "plan-match"))

	b = good("irreversible")
	b.texts[1] = strings.Replace(b.texts[1], "redacted:team:1", "payments core", 1)
	b.exportJSON = exportOf(b.texts)
	b.exportDig = sha(b.exportJSON)
	vs = append(vs, fail("export-redigested", "the export body tampered and its digest recomputed, receipts untouched", b, "receipt-chain", "owners-replaced"))

	b = good("reversible")
	b.texts[0] = swapFirstTwo(b.texts[0], "owner.module=")
	b.rebind()
	vs = append(vs, fail("reversible-token-swapped", "two reversible module tokens swapped at two slots, digests rebound", b, "token-consistency"))

	b = good("reversible")
	ledger, sso := reversible()("module", "git.corp.example/payments/ledger"), reversible()("module", "git.corp.example/identity/sso")
	for i := range b.texts {
		b.texts[i] = strings.NewReplacer(ledger, sso, sso, ledger).Replace(b.texts[i])
	}
	b.rebind()
	vs = append(vs, fail("reversible-tokens-swapped-consistently", "the tokens of two module values swapped at every slot, so that each value keeps one token, digests rebound", b, "token-consistency"))

	b = good("reversible")
	team := reversible()("team", "payments core")
	altered := team[:len(team)-1] + map[bool]string{true: "b", false: "a"}[team[len(team)-1] == 'a']
	for i := range b.texts {
		b.texts[i] = strings.ReplaceAll(b.texts[i], team, altered)
	}
	b.rebind()
	vs = append(vs, fail("reversible-mac-altered", "the last character of a team token's mac altered at every slot, digests rebound", b, "token-consistency"))

	vs = append(vs, wireVectors()...)
	sort.Slice(vs, func(i, j int) bool { return vs[i].name < vs[j].name })
	return vs
}

// swapFirstTwo swaps the quoted values after the first two occurrences of
// key in t when they differ.
func swapFirstTwo(t, key string) string {
	var starts, ends []int
	off := 0
	for len(starts) < 3 {
		i := strings.Index(t[off:], key+`"`)
		if i < 0 {
			break
		}
		s := off + i + len(key) + 1
		e := s + strings.IndexByte(t[s:], '"')
		if len(starts) == 0 || t[starts[0]:ends[0]] != t[s:e] {
			starts, ends = append(starts, s), append(ends, e)
		}
		off = e
		if len(starts) == 2 {
			break
		}
	}
	if len(starts) < 2 {
		log.Fatal("vecgen: two distinct values not found")
	}
	a, c := t[starts[0]:ends[0]], t[starts[1]:ends[1]]
	var buf bytes.Buffer
	buf.WriteString(t[:starts[0]])
	buf.WriteString(c)
	buf.WriteString(t[ends[0]:starts[1]])
	buf.WriteString(a)
	buf.WriteString(t[ends[1]:])
	return buf.String()
}

// wireVectors are the cuts sent as a provider's request, and the
// corruptions of their wire bodies, every other digest rebound.
func wireVectors() []vector {
	var vs []vector
	vs = append(vs, pass("good-openai-chat", "an honest irreversible cut sent as openai-chat@1", good("irreversible").sendAs(openAI())))
	vs = append(vs, pass("good-anthropic-messages", "an honest reversible cut sent as anthropic-messages@1", good("reversible").sendAs(anthropic())))

	w := openAI()
	w.schema = strings.Replace(schemaJSON, `"type": "object",
        "additionalProperties": false,`, `"type": "object",`, 1)
	w.sPrime = strings.Replace(schemaPrime, `"items":{"additionalProperties":false,`, `"items":{`, 1)
	w.strict = false
	vs = append(vs, pass("good-openai-chat-nonstrict", "an honest cut sent as openai-chat@1 with a schema that is not strict", good("irreversible").sendAs(w)))

	b := good("irreversible").sendAs(openAI())
	b.wireBody = strings.Replace(b.wireBody, "Rank the findings", "rank the findings", 1)
	vs = append(vs, fail("wire-byte-changed", "one byte of the openai-chat@1 wire body changed", b, "wire-match"))

	b = good("irreversible").sendAs(openAI())
	other := *b.wire
	other.instruction = "Summarize the findings for the attacker."
	b.wireBody = other.body(b.texts)
	vs = append(vs, fail("wire-instruction-swapped", "the wire body rendered with another instruction than the plan's", b, "wire-match"))

	b = good("irreversible").sendAs(anthropic())
	b.wireBody = b.wire.body([]string{b.texts[1], b.texts[0]})
	vs = append(vs, fail("wire-part-reordered", "the anthropic-messages@1 body with its two text blocks in reverse order", b, "wire-match"))

	w = openAI()
	w.instruction = "Look first at the findings of payments core."
	b = good("irreversible").sendAs(w)
	vs = append(vs, fail("wire-owner-in-instruction", "an owner value in the plan's instruction, the body rendered from it and every digest rebound", b, "no-residual"))

	b = good("irreversible").sendAs(anthropic())
	altered := *b.wire
	altered.schema = strings.Replace(schemaJSON, `"maxItems": 20`, `"maxItems": 1000`, 1)
	altered.sPrime = strings.Replace(schemaPrime, `"maxItems":20`, `"maxItems":1000`, 1)
	b.wire = &altered
	b.wireBody = altered.body(b.texts)
	vs = append(vs, fail("wire-schema-altered", "the output schema altered after the plan bound its digest, the body rendered from it", b, "wire-match"))

	b = good("irreversible").sendAs(openAI())
	other = *b.wire
	other.model = "gpt-4o-mini"
	b.wireBody = other.body(b.texts)
	vs = append(vs, fail("wire-model-changed", "the wire body rendered with another model than the plan's", b, "wire-match"))
	return vs
}
