package gateway

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/grammar"
)

// FuzzParseConfig: any document is a *ConfigError or a configuration that
// checks; nothing panics, and a refusal's text holds no byte of the
// document beyond the member names of the schema.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"schema":"Gateway@1","listen":{"unix":"s","tcp":"127.0.0.1:1","token_file":"t"},"trust":["t"],"evidence_key":"k","journal":"j","routes":[{"note":"n","vocabulary":"v"}]}`))
	f.Add([]byte(`{"schema":"Gateway@1","listen":{"unix":"s","tcp":"[::1]:80","token_file":"t","allow_uids":[0,1000]},"trust":["t"],"evidence_key":"k","journal":"j","routes":[{"note":"n","vocabulary":"v","front_door":{"kind":"block","label":{"class":"private","weight":1,"categories":[],"subjects":[],"parents":[],"handling":[]},"lineage":["x"]}}],"limits":{"max_in_flight":3}}`))
	f.Add([]byte(`{"schema":"Gateway@1","listen":{"unix":"s","tcp":"10.0.0.1:80"}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		c, err := ParseConfig(doc, "/base")
		if err != nil {
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("not a ConfigError: %T %v", err, err)
			}
			if ce.Field == "" && ce.Err == nil {
				t.Fatalf("a refusal without a member or cause: %v", err)
			}
			return
		}
		if err := c.check(); err != nil {
			t.Fatalf("a parsed configuration does not check: %v", err)
		}
		if !strings.HasPrefix(c.Listen.Unix, "/") {
			t.Fatalf("unix socket path not absolute: %q", c.Listen.Unix)
		}
		if c.Listen.TCP != "" {
			if _, err := loopbackAddr(c.Listen.TCP); err != nil {
				t.Fatalf("a non-loopback address passed: %q", c.Listen.TCP)
			}
		}
	})
}

// FuzzChatProjection: a chat request either is refused (a front-door
// refusal or an unknown model) or becomes a Projection@1 whose parts are
// its user messages, in order, with the front door's kind, label and
// lineage, that the grammar's loader reads without a document refusal.
func FuzzChatProjection(f *testing.F) {
	g := &Gateway{cfg: &Config{}, routes: map[string]*routeState{
		"r": {name: "r", front: &FrontDoor{Kind: "block", Label: grammar.Label{Class: "private", Weight: 2, Parents: []string{"p"}},
			Lineage: []string{"sha256:aa"}}, instruction: "be brief", hasInstr: true},
		"n": {name: "n"},
	}}
	f.Add([]byte(`{"model":"r","messages":[{"role":"user","content":"ask q\n"}]}`))
	f.Add([]byte(`{"model":"r","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"stream":true,"stream_options":{"include_usage":true}}`))
	f.Add([]byte(`{"model":"r","messages":[{"role":"tool","content":"x"}]}`))
	f.Add([]byte(`{"model":"n","messages":[]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, rt, proj, parts, err := g.chatProjection(body)
		if err != nil {
			var fr *frontRefusal
			if !errors.Is(err, errNoModel) && !errors.As(err, &fr) {
				t.Fatalf("unexpected error %T %v", err, err)
			}
			if fr != nil && fr.refusal.Code == "" {
				t.Fatal("a refusal without a code")
			}
			return
		}
		if rt == nil || rt.front == nil {
			t.Fatal("a projection for a route without a front door")
		}
		var users []string
		for _, m := range req.Messages {
			if m.Role == "user" {
				s, ferr := contentText(body, &m.Content, "m")
				if ferr != nil {
					t.Fatal(ferr)
				}
				users = append(users, s)
			}
		}
		var doc struct {
			Parts []struct {
				Kind    string        `json:"kind"`
				Text    string        `json:"text"`
				Label   grammar.Label `json:"label"`
				Lineage []string      `json:"lineage"`
			} `json:"parts"`
		}
		if err := json.Unmarshal(proj, &doc); err != nil {
			t.Fatalf("the projection is not JSON: %v", err)
		}
		if len(doc.Parts) != len(users) || len(parts) != len(users) {
			t.Fatalf("%d parts for %d user messages", len(doc.Parts), len(users))
		}
		for i, p := range doc.Parts {
			if p.Text != users[i] || p.Kind != "block" || p.Label.Class != "private" || p.Label.Weight != 2 || len(p.Lineage) != 1 {
				t.Fatalf("part %d is not its message with the front door's kind, label and lineage", i)
			}
		}
		if _, refs := grammar.LoadProjection(proj, grammar.LoadOptions{}); refs != nil {
			for _, r := range refs {
				if r.Part < 0 {
					t.Fatalf("the projection is refused as a document: %v", r)
				}
			}
		}
	})
}
