package gateway_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/gateway"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/route"
)

// chatError is the OpenAI-style error object of the front door.
type chatError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
	Privacycut *receipts.RefusalDocument `json:"privacycut"`
}

// TestFrontDoorRefusals: each front-door request the route does not allow
// is refused with its code and the request member at fault, its refusal
// journaled, nothing of the request echoed.
func TestFrontDoorRefusals(t *testing.T) {
	e := newEnv(t, envOptions{})
	text := exampleTexts(t)[0]
	const canary = "CANARY-e04d"
	user := map[string]any{"role": "user", "content": text}
	for _, tc := range []struct {
		name   string
		body   map[string]any
		status int
		code   string
		param  string
	}{
		{"system message not the route's instruction",
			map[string]any{"model": "triage", "messages": []any{map[string]any{"role": "system", "content": canary}, user}},
			422, "PLAN_MISMATCH", "messages[0].content"},
		{"assistant message",
			map[string]any{"model": "triage", "messages": []any{user, map[string]any{"role": "assistant", "content": canary}}},
			422, "MALFORMED_RECORD", "messages[1].role"},
		{"tools",
			map[string]any{"model": "triage", "messages": []any{user}, "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": canary}}}},
			422, "MALFORMED_RECORD", ""},
		{"unknown member of a message",
			map[string]any{"model": "triage", "messages": []any{map[string]any{"role": "user", "content": text, "name": canary}}},
			422, "MALFORMED_RECORD", "messages[0]"},
		{"image part",
			map[string]any{"model": "triage", "messages": []any{map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "text", "text": text}, map[string]any{"type": "image_url", "image_url": map[string]any{"url": canary}}}}}},
			422, "MALFORMED_RECORD", "messages[0].content[1]"},
		{"no user message",
			map[string]any{"model": "triage", "messages": []any{}},
			422, "MALFORMED_RECORD", "messages"},
		{"uncovered text in the second message",
			map[string]any{"model": "triage", "messages": []any{user, map[string]any{"role": "user", "content": canary + "\n"}}},
			422, "UNCOVERED_TEXT", "messages[1].content"},
		{"unknown model",
			map[string]any{"model": canary, "messages": []any{user}},
			404, "model_not_found", "model"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := json.Marshal(tc.body)
			status, body := e.post("/v1/chat/completions", b, false)
			if status != tc.status {
				t.Fatalf("HTTP %d, want %d: %s", status, tc.status, body)
			}
			var ce chatError
			mustJSON(t, body, &ce)
			if ce.Error.Code == nil || *ce.Error.Code != tc.code {
				t.Errorf("code %v, want %s: %s", ce.Error.Code, tc.code, body)
			}
			if tc.param != "" && (ce.Error.Param == nil || !strings.HasPrefix(*ce.Error.Param, tc.param)) {
				t.Errorf("param %v, want %s", ce.Error.Param, tc.param)
			}
			if tc.status == 422 && (ce.Privacycut == nil || !strings.HasPrefix(ce.Privacycut.EventID, "evt:")) {
				t.Errorf("no journaled refusal document: %s", body)
			}
			if strings.Contains(string(body), "CANARY") {
				t.Errorf("the answer echoes the request: %s", body)
			}
		})
	}
	_, m := e.get("/metrics")
	if strings.Contains(string(m), "CANARY") {
		t.Errorf("metrics hold a model name no route has:\n%s", m)
	}
}

// TestStartRefusesRoutes: a route note that is unsigned, signed by a key
// not trusted, or edited refuses start-up, naming the note; so does a
// vocabulary or schema other than the route's.
func TestStartRefusesRoutes(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.stop()
	note := filepath.Join(e.dir, "triage.note")
	orig, err := os.ReadFile(note)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := route.GenerateKey(rand.Reader, "stranger.test")
	defer other.Wipe()
	text := orig[:strings.Index(string(orig), "\n")]
	strangerNote, err := route.Approve(other, text)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		note   []byte
		edit   func(c *gateway.Config)
		field  string
		reason string
	}{
		{"unsigned", append(text, '\n'), nil, "routes[0].note", "no signature"},
		{"untrusted signer", strangerNote, nil, "routes[0].note", "signed by no trusted key"},
		{"edited", []byte(strings.Replace(string(orig), `"max_uses":2`, `"max_uses":9`, 1)), nil, "routes[0].note", "does not verify"},
		{"another vocabulary", orig, func(c *gateway.Config) { c.Routes[0].Vocabulary = filepath.Join(e.dir, "small.json") }, "routes[0].vocabulary", "not the vocabulary"},
		{"another schema", orig, func(c *gateway.Config) { c.Routes[0].Schema = filepath.Join(e.dir, "other-schema.json") }, "routes[0].schema", "not the schema"},
		{"no schema", orig, func(c *gateway.Config) { c.Routes[0].Schema = "" }, "routes[0].schema", "binds an output schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(e.dir, "small.json"), []byte(`{"schema":"Vocabulary@1","revision":"x","diagnostics":["GO-2023-2102"],"modules":{"golang.org/x/net":["v0.15.0"]},"statuses":["affected"],"citations":["https://go.dev/issue/63417"],"questions":["triage.rank-by-severity"]}`), 0o644)
			os.WriteFile(filepath.Join(e.dir, "other-schema.json"), []byte(`{"type":"object","properties":{},"additionalProperties":false}`), 0o644)
			if err := os.WriteFile(note, tc.note, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := *e.cfg
			cfg.Routes = append([]gateway.RouteConfig(nil), e.cfg.Routes...)
			if tc.edit != nil {
				tc.edit(&cfg)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			g, err := gateway.New(ctx, &cfg, gateway.Options{Logger: nil, PluginLog: e.log})
			if err == nil {
				g.Shutdown(ctx)
				t.Fatal("the gateway started")
			}
			var ce *gateway.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("err = %v, want field %s and %q", err, tc.field, tc.reason)
			}
			if strings.HasSuffix(tc.field, ".note") && !strings.Contains(err.Error(), note) {
				t.Errorf("the error does not name the note: %v", err)
			}
		})
	}
	os.WriteFile(note, orig, 0o644)
}

// TestConfigRefusals: a configuration the gateway cannot run safely is
// refused as it is read, naming the member.
func TestConfigRefusals(t *testing.T) {
	good := func() map[string]any {
		return map[string]any{"schema": "Gateway@1", "listen": map[string]any{"unix": "gw.sock"},
			"trust": []string{"t"}, "evidence_key": "k", "journal": "j",
			"routes": []any{map[string]any{"note": "n", "vocabulary": "v", "front_door": frontDoor()}}}
	}
	for _, tc := range []struct {
		name  string
		edit  func(c map[string]any)
		field string
	}{
		{"wrong schema", func(c map[string]any) { c["schema"] = "Gateway@2" }, "schema"},
		{"unknown member", func(c map[string]any) { c["proxy"] = "http://x" }, ""},
		{"target in the config", func(c map[string]any) { c["routes"].([]any)[0].(map[string]any)["target"] = "http://x" }, ""},
		{"no unix socket", func(c map[string]any) { delete(c["listen"].(map[string]any), "unix") }, "listen.unix"},
		{"tcp not loopback", func(c map[string]any) {
			c["listen"].(map[string]any)["tcp"], c["listen"].(map[string]any)["token_file"] = "0.0.0.0:8080", "tok"
		}, "listen.tcp"},
		{"tcp host name", func(c map[string]any) {
			c["listen"].(map[string]any)["tcp"], c["listen"].(map[string]any)["token_file"] = "localhost:8080", "tok"
		}, "listen.tcp"},
		{"tcp without token", func(c map[string]any) { c["listen"].(map[string]any)["tcp"] = "127.0.0.1:8080" }, "listen.token_file"},
		{"token without tcp", func(c map[string]any) { c["listen"].(map[string]any)["token_file"] = "tok" }, "listen.token_file"},
		{"negative uid", func(c map[string]any) { c["listen"].(map[string]any)["allow_uids"] = []int{-1} }, "listen.allow_uids[0]"},
		{"negative gid", func(c map[string]any) { c["listen"].(map[string]any)["group"] = -1 }, "listen.group"},
		{"gid too large", func(c map[string]any) { c["listen"].(map[string]any)["group"] = int64(1) << 32 }, "listen.group"},
		{"no trust", func(c map[string]any) { c["trust"] = []string{} }, "trust"},
		{"no evidence key", func(c map[string]any) { delete(c, "evidence_key") }, "evidence_key"},
		{"no journal", func(c map[string]any) { delete(c, "journal") }, "journal"},
		{"no routes", func(c map[string]any) { c["routes"] = []any{} }, "routes"},
		{"front door kind", func(c map[string]any) {
			c["routes"].([]any)[0].(map[string]any)["front_door"].(map[string]any)["kind"] = "prose"
		}, "routes[0].front_door.kind"},
		{"front door unknown lineage", func(c map[string]any) {
			c["routes"].([]any)[0].(map[string]any)["front_door"].(map[string]any)["lineage"] = []string{"unknown"}
		}, "routes[0].front_door.lineage[0]"},
		{"front door class", func(c map[string]any) {
			c["routes"].([]any)[0].(map[string]any)["front_door"].(map[string]any)["label"].(map[string]any)["class"] = "secret"
		}, "routes[0].front_door.label.class"},
		{"too many plugins", func(c map[string]any) { c["verifier"] = map[string]any{"plugins": 99} }, "verifier.plugins"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.edit(c)
			b, _ := json.Marshal(c)
			_, err := gateway.ParseConfig(b, "/x")
			var ce *gateway.ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field {
				t.Fatalf("err = %v, want field %q", err, tc.field)
			}
		})
	}
	b, _ := json.Marshal(good())
	c, err := gateway.ParseConfig(b, "/etc/pc")
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen.Unix != "/etc/pc/gw.sock" || c.Routes[0].Note != "/etc/pc/n" {
		t.Errorf("relative paths not resolved: %+v", c)
	}
}

// TestPeerRefused: a unix peer whose uid is not allowed is disconnected
// before a byte is read, and counted.
func TestPeerRefused(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c map[string]any) {
		c["listen"].(map[string]any)["allow_uids"] = []int{os.Geteuid() + 1}
	}})
	resp, err := e.unix.Post("http://gateway/v1/routes/triage/cut", "application/json", strings.NewReader(string(examples.Projection)))
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a refused peer got HTTP %d", resp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, "http://"+e.tcp+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+e.token)
	resp, err = e.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 1<<16)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if !strings.Contains(b.String(), "privacycut_gateway_peers_refused_total 1\n") {
		t.Errorf("metrics:\n%s", b.String())
	}
}

// TestMetrics: /metrics counts requests per route and code and times every
// stage, and holds no value, no source digest and no request text.
func TestMetrics(t *testing.T) {
	e := newEnv(t, envOptions{})
	e.post("/v1/routes/triage/cut", examples.Projection, false)
	e.post("/v1/chat/completions", chatBody("triage-irr", exampleTexts(t), nil), false)
	e.post("/v1/chat/completions", chatBody("triage", []string{"CANARY prose\n"}, nil), false)
	status, m := e.get("/metrics")
	if status != http.StatusOK {
		t.Fatalf("HTTP %d", status)
	}
	for _, want := range []string{
		`privacycut_gateway_requests_total{api="native",route="triage",code="OK"} 1`,
		`privacycut_gateway_requests_total{api="openai",route="triage-irr",code="OK"} 1`,
		`privacycut_gateway_requests_total{api="openai",route="triage",code="UNCOVERED_TEXT"} 1`,
		`privacycut_gateway_stage_seconds_count{route="triage",stage="rehydrate"} 1`,
		`privacycut_gateway_stage_seconds_bucket{route="triage",stage="verify",le="+Inf"} 1`,
		`privacycut_gateway_admissions_total{route="triage-irr"} 1`,
		"# TYPE privacycut_gateway_stage_seconds histogram",
	} {
		if !strings.Contains(string(m), want+"\n") && !strings.Contains(string(m), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, bad := range append([]string{"CANARY", "hmac-sha256", "sha256:", "evt:", "pcl:"}, ownerValues...) {
		if strings.Contains(string(m), bad) {
			t.Errorf("metrics hold %q", bad)
		}
	}
	if status, h := e.get("/healthz"); status != http.StatusOK || !strings.Contains(string(h), `"status":"ok"`) {
		t.Errorf("healthz: HTTP %d %s", status, h)
	}
}
