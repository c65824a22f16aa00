package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/gateway"
	"github.com/privacycut/privacycut/receipts"
)

// answer is the example schema's answer, as the stand-in gives it.
type answer struct {
	Summary  string `json:"summary"`
	Findings []struct {
		Diagnostic  string `json:"diagnostic"`
		OwnerModule string `json:"owner_module"`
		OwnerTeam   string `json:"owner_team"`
		Action      string `json:"action"`
	} `json:"findings"`
}

func (a answer) modules() []string {
	var m []string
	for _, f := range a.Findings {
		m = append(m, f.OwnerModule)
	}
	return m
}

var wantModules = []string{"git.corp.example/payments/ledger", "git.corp.example/payments/ledger",
	"git.corp.example/payments/gateway", "git.corp.example/payments/reports"}

// TestNative: POST /v1/routes/{name}/cut of the example projection, over
// the unix socket and over TCP with the token: the reversible route's
// answer is rehydrated (owner values back, the lease CONSUMED, a receipt),
// the irreversible route's holds only irreversible tokens; the result
// carries the verification, receipts and one admission. The same
// projection twice gets two plans, two seals and two leases.
func TestNative(t *testing.T) {
	e := newEnv(t, envOptions{})
	seals, leases := map[string]bool{}, map[string]bool{}
	for i, tcp := range []bool{false, true, false} {
		status, body := e.post("/v1/routes/triage/cut", examples.Projection, tcp)
		if status != http.StatusOK {
			t.Fatalf("request %d: HTTP %d: %s", i, status, body)
		}
		var res gateway.Result
		mustJSON(t, body, &res)
		var a answer
		mustJSON(t, res.Answer, &a)
		if d := cmp.Diff(wantModules, a.modules()); d != "" {
			t.Errorf("rehydrated modules (-want +got):\n%s", d)
		}
		if res.Schema != gateway.SchemaResult || res.Route != "triage" || res.Verification.Verdict != receipts.VerdictPass ||
			len(res.Receipts) == 0 || res.Rehydration == nil || res.Lease == nil || res.LeaseState != "CONSUMED" {
			t.Fatalf("result: %s", body)
		}
		if len(res.Decisions) != 1 || !res.Decisions[0].Admit || res.Decisions[0].Use != 1 || res.Decisions[0].MaxUses != 2 ||
			res.Decisions[0].Seal != res.Seal || res.BodyDigest != res.ExportDigest {
			t.Fatalf("decisions: %s", fmtJSON(res.Decisions))
		}
		if seals[res.Seal] || leases[*res.Lease] {
			t.Fatalf("request %d reuses a seal or a lease", i)
		}
		seals[res.Seal], leases[*res.Lease] = true, true
	}
	status, body := e.post("/v1/routes/triage-irr/cut", examples.Projection, false)
	if status != http.StatusOK {
		t.Fatalf("irreversible: HTTP %d: %s", status, body)
	}
	var res gateway.Result
	mustJSON(t, body, &res)
	if res.Lease != nil || res.Rehydration != nil || !strings.Contains(string(res.Answer), "redacted:module:1") {
		t.Fatalf("irreversible result: %s", body)
	}
	e.noOwnerValues("the irreversible answer", string(body))
}

// TestNativeRefusals: a projection the grammar refuses is 422 with its
// refusal document (code, part, position, journaled event id) and nothing
// of its text; an unknown route is 404; a body over the limit is
// LIMIT_EXCEEDED; a request on TCP without the token is 401.
func TestNativeRefusals(t *testing.T) {
	e := newEnv(t, envOptions{config: func(c map[string]any) {
		c["limits"] = map[string]any{"max_request_bytes": 64 << 10}
	}})
	const canary = "CANARY-5c1e: not a record"
	proj := strings.Replace(string(examples.Projection), `"text": "ask `, `"text": "`+canary+`\nask `, 1)
	if proj == string(examples.Projection) {
		t.Fatal("the canary was not planted")
	}
	status, body := e.post("/v1/routes/triage/cut", []byte(proj), false)
	if status != http.StatusUnprocessableEntity {
		t.Fatalf("HTTP %d: %s", status, body)
	}
	var doc receipts.RefusalDocument
	mustJSON(t, body, &doc)
	if !doc.Refused || !strings.HasPrefix(doc.EventID, "evt:") || len(doc.Reasons) != 1 {
		t.Fatalf("refusal: %s", body)
	}
	if r := doc.Reasons[0]; r.Code != receipts.UncoveredText || r.Part != 1 || r.Kind != "history" || r.Line != 1 || r.Column != 1 || r.Length != len(canary) {
		t.Errorf("reason: %+v", r)
	}
	if strings.Contains(string(body), "CANARY") {
		t.Errorf("the refusal echoes the request: %s", body)
	}
	for _, tc := range []struct {
		name   string
		path   string
		body   []byte
		tcp    string // "", "token", "bad"
		status int
		code   string
	}{
		{"unknown route", "/v1/routes/CANARY-route/cut", examples.Projection, "", http.StatusNotFound, "route_not_found"},
		{"too large", "/v1/routes/triage/cut", []byte(`{"x":"` + strings.Repeat("a", 70<<10) + `"}`), "", http.StatusUnprocessableEntity, ""},
		{"no token", "/v1/routes/triage/cut", examples.Projection, "none", http.StatusUnauthorized, "invalid_api_key"},
		{"wrong token", "/v1/routes/triage/cut", examples.Projection, "bad", http.StatusUnauthorized, "invalid_api_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url, c := "http://gateway"+tc.path, e.unix
			if tc.tcp != "" {
				url, c = "http://"+e.tcp+tc.path, e.http
			}
			req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(tc.body)))
			if tc.tcp == "bad" {
				req.Header.Set("Authorization", "Bearer "+e.token+"x")
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var out struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
				Reasons []receipts.Refusal `json:"reasons"`
			}
			json.NewDecoder(resp.Body).Decode(&out)
			if resp.StatusCode != tc.status {
				t.Fatalf("HTTP %d, want %d", resp.StatusCode, tc.status)
			}
			if tc.code != "" && out.Error.Code != tc.code {
				t.Errorf("code %q, want %q", out.Error.Code, tc.code)
			}
			if tc.code == "" && (len(out.Reasons) != 1 || out.Reasons[0].Code != receipts.LimitExceeded) {
				t.Errorf("reasons %+v, want LIMIT_EXCEEDED", out.Reasons)
			}
		})
	}
}

// openaiClient is the official OpenAI Go client pointed at the front door:
// over TCP with the bearer token as its API key, or over the unix socket
// through a transport that dials it. Retries are off: a retried request
// is a new disclosure.
func (e *env) openaiClient(tcp bool) openai.Client {
	if tcp {
		return openai.NewClient(option.WithBaseURL("http://"+e.tcp+"/v1/"), option.WithAPIKey(e.token), option.WithMaxRetries(0))
	}
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", e.sock)
	}}}
	return openai.NewClient(option.WithBaseURL("http://gateway/v1/"), option.WithAPIKey("unused-on-the-socket"),
		option.WithHTTPClient(hc), option.WithMaxRetries(0))
}

func userMessages(texts []string) []openai.ChatCompletionMessageParamUnion {
	var m []openai.ChatCompletionMessageParamUnion
	for _, t := range texts {
		m = append(m, openai.UserMessage(t))
	}
	return m
}

// TestOpenAIClient: the official OpenAI Go client, over TCP with the token
// and over the unix socket, gets a rehydrated answer for a reversible
// route as the message content of a chat.completion whose privacycut
// member carries the decisions and receipts; uncovered text is an
// *openai.Error carrying the refusal code, the message's path as param,
// and nothing of the request; streaming works with the client's streaming
// API and accumulator.
func TestOpenAIClient(t *testing.T) {
	e := newEnv(t, envOptions{})
	texts := exampleTexts(t)
	for _, tcp := range []bool{true, false} {
		c := e.openaiClient(tcp)
		ctx := context.Background()
		comp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "triage", Messages: userMessages(texts)})
		if err != nil {
			t.Fatalf("tcp %v: %v", tcp, err)
		}
		if len(comp.Choices) != 1 || comp.Choices[0].FinishReason != "stop" || comp.Object != "chat.completion" || comp.Model != "triage" {
			t.Fatalf("completion: %s", comp.RawJSON())
		}
		var a answer
		mustJSON(t, []byte(comp.Choices[0].Message.Content), &a)
		if d := cmp.Diff(wantModules, a.modules()); d != "" {
			t.Errorf("tcp %v: rehydrated modules (-want +got):\n%s", tcp, d)
		}
		pc, ok := comp.JSON.ExtraFields["privacycut"]
		if !ok {
			t.Fatalf("no privacycut member: %s", comp.RawJSON())
		}
		var res gateway.Result
		mustJSON(t, []byte(pc.Raw()), &res)
		if len(res.Decisions) != 1 || len(res.Receipts) == 0 || res.Rehydration == nil || res.Answer != nil || res.LeaseState != "CONSUMED" {
			t.Errorf("privacycut member: %s", pc.Raw())
		}

		// With a system message equal to the route's instruction (this
		// route has none: refused), and the refusal of uncovered text.
		const canary = "CANARY-77ab leaked prose\n"
		_, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "triage",
			Messages: userMessages([]string{texts[0], canary})})
		var ae *openai.Error
		if !errors.As(err, &ae) {
			t.Fatalf("uncovered text: %v", err)
		}
		if ae.StatusCode != http.StatusUnprocessableEntity || ae.Code != string(receipts.UncoveredText) || ae.Param != "messages[1].content" {
			t.Errorf("error: HTTP %d code %q param %q", ae.StatusCode, ae.Code, ae.Param)
		}
		if strings.Contains(ae.RawJSON(), "CANARY") || strings.Contains(ae.RawJSON(), "leaked") {
			t.Errorf("the error echoes the request: %s", ae.RawJSON())
		}

		// Streaming.
		stream := c.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "triage", Messages: userMessages(texts),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		acc := openai.ChatCompletionAccumulator{}
		chunks := 0
		for stream.Next() {
			acc.AddChunk(stream.Current())
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		if chunks < 4 || len(acc.Choices) != 1 || acc.Choices[0].FinishReason != "stop" {
			t.Fatalf("stream: %d chunks, %+v", chunks, acc.Choices)
		}
		var sa answer
		mustJSON(t, []byte(acc.Choices[0].Message.Content), &sa)
		if d := cmp.Diff(wantModules, sa.modules()); d != "" {
			t.Errorf("streamed modules (-want +got):\n%s", d)
		}
	}
}

// TestClientDoesNotRetryDisclosures: the official Go client with its
// default retries gets UPSTREAM_FAILED once: x-should-retry: false keeps
// it from sending the request again, which would be a new disclosure.
func TestClientDoesNotRetryDisclosures(t *testing.T) {
	e := newEnv(t, envOptions{})
	c := openai.NewClient(option.WithBaseURL("http://"+e.tcp+"/v1/"), option.WithAPIKey(e.token))
	_, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "fail", Messages: userMessages(exampleTexts(t))})
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadGateway || ae.Code != string(receipts.UpstreamFailed) {
		t.Fatalf("err = %v", err)
	}
	_, m := e.get("/metrics")
	// The gateway redelivered within max_uses (2); the client sent once.
	if !strings.Contains(string(m), `privacycut_gateway_admissions_total{route="fail"} 2`+"\n") ||
		!strings.Contains(string(m), `privacycut_gateway_requests_total{api="openai",route="fail",code="UPSTREAM_FAILED"} 1`+"\n") {
		t.Errorf("the client retried, or the metrics miss it:\n%s", m)
	}
}
