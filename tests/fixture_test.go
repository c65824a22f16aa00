package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
)

// The public inputs every end-to-end suite uses, from the repository
// (absolute: cut runs in its own home directory).
var (
	vocabPath  = mustAbs(filepath.Join("..", "examples", "vocabulary.json"))
	schemaPath = mustAbs(filepath.Join("..", "examples", "schema.json"))
)

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

// canaries are planted owner values: tokens replace them in everything that
// leaves, and no byte the system writes may hold them except the
// rehydrated result the user asked for. module and team are rehydrated
// (examples/schema.json marks them); person never is, so it must not appear
// even in the result.
type canaries struct {
	module, module2, team, person string
	credential                    string // a provider API key, for the wire profiles
}

func newCanaries(tag string) canaries {
	return canaries{
		module:  "git.canary.example/" + tag + "/ledger-" + randHex(8),
		module2: "git.canary.example/" + tag + "/gateway-" + randHex(8),
		team:    "canary-team-" + tag + "-" + randHex(8),
		person:  "Canary Person " + tag + " " + randHex(8),
		// The credential is not an owner value: it is scanned for as the
		// fifth needle, never allowed anywhere.
		credential: "sk-canary-" + tag + "-" + randHex(16),
	}
}

func (c canaries) all() [][]byte {
	return [][]byte{[]byte(c.module), []byte(c.module2), []byte(c.team), []byte(c.person), []byte(c.credential)}
}

// rehydratable are the values the schema lets rehydration restore.
func (c canaries) rehydratable() [][]byte {
	return [][]byte{[]byte(c.module), []byte(c.module2), []byte(c.team)}
}

// projection returns a Projection@1 whose owner values are the canaries,
// over public items of the example vocabulary.
func (c canaries) projection() []byte {
	type label struct {
		Class      string   `json:"class"`
		Weight     int      `json:"weight"`
		Categories []string `json:"categories"`
		Subjects   []string `json:"subjects"`
		Parents    []string `json:"parents"`
		Handling   []string `json:"handling"`
	}
	type part struct {
		Kind    string   `json:"kind"`
		Key     string   `json:"key"`
		Text    string   `json:"text"`
		Label   label    `json:"label"`
		Lineage []string `json:"lineage"`
	}
	parent := "sha256:4f1c7b0e9d2a6c3b8e5f1a0d7c4b9e2f6a3d8c1b5e0f7a2d9c6b3e8f1a4d7c0b"
	doc := struct {
		Schema  string `json:"schema"`
		Profile string `json:"profile"`
		Parts   []part `json:"parts"`
	}{Schema: "Projection@1", Profile: "closed-diagnostic@1", Parts: []part{
		{Kind: "block", Key: "scan/acceptance", Text: fmt.Sprintf(
			"finding GO-2022-1059 golang.org/x/text@v0.3.7 affected fixed=v0.3.8 https://go.dev/issue/56152 owner.module=%q owner.team=%q owner.person=%q\n"+
				"finding GO-2022-0969 golang.org/x/net@v0.0.0-20220524220425-1d687d428aca affected fixed=v0.0.0-20220906165146-f3363e06e74c https://go.dev/issue/54658 owner.module=%q\n",
			c.module, c.team, c.person, c.module2),
			Label:   label{Class: "private", Weight: 3, Categories: []string{"owner.module", "owner.team", "owner.person"}, Subjects: []string{"ns/acceptance"}, Parents: []string{parent}, Handling: []string{}},
			Lineage: []string{parent}},
		{Kind: "query", Key: "q", Text: fmt.Sprintf("ask triage.rank-by-severity owner.team=%q\n", c.team),
			Label:   label{Class: "internal", Weight: 1, Categories: []string{"owner.team"}, Subjects: []string{}, Parents: []string{parent}, Handling: []string{}},
			Lineage: []string{parent}},
	}}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err)
	}
	return b
}

// writeInputs writes the canary projection to an input directory outside
// the installation (inputs are the user's, not bytes the system writes)
// and returns its path.
func writeInputs(t testing.TB, c canaries) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "projection.json")
	if err := os.WriteFile(p, c.projection(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// remote is the loopback stand-in for the remote model (package
// internal/standin). It records every request body it received, in a file
// under the installation, so that the canary scan covers what left.
type remote struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen *os.File
}

func newRemote(t testing.TB, d *daemon) *remote {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(d.Base, "remote-received.log"), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	m := &remote{seen: f}
	h := standin.Handler()
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		m.mu.Lock()
		m.seen.Write(append(body, '\n'))
		m.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { m.srv.Close(); f.Close() })
	return m
}

// target is the plan's target URL for a stand-in mode.
func (m *remote) target(mode string) string { return m.srv.URL + "/v1/" + mode }

// answer is the stand-in's honest answer to an export, as the remote model
// would send it.
func answer(t testing.TB, export []byte) []byte {
	t.Helper()
	a, err := standin.Respond(export, standin.Honest)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// planFor writes a reversible plan for proj with the cut binary.
func planFor(t testing.TB, c *cutter, proj, target string, extra ...string) string {
	t.Helper()
	p := filepath.Join(c.d.Base, "work", fmt.Sprintf("plan-%d.json", c.n+1))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	args := []string{"plan", "init", "--vocab", vocabPath, "--consumer", "model:stand-in", "--purpose", "dependency-triage",
		"--target", target, "--mode", "reversible", "--schema", schemaPath, "--station", "local", "-o", p}
	args = append(args, extra...)
	c.must(0, append(args, proj)...)
	return p
}

// bundle is the part of CutBundle@1 the suites read.
type bundle struct {
	Export       json.RawMessage `json:"export"`
	ExportDigest string          `json:"export_digest"`
	Lease        *string         `json:"lease"`
}

// prepare runs `cut prepare --json -o FILE` and returns the bundle.
func prepare(t testing.TB, c *cutter, plan, proj string) bundle {
	t.Helper()
	out := filepath.Join(c.d.Base, "work", fmt.Sprintf("bundle-%d.json", c.n+1))
	r := c.must(0, "prepare", "--vocab", vocabPath, "--plan", plan, "--json", "-o", out, proj)
	var b bundle
	if err := json.Unmarshal(r.stdout, &b); err != nil {
		t.Fatalf("bundle: %v", err)
	}
	if b.Lease == nil || !strings.HasPrefix(*b.Lease, "pcl:") {
		t.Fatalf("a reversible prepare without a lease: %s", r.stdout)
	}
	return b
}

// pairsFor returns n sealed-request pairs of fresh canary values.
func pairsFor(tag string, n int) ([]seal.Pair, [][]byte) {
	var ps []seal.Pair
	var vs [][]byte
	for i := range n {
		v := []byte(fmt.Sprintf("CANARY-%s-%d-%s", tag, i, randHex(8)))
		ps = append(ps, seal.Pair{Category: service.Categories[i%len(service.Categories)], Value: v})
		vs = append(vs, v)
	}
	return ps, vs
}
