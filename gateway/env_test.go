package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/gateway"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/internal/syncbuf"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/route"
	"github.com/privacycut/privacycut/vault/embedded"
)

// TestMain makes the test binary its own verifier plugin: the gateway
// starts /proc/self/exe with pipeline.PluginArg.
func TestMain(m *testing.M) {
	pipeline.ServePluginIfRequested()
	os.Exit(m.Run())
}

// Owner values of the example projection: none may appear anywhere but in
// a rehydrated answer.
var ownerValues = []string{"git.corp.example/payments/ledger", "git.corp.example/payments/gateway", "payments-core",
	"edge-01.pay.corp.example", "Dana Okafor", "i18n.(*Negotiator).Pick", "internal/i18n/negotiate.go"}

// exampleTexts are the example projection's part texts, in order.
func exampleTexts(t testing.TB) []string {
	t.Helper()
	var d struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	}
	if err := json.Unmarshal(examples.Projection, &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Parts {
		out = append(out, p.Text)
	}
	return out
}

// env is a running gateway with its routes, a stand-in provider, an
// embedded vault, and clients for both listeners.
type env struct {
	t        testing.TB
	dir      string
	g        *gateway.Gateway
	cfg      *gateway.Config
	log      *syncbuf.Buffer
	vault    *embedded.Vault
	sock     string // the gateway's unix socket
	tcp      string // host:port of its TCP listener
	token    string
	cred     string          // the provider credential
	provider *standin.Server // the provider stand-in, which records requests
	upstream string          // the provider's base URL (http://127.0.0.1:PORT)
	unix     *http.Client    // over the unix socket
	http     *http.Client    // over TCP (add the token yourself)
	served   chan error
	stopped  bool
}

// envOptions shape an env.
type envOptions struct {
	// routes edits the route documents before they are approved (by name).
	routes func(name string, r map[string]any)
	// config edits the configuration document before it is parsed.
	config func(c map[string]any)
	// upstream is the provider's handler (default: the stand-in).
	upstream http.Handler
	plugins  int
	// schema replaces the example's output schema (the routes bind its
	// digest).
	schema []byte
	// verifier replaces the warm plugins (pipeline.InProcess()).
	verifier pipeline.Verifier
}

func frontDoor() map[string]any {
	return map[string]any{"kind": "block",
		"label": map[string]any{"class": "private", "weight": 3, "categories": []string{"owner.module"},
			"subjects": []string{"ns/payments"}, "parents": []string{"sha256:" + strings.Repeat("4f", 32)}, "handling": []string{}},
		"lineage": []string{"sha256:" + strings.Repeat("4f", 32)}}
}

func newEnv(t testing.TB, o envOptions) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a gateway with plugin processes (-short)")
	}
	dir, err := os.MkdirTemp("", "gw-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	e := &env{t: t, dir: dir, log: &syncbuf.Buffer{}, served: make(chan error, 1)}
	write := func(name string, data []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("vocabulary.json", examples.Vocabulary, 0o644)
	schemaDoc := examples.Schema
	if o.schema != nil {
		schemaDoc = o.schema
	}
	write("schema.json", schemaDoc, 0o644)
	v, err := pipeline.LoadVocabulary(examples.Vocabulary)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rehydrate.ParseSchema(schemaDoc)
	if err != nil {
		t.Fatal(err)
	}
	key, err := route.GenerateKey(rand.Reader, "reviewer.test")
	if err != nil {
		t.Fatal(err)
	}
	defer key.Wipe()
	write("reviewers.vkeys", []byte(key.VerifierKey()+"\n"), 0o644)
	e.cred = "sk-gw-test-" + strings.Repeat("c9", 12)
	write("credential", []byte(e.cred+"\n"), 0o600)
	e.provider = standin.New(standin.Options{Credential: e.cred, RetryAfter: "0"})
	var up http.Handler = e.provider
	if o.upstream != nil {
		up = o.upstream
	}
	provider := httptest.NewServer(up)
	t.Cleanup(provider.Close)
	e.upstream = provider.URL
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(func() { hang.CloseClientConnections(); hang.Close() })
	fail := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
	}))
	t.Cleanup(fail.Close)
	categories := map[string]any{"allowed": []string{"module", "package", "function", "file", "team", "person", "host"},
		"prohibited": []string{"credential"}}
	base := func(name, target, mode string) map[string]any {
		r := map[string]any{"schema": "DisclosureRoute@1", "name": name, "consumer": map[string]any{"kind": "model", "id": "triage-llm"},
			"purpose": "dependency-triage", "target": target, "mode": mode, "categories": categories,
			"vocabulary_digest": v.Digest(), "max_uses": 2, "max_lifetime_s": 3600,
			"threat_model": "remote-model-honest-but-curious", "retention": "no-retention", "max_parents": 64}
		if mode == "reversible" {
			r["output_schema_digest"] = s.Digest()
			r["remote_deadline_s"], r["return_window_s"], r["station"] = 60, 3600, "local"
		}
		return r
	}
	docs := []map[string]any{
		base("triage", provider.URL+"/v1/honest", "reversible"),
		base("triage-irr", provider.URL+"/v1/honest", "irreversible"),
		base("hang", hang.URL+"/v1/honest", "reversible"),
		base("fail", fail.URL+"/v1/honest", "reversible"),
		base("invent", provider.URL+"/v1/invent", "reversible"),
	}
	docs[2]["remote_deadline_s"] = 2
	wired := func(name, path string) map[string]any {
		r := base(name, provider.URL+path, "reversible")
		r["wire"] = map[string]any{"profile": "openai-chat@1", "model": "gpt-test", "instruction": string(examples.Instruction),
			"max_output_tokens": 4096}
		return r
	}
	docs = append(docs, wired("chat", standin.OpenAIPath), wired("chat-429", "/"+standin.RateLimited+"-1"+standin.OpenAIPath),
		wired("chat-ceiling", "/"+standin.RateLimited+"-99"+standin.OpenAIPath))
	// An irreversible provider route binds the schema too: it renders the
	// request.
	irr := base("chat-irr", provider.URL+standin.OpenAIPath, "irreversible")
	irr["wire"] = map[string]any{"profile": "openai-chat@1", "model": "gpt-test", "instruction": string(examples.Instruction),
		"max_output_tokens": 4096}
	irr["output_schema_digest"] = s.Digest()
	docs = append(docs, irr)
	var routes []any
	for _, r := range docs {
		name := r["name"].(string)
		if o.routes != nil {
			o.routes(name, r)
		}
		doc, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		note, err := route.Approve(key, doc)
		if err != nil {
			t.Fatalf("approve %s: %v", name, err)
		}
		write(name+".note", note, 0o644)
		rc := map[string]any{"note": name + ".note", "vocabulary": "vocabulary.json", "front_door": frontDoor()}
		if r["output_schema_digest"] != nil {
			rc["schema"] = "schema.json"
		}
		if r["wire"] != nil {
			rc["credential_file"] = "credential"
		}
		routes = append(routes, rc)
	}
	e.token = "tok-" + strings.Repeat("q7", 16)
	write("token", []byte(e.token+"\n"), 0o600)
	e.vault, err = embedded.Open(filepath.Join(dir, "vault"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.vault.Close() })
	plugins := o.plugins
	if plugins == 0 {
		plugins = 2
	}
	cfg := map[string]any{
		"schema": "Gateway@1",
		"listen": map[string]any{"unix": "run/gateway.sock", "tcp": "127.0.0.1:0", "token_file": "token"},
		"vault":  e.vault.Socket(), "trust": []string{"reviewers.vkeys"},
		"evidence_key": "evidence.key", "journal": "journal.jsonl", "routes": routes,
		"verifier": map[string]any{"plugins": plugins},
	}
	if o.config != nil {
		o.config(cfg)
	}
	doc, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.cfg, err = gateway.ParseConfig(doc, dir)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(e.log, nil))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e.g, err = gateway.New(ctx, e.cfg, gateway.Options{Logger: logger, PluginLog: e.log, Verifier: o.verifier})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := e.g.Listen()
	if err != nil {
		e.g.Shutdown(context.Background())
		t.Fatal(err)
	}
	e.sock = e.cfg.Listen.Unix
	for _, l := range ls {
		if l.Addr().Network() == "tcp" {
			e.tcp = l.Addr().String()
		}
	}
	go func() { e.served <- e.g.Serve(ls) }()
	t.Cleanup(e.stop)
	e.unix = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", e.sock)
	}}}
	e.http = &http.Client{Transport: &http.Transport{}}
	return e
}

// stop shuts the gateway down and checks that nothing it logged holds an
// owner value.
func (e *env) stop() {
	if e.stopped {
		return
	}
	e.stopped = true
	e.g.Shutdown(context.Background())
	select {
	case err := <-e.served:
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.t.Errorf("Serve: %v", err)
		}
	case <-time.After(time.Minute):
		e.t.Error("Serve did not return after Shutdown")
	}
	e.noOwnerValues("the gateway's log", e.log.String())
	if j, err := os.ReadFile(filepath.Join(e.dir, "journal.jsonl")); err == nil {
		e.noOwnerValues("the journal", string(j))
	}
}

func (e *env) noOwnerValues(what, s string) {
	e.t.Helper()
	if e.cred != "" && strings.Contains(s, e.cred) {
		e.t.Errorf("%s holds the provider credential", what)
	}
	for _, v := range ownerValues {
		if strings.Contains(s, v) {
			e.t.Errorf("%s holds the owner value %q", what, v)
		}
	}
}

// post sends a JSON body over the unix socket (or TCP with the token).
func (e *env) post(path string, body []byte, tcp bool) (int, []byte) {
	e.t.Helper()
	status, b, err := e.send(path, body, tcp)
	if err != nil {
		e.t.Fatal(err)
	}
	return status, b
}

// send is post returning its error, for callers on other goroutines.
func (e *env) send(path string, body []byte, tcp bool) (int, []byte, error) {
	url, c := "http://gateway"+path, e.unix
	if tcp {
		url, c = "http://"+e.tcp+path, e.http
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if tcp {
		req.Header.Set("Authorization", "Bearer "+e.token)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// cut sends body to route's native API over the unix socket: any answer
// but 200 is an error.
func (e *env) cut(route string, body []byte) error {
	status, got, err := e.send("/v1/routes/"+route+"/cut", body, false)
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("%s: HTTP %d: %.400s", route, status, got)
	}
	return err
}

func (e *env) get(path string) (int, []byte) {
	e.t.Helper()
	resp, err := e.unix.Get("http://gateway" + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// chatBody is a front-door request of the example's texts for model.
func chatBody(model string, texts []string, extra map[string]any) []byte {
	var msgs []map[string]any
	for _, t := range texts {
		msgs = append(msgs, map[string]any{"role": "user", "content": t})
	}
	req := map[string]any{"model": model, "messages": msgs}
	for k, v := range extra {
		req[k] = v
	}
	b, _ := json.Marshal(req)
	return b
}

func mustJSON(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
}

func fmtJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
