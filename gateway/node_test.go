package gateway_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/receipts"
)

// nodeScript drives the front door with the official openai npm client: a
// rehydrated answer, the refusal of uncovered text, and a stream.
const nodeScript = `
import OpenAI from 'openai';
const c = new OpenAI({ baseURL: process.env.GW_URL, apiKey: process.env.GW_TOKEN, maxRetries: 0 });
const texts = JSON.parse(process.env.GW_TEXTS);
const messages = texts.map((t) => ({ role: 'user', content: t }));
const out = {};
const r = await c.chat.completions.create({ model: 'triage', messages });
out.content = r.choices[0].message.content;
out.finish = r.choices[0].finish_reason;
out.decisions = r.privacycut.decisions.length;
try {
  await c.chat.completions.create({ model: 'triage', messages: [{ role: 'user', content: 'CANARY-node prose\n' }] });
  out.refused = false;
} catch (e) {
  out.refused = true;
  out.status = e.status;
  out.code = e.code;
  out.param = e.param;
  out.message = String(e.message);
}
const s = await c.chat.completions.create({ model: 'triage', messages, stream: true });
let acc = '';
for await (const ch of s) acc += ch.choices[0]?.delta?.content ?? '';
out.stream = acc;
console.log(JSON.stringify(out));
`

// openaiNPM returns a directory whose node_modules holds the openai npm
// package: $PRIVACYCUT_NPM_OPENAI if set (CI may install it there), else a
// fresh `npm install openai` in a temporary directory. It skips, naming
// what is missing, when node or npm is absent or the registry does not
// answer.
func openaiNPM(t *testing.T) (node, dir string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed: the npm client test needs it")
	}
	if d := os.Getenv("PRIVACYCUT_NPM_OPENAI"); d != "" {
		return node, d
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the npm client test needs it")
	}
	dir = t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix", dir, "openai")
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(dir, ".npm"), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("the npm registry did not give the openai package (%v): %.300s", err, out)
	}
	return node, dir
}

// TestOpenAINPMClient: the official openai npm client, over TCP with the
// bearer token, gets a rehydrated answer, an error carrying the refusal
// code for uncovered text, and a streamed answer.
func TestOpenAINPMClient(t *testing.T) {
	if testing.Short() {
		t.Skip("installs and runs the npm client (-short)")
	}
	node, dir := openaiNPM(t)
	e := newEnv(t, envOptions{})
	script := filepath.Join(dir, "front-door.mjs")
	if err := os.WriteFile(script, []byte(nodeScript), 0o644); err != nil {
		t.Fatal(err)
	}
	texts, _ := json.Marshal(exampleTexts(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GW_URL=http://"+e.tcp+"/v1", "GW_TOKEN="+e.token, "GW_TEXTS="+string(texts))
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node: %v\n%s\n%s", err, out, stderr)
	}
	var got struct {
		Content, Finish, Stream, Code, Param, Message string
		Decisions, Status                             int
		Refused                                       bool
	}
	mustJSON(t, out, &got)
	for name, content := range map[string]string{"answer": got.Content, "stream": got.Stream} {
		var a answer
		mustJSON(t, []byte(content), &a)
		if d := cmp.Diff(wantModules, a.modules()); d != "" {
			t.Errorf("%s: rehydrated modules (-want +got):\n%s", name, d)
		}
	}
	if got.Finish != "stop" || got.Decisions != 1 {
		t.Errorf("answer: %+v", got)
	}
	if !got.Refused || got.Status != 422 || got.Code != string(receipts.UncoveredText) || got.Param != "messages[0].content" {
		t.Errorf("refusal: %+v", got)
	}
	if strings.Contains(got.Message, "CANARY") {
		t.Errorf("the error echoes the request: %s", got.Message)
	}
}
