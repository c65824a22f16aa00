package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/gateway"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/route"
)

// demoRoute is the name of the route the gateway demo approves.
const demoRoute = "payments-triage"

// runGateway is `cut demo --gateway`: the demo's round trip through a
// gateway started in this process. A reviewer's key approves a reversible
// route to the stand-in model; the gateway serves it on a unix socket in
// the demo directory; a request in the shape the official OpenAI clients
// send goes to its front door, one user message per part of the example,
// and comes back rehydrated; prose in a message is refused with its code.
func (d *demo) runGateway(ctx context.Context, verifierMode string) error {
	out := d.c.Stdout
	gw, sock, err := d.startGateway(ctx, verifierMode)
	if err != nil {
		return err
	}
	defer gw.Shutdown(context.Background())
	hc := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", sock)
	}}}
	texts, err := demoTexts()
	if err != nil {
		return err
	}
	msgs := []map[string]string{{"role": "system", "content": string(examples.Instruction)}}
	for _, t := range texts {
		msgs = append(msgs, map[string]string{"role": "user", "content": t})
	}
	body, _ := json.Marshal(map[string]any{"model": demoRoute, "messages": msgs})
	fmt.Fprintf(out, "1. The gateway serves route %s (approved by a reviewer's key: reversible, openai-chat@1 to the stand-in,\n   whose first answer is a 429) on %s\n\n", demoRoute, sock)
	fmt.Fprintln(out, "2. A runtime's request, as an OpenAI client sends it (POST /v1/chat/completions):")
	fmt.Fprintf(out, "   {\"model\":%q,\"messages\":[{\"role\":\"system\",\"content\":\"<the route's instruction>\"}", demoRoute)
	for _, t := range texts {
		fmt.Fprintf(out, ",{\"role\":\"user\",\"content\":\"%s… (%d bytes)\"}", firstWords(t), len(t))
	}
	fmt.Fprintln(out, "]}")
	status, reply, err := demoPost(ctx, hc, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("the gateway answered HTTP %d: %s", status, reply)
	}
	var comp struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Privacycut gateway.Result `json:"privacycut"`
	}
	if err := json.Unmarshal(reply, &comp); err != nil || len(comp.Choices) != 1 {
		return fmt.Errorf("the gateway's answer is not a chat.completion")
	}
	res := comp.Privacycut
	fmt.Fprintf(out, "\n3. What the gateway did for that one request: its own plan from the route, seal %s,\n   verification %s, its claims:\n",
		res.Seal, res.Verification.Verdict)
	for _, cl := range res.Verification.Claims {
		mark := "holds"
		if !cl.OK {
			mark = "FAILS"
		}
		fmt.Fprintf(out, "   %-18s %s\n", cl.Name, mark)
	}
	for _, dec := range res.Decisions {
		fmt.Fprintf(out, "   admitted use %d of %d to %s, body %s,\n", dec.Use, dec.MaxUses, dec.Target, dec.BodyDigest)
	}
	fmt.Fprintln(out, "   (the first delivery was answered 429: the same sealed bytes were redelivered under a new decision)")
	lease := ""
	if res.Lease != nil {
		lease = *res.Lease
	}
	fmt.Fprintf(out, "   lease %s now %s; %d transformation receipts\n", lease, res.LeaseState, len(res.Receipts))
	content := comp.Choices[0].Message.Content
	fmt.Fprintf(out, "\n4. The reply: %s %s, finish_reason %s; its content, rehydrated inside the vault:\n   %s\n",
		comp.Object, comp.ID, comp.Choices[0].FinishReason, content)
	printProseToken(out, []byte(content))
	subs := map[string]int{}
	if res.Rehydration != nil {
		subs = res.Rehydration.Substitutions
		fmt.Fprintf(out, "   (%s: %s substituted; the rehydrated content must be deleted by %s, its purge time)\n",
			res.Rehydration.Schema, summary(subs), res.Rehydration.PurgeAt)
	}
	d.check("the front door's answer is rehydrated and the lease consumed",
		res.LeaseState == "CONSUMED" && len(subs) > 0 && strings.Contains(content, "git.corp.example/payments/ledger"), res.LeaseState)
	d.check("the 429 was redelivered: two admissions of the same bytes, within max_uses",
		len(res.Decisions) == 2 && res.Decisions[1].Use == 2 && res.Decisions[1].Use <= res.Decisions[1].MaxUses &&
			res.Decisions[0].BodyDigest == res.Decisions[1].BodyDigest && res.BodyDigest == res.Decisions[0].BodyDigest, "")

	// Prose in a message: refused whole, nothing sent.
	msgs = append(msgs, map[string]string{"role": "user", "content": "please also look at our ledger service\n"})
	body, _ = json.Marshal(map[string]any{"model": demoRoute, "messages": msgs})
	status, reply, err = demoPost(ctx, hc, body)
	if err != nil {
		return err
	}
	var e struct {
		Error struct {
			Code  string `json:"code"`
			Param string `json:"param"`
			Type  string `json:"type"`
		} `json:"error"`
	}
	json.Unmarshal(reply, &e)
	fmt.Fprintf(out, "\n5. The same request with a line of prose added as a last message: HTTP %d, error code %s, param %s\n",
		status, e.Error.Code, e.Error.Param)
	d.check("prose at the front door is refused, naming the message, echoing nothing",
		status == http.StatusUnprocessableEntity && e.Error.Code == string(receipts.UncoveredText) &&
			e.Error.Param == fmt.Sprintf("messages[%d].content", len(msgs)-1) && !bytes.Contains(reply, []byte("ledger service")),
		e.Error.Code)
	fmt.Fprintln(out, "\n6. What the demo checked:")
	return nil
}

// startGateway approves the demo's route and starts a gateway on it.
func (d *demo) startGateway(ctx context.Context, verifierMode string) (*gateway.Gateway, string, error) {
	key, err := route.GenerateKey(rand.Reader, "reviewer.demo")
	if err != nil {
		return nil, "", err
	}
	defer key.Wipe()
	gwDir := filepath.Join(d.dir, "gateway")
	if err := os.MkdirAll(gwDir, 0o700); err != nil {
		return nil, "", err
	}
	write := func(name string, data []byte, mode os.FileMode) string {
		p := filepath.Join(gwDir, name)
		if err == nil {
			err = os.WriteFile(p, data, mode)
		}
		return p
	}
	v, verr := pipeline.LoadVocabulary(examples.Vocabulary)
	if verr != nil {
		return nil, "", verr
	}
	sch, serr := rehydrate.ParseSchema(examples.Schema)
	if serr != nil {
		return nil, "", serr
	}
	schemaDigest := sch.Digest()
	r := map[string]any{"schema": "DisclosureRoute@1", "name": demoRoute, "consumer": map[string]any{"kind": "model", "id": "demo-standin"},
		"purpose": "dependency-triage", "target": d.model + "/" + standin.RateLimited + "-1" + standin.OpenAIPath, "mode": "reversible",
		"wire": map[string]any{"profile": receipts.WireOpenAIChat, "model": "demo-model", "instruction": string(examples.Instruction),
			"max_output_tokens": 4096},
		"categories":        map[string]any{"allowed": route.Categories()[:7], "prohibited": []string{"credential"}},
		"vocabulary_digest": v.Digest(), "output_schema_digest": schemaDigest, "max_uses": 2, "max_lifetime_s": 600,
		"threat_model": "remote-model-honest-but-curious", "retention": "no-retention",
		"remote_deadline_s": 60, "return_window_s": 600, "station": "local", "max_parents": 64}
	doc, _ := json.Marshal(r)
	note, nerr := route.Approve(key, doc)
	if nerr != nil {
		return nil, "", nerr
	}
	write("route.note", note, 0o644)
	write("reviewers.vkeys", []byte(key.VerifierKey()+"\n"), 0o644)
	lineage := "sha256:" + strings.Repeat("4f", 32)
	cfg := map[string]any{"schema": "Gateway@1",
		"listen": map[string]any{"unix": "run/gateway.sock"}, "vault": d.sock, "trust": []string{"reviewers.vkeys"},
		"evidence_key": filepath.Join(d.dir, "evidence.key"), "journal": filepath.Join(d.dir, "journal.jsonl"),
		"routes": []any{map[string]any{"note": "route.note", "vocabulary": d.vocab, "schema": d.schema, "credential_file": d.credential,
			"front_door": map[string]any{"kind": "block", "lineage": []string{lineage},
				"label": map[string]any{"class": "private", "weight": 3, "categories": []string{"owner.module"},
					"subjects": []string{"ns/payments"}, "parents": []string{lineage}, "handling": []string{}}}}},
		"verifier": map[string]any{"plugins": 1}}
	cdoc, _ := json.Marshal(cfg)
	write("gateway.json", cdoc, 0o600)
	if err != nil {
		return nil, "", err
	}
	c, err := gateway.ParseConfig(cdoc, gwDir)
	if err != nil {
		return nil, "", err
	}
	opt := gateway.Options{Logger: slog.New(slog.NewJSONHandler(&d.log, nil)), PluginLog: &d.log}
	if verifierMode == "inprocess" {
		opt.Verifier = pipeline.InProcess()
	} else {
		exe, err := selfExecutable()
		if err != nil {
			return nil, "", err
		}
		opt.PluginExe, opt.PluginArgs = exe, []string{pluginArg}
	}
	g, err := gateway.New(ctx, c, opt)
	if err != nil {
		return nil, "", err
	}
	ls, err := g.Listen()
	if err != nil {
		g.Shutdown(context.Background())
		return nil, "", err
	}
	go g.Serve(ls)
	return g, c.Listen.Unix, nil
}

func demoPost(ctx context.Context, hc *http.Client, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://gateway/v1/chat/completions", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b, err
}

// demoTexts are the example projection's part texts.
func demoTexts() ([]string, error) {
	var p struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	}
	if err := json.Unmarshal(examples.Projection, &p); err != nil {
		return nil, err
	}
	out := make([]string, len(p.Parts))
	for i, x := range p.Parts {
		out[i] = x.Text
	}
	return out, nil
}

// firstWords is the record keyword and its first field: public items.
func firstWords(t string) string {
	f := strings.Fields(t)
	if len(f) >= 2 {
		return f[0] + " " + f[1]
	}
	return ""
}
