package route

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
)

// canary is planted in route values; no error may quote it.
const canary = "CANARY-route-7f3a"

// testNow is the fixed time of the tests and vectors.
var testNow = time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

// fixedRand is deterministic randomness: SHA-256 of seed and a counter.
type fixedRand struct {
	seed string
	n    uint64
	buf  []byte
}

func newFixedRand(seed string) *fixedRand { return &fixedRand{seed: seed} }

func (r *fixedRand) Read(p []byte) (int, error) {
	for i := range p {
		if len(r.buf) == 0 {
			var c [8]byte
			binary.BigEndian.PutUint64(c[:], r.n)
			r.n++
			sum := sha256.Sum256(append([]byte(r.seed), c[:]...))
			r.buf = sum[:]
		}
		p[i] = r.buf[0]
		r.buf = r.buf[1:]
	}
	return len(p), nil
}

var loadVocabulary = sync.OnceValues(func() (*grammar.Vocabulary, error) {
	return grammar.LoadVocabulary(examples.Vocabulary)
})

// exampleVocabulary is the example vocabulary, loaded once.
func exampleVocabulary(t testing.TB) *grammar.Vocabulary {
	t.Helper()
	v, err := loadVocabulary()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func exampleSchemaDigest(t testing.TB) string {
	t.Helper()
	s, err := rehydrate.ParseSchema(examples.Schema)
	if err != nil {
		t.Fatal(err)
	}
	return s.Digest()
}

func exampleDoc(t testing.TB) *grammar.Document {
	t.Helper()
	d, refs := grammar.LoadProjection(examples.Projection, grammar.LoadOptions{})
	if refs != nil {
		t.Fatal(refs)
	}
	return d
}

func testEvidenceKey(t testing.TB) *receipts.EvidenceKey {
	t.Helper()
	k, err := receipts.NewEvidenceKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Wipe)
	return k
}

// irreversibleRoute is an irreversible export@1 route over the example
// vocabulary.
func irreversibleRoute(t testing.TB) *receipts.Route {
	t.Helper()
	return &receipts.Route{
		Schema:           receipts.SchemaRoute,
		Name:             "payments-triage",
		Consumer:         receipts.Consumer{Kind: "model", ID: "triage-bot"},
		Purpose:          "dependency-triage",
		Target:           "https://model.example/v1/answer",
		Mode:             receipts.ModeIrreversible,
		Categories:       receipts.PlanCategories{Allowed: []string{"module", "package", "function", "file", "team", "person", "host"}, Prohibited: []string{"credential"}},
		VocabularyDigest: exampleVocabulary(t).Digest(),
		MaxUses:          3,
		MaxLifetimeS:     3600,
		ThreatModel:      "remote-model-honest-but-curious",
		Retention:        receipts.RetentionNone,
		MaxParents:       64,
	}
}

// reversibleRoute is a reversible openai-chat@1 route over the example
// vocabulary and schema.
func reversibleRoute(t testing.TB) *receipts.Route {
	t.Helper()
	r := irreversibleRoute(t)
	r.Name = "payments-triage-reversible"
	r.Mode = receipts.ModeReversible
	r.Target = "https://api.openai.example/v1/chat/completions"
	r.Wire = &receipts.Wire{Profile: receipts.WireOpenAIChat, Model: "gpt-test-1", Instruction: "Rank the findings.\nAnswer in the schema.", MaxOutputTokens: 2048}
	r.OutputSchemaDigest = exampleSchemaDigest(t)
	r.Retention = receipts.RetentionSession
	r.RemoteDeadlineS = 600
	r.ReturnWindowS = 3600
	r.Station = "local"
	r.Categories = receipts.PlanCategories{Allowed: []string{"module", "package", "team"}, Prohibited: []string{"function", "file", "person", "host", "credential"}}
	return r
}

func mustDigest(t testing.TB, r *receipts.Route) string {
	t.Helper()
	d, err := Digest(r)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func cloneRoute(r *receipts.Route) *receipts.Route {
	c := *r
	c.Categories.Allowed = append([]string(nil), r.Categories.Allowed...)
	c.Categories.Prohibited = append([]string(nil), r.Categories.Prohibited...)
	if r.Wire != nil {
		w := *r.Wire
		c.Wire = &w
	}
	return &c
}

// wantRefusal checks that err is a PLAN_MISMATCH *Error of field and that
// its message holds no canary.
func wantRefusal(t testing.TB, err error, field string) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *route.Error of field %s", err, err, field)
	}
	if e.Code != receipts.PlanMismatch {
		t.Errorf("code %s, want PLAN_MISMATCH", e.Code)
	}
	if e.Field != field {
		t.Errorf("field %q, want %q (%v)", e.Field, field, err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Errorf("error quotes the canary: %v", err)
	}
	return e
}
