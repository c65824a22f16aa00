package rehydrate

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/privacycut/privacycut/canon"
)

// The lease under test and another lease.
const (
	testNS      = "abcdefghij"
	otherNS     = "zyxwvutsrq"
	testPurpose = "dependency-triage"
)

var testLease = Lease{Namespace: testNS, Purpose: testPurpose}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// mint makes a token the way docs/DESIGN.md says the vault does: the first
// 100 bits of HMAC-SHA256 under a namespace key over
// "privacycut/token/v1" 0x00 category 0x00 value, in lower-case base32.
func mint(ns, nsKey, category, value string) string {
	m := hmac.New(sha256.New, []byte(nsKey))
	m.Write([]byte("privacycut/token/v1\x00" + category + "\x00" + value))
	return "pcv:" + ns + ":" + category + ":" + strings.ToLower(b32.EncodeToString(m.Sum(nil)))[:20]
}

type entry struct {
	category  string // the category Lookup reports
	value     string
	disclosed bool
}

// fakeIssued is an Issued over a Go map that counts and records its calls.
// It is safe for concurrent use.
type fakeIssued struct {
	mu      sync.Mutex
	m       map[string]entry
	lookups []string // every token passed to Lookup
	appends int
}

func newFake() *fakeIssued { return &fakeIssued{m: map[string]entry{}} }

// issue records a disclosed token for value and returns it.
func (f *fakeIssued) issue(ns, category, value string) string {
	t := mint(ns, "key-"+ns, category, value)
	f.m[t] = entry{category: category, value: value, disclosed: true}
	return t
}

func (f *fakeIssued) Lookup(tok []byte) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups = append(f.lookups, string(tok))
	e, ok := f.m[string(tok)]
	if !ok || !e.disclosed {
		return "", false
	}
	return e.category, true
}

var errNoToken = errors.New("fake: no such token")

func (f *fakeIssued) AppendValue(dst, tok []byte) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.appends++
	e, ok := f.m[string(tok)]
	if !ok || !e.disclosed {
		return dst, errNoToken
	}
	return append(dst, e.value...), nil
}

func (f *fakeIssued) counts() (lookups, appends int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.lookups), f.appends
}

// testSchemaDoc marks three paths for testPurpose and one for "audit".
const testSchemaDoc = `{
  "type": "object",
  "additionalProperties": false,
  "required": ["findings"],
  "properties": {
    "findings": {
      "type": "array", "maxItems": 50,
      "items": {
        "type": "object",
        "required": ["owner_module"],
        "properties": {
          "owner_module": {"type": "string", "maxLength": 64,
            "x-privacycut-rehydrate": {"category": "module", "purpose": "dependency-triage", "max": 3}},
          "owner_team": {"type": "string",
            "x-privacycut-rehydrate": {"category": "team", "purpose": "dependency-triage", "max": 5}},
          "advice": {"type": "string", "maxLength": 4000, "description": "free text"}
        }
      }
    },
    "owners": {"type": "array", "maxItems": 3, "items": {"type": "string",
      "x-privacycut-rehydrate": {"category": "person", "purpose": "dependency-triage", "max": 4}}},
    "audit_owner": {"type": "string",
      "x-privacycut-rehydrate": {"category": "module", "purpose": "audit", "max": 1}},
    "summary": {"type": "string", "title": "Summary"}
  }
}`

func mustSchema(t testing.TB, doc string) *Schema {
	t.Helper()
	s, err := ParseSchema([]byte(doc))
	if err != nil {
		t.Fatalf("ParseSchema: %v", err)
	}
	return s
}

// jq returns s as a canonical JSON string literal.
func jq(s string) string {
	b, err := canon.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// assertNoSecrets fails if text holds any of the secrets.
func assertNoSecrets(t *testing.T, what, text string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s holds a secret (%d bytes): %q", what, len(s), text)
		}
	}
}

// offsetOf converts a 1-based line and byte column to an offset.
func offsetOf(doc string, line, col int) int {
	off := 0
	for l := 1; l < line; l++ {
		i := strings.IndexByte(doc[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return off + col - 1
}
