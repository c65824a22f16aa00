package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// chatRequest is what the front door accepts of an OpenAI Chat Completions
// request: every other member is refused.
type chatRequest struct {
	Model         string         `json:"model"`
	Messages      []chatMessage  `json:"messages"`
	Stream        *bool          `json:"stream,omitempty"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

type streamOptions struct {
	IncludeUsage *bool `json:"include_usage,omitempty"`
}

type chatMessage struct {
	Role    string      `json:"role"`
	Content canon.Value `json:"content"`
}

// textPart is a content part; only "text" parts are accepted.
type textPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// frontRefusal is a refusal of the chat request itself, before any
// projection exists: its code, the request member at fault (a path of the
// request's schema, never a value) and its position in the body.
type frontRefusal struct {
	refusal receipts.Refusal
	param   string
	reason  string
}

func (e *frontRefusal) Error() string { return "gateway: front door: " + e.param + ": " + e.reason }

// chatProjection reads a chat request and makes its Projection@1: each
// user message one part, in order, with the kind, label and lineage of the
// route's front_door and a key unique to this request. parts maps each
// part to its message's index.
func (g *Gateway) chatProjection(body []byte) (req *chatRequest, rt *routeState, proj []byte, parts []int, err error) {
	req = &chatRequest{}
	if err := canon.Unmarshal(body, req, canon.Options{MaxBytes: g.cfg.maxRequestBytes()}); err != nil {
		r := receipts.Refusal{Code: receipts.MalformedRecord, Part: -1, Line: 1, Column: 1, Length: 1}
		param := ""
		var se *canon.SyntaxError
		if errors.As(err, &se) {
			r.Code, r.Line, r.Column, r.Length, param = receipts.Code(se.Class), se.Line, se.Column, se.Length, se.Path
		}
		return nil, nil, nil, nil, &frontRefusal{refusal: r, param: param, reason: "not a chat request the front door accepts"}
	}
	rt = g.routes[req.Model]
	if rt == nil || rt.front == nil {
		return req, nil, nil, nil, errNoModel
	}
	at := func(i int) string { return fmt.Sprintf("messages[%d]", i) }
	bad := func(code receipts.Code, param, reason string, v *canon.Value) *frontRefusal {
		r := receipts.Refusal{Code: code, Part: -1}
		if v != nil {
			r.Line, r.Column = canon.LineCol(body, v.Off)
			r.Length = v.End - v.Off
		}
		return &frontRefusal{refusal: r, param: param, reason: reason}
	}
	id := receipts.RandomID("", 10)
	var ps []grammar.Part
	system := false
	for i := range req.Messages {
		m := &req.Messages[i]
		text, ferr := contentText(body, &m.Content, at(i))
		if ferr != nil {
			return req, rt, nil, nil, ferr
		}
		switch m.Role {
		case "system":
			if system {
				return req, rt, nil, nil, bad(receipts.MalformedRecord, at(i)+".role", "a second system message", &m.Content)
			}
			system = true
			if !rt.hasInstr || text != rt.instruction {
				return req, rt, nil, nil, bad(receipts.PlanMismatch, at(i)+".content", "the system message is not the route's instruction (wire.instruction)", &m.Content)
			}
		case "user":
			label := rt.front.Label
			ps = append(ps, grammar.Part{Kind: rt.front.Kind, Key: fmt.Sprintf("chat/%s/%d", id, len(ps)), Text: []byte(text),
				Label: &label, Lineage: rt.front.Lineage})
			parts = append(parts, i)
		default:
			return req, rt, nil, nil, bad(receipts.MalformedRecord, at(i)+".role", "only system and user messages are accepted", nil)
		}
	}
	if len(ps) == 0 {
		return req, rt, nil, nil, bad(receipts.MalformedRecord, "messages", "no user message", nil)
	}
	for i := range ps {
		// canon encodes null slices as null; the grammar wants arrays.
		l := ps[i].Label
		for _, s := range []*[]string{&l.Categories, &l.Subjects, &l.Parents, &l.Handling} {
			if *s == nil {
				*s = []string{}
			}
		}
	}
	proj, err = canon.Marshal(&grammar.Projection{Schema: grammar.ProjectionSchema, Profile: grammar.Profile, Parts: ps})
	if err != nil {
		return req, rt, nil, nil, err
	}
	return req, rt, proj, parts, nil
}

var errNoModel = errors.New("gateway: no route of that name serves the front door")

// contentText is a message's content: a string, or an array of text parts
// concatenated. Anything else (null, images, audio, files) is refused.
func contentText(body []byte, v *canon.Value, at string) (string, *frontRefusal) {
	bad := func(param string, v *canon.Value) *frontRefusal {
		r := receipts.Refusal{Code: receipts.MalformedRecord, Part: -1}
		r.Line, r.Column = canon.LineCol(body, v.Off)
		r.Length = v.End - v.Off
		return &frontRefusal{refusal: r, param: param, reason: "content must be a string or text parts"}
	}
	switch v.Kind {
	case canon.String:
		return string(v.Str), nil
	case canon.Array:
		var b strings.Builder
		for j := range v.Elems {
			var tp textPart
			if err := v.Elems[j].Decode(&tp); err != nil || tp.Type != "text" {
				return "", bad(fmt.Sprintf("%s.content[%d]", at, j), &v.Elems[j])
			}
			b.WriteString(tp.Text)
		}
		return b.String(), nil
	}
	return "", bad(at+".content", v)
}

// serveChat is POST /v1/chat/completions, the OpenAI-compatible front
// door: model names a route, each user message is one part of the
// projection, and the answer is a chat.completion (or, with stream, its
// chunks once the whole answer has been validated) whose content is the
// answer's JSON. Refusals are OpenAI-style error objects whose code is the
// refusal code.
func (g *Gateway) serveChat(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	f, done, err := g.admit()
	if err != nil {
		o := g.classify(r.Context(), nil, err)
		g.logRequest("openai", "-", o, nil, time.Since(t0))
		g.writeChatError(w, o, nil, "")
		return
	}
	defer done()
	ctx, cancel := g.requestContext(r)
	defer cancel()
	body, err := g.readBody(w, r)
	if err != nil {
		o := g.classify(ctx, nil, err)
		g.logRequest("openai", "-", o, nil, time.Since(t0))
		g.writeChatError(w, o, nil, "")
		return
	}
	req, rt, proj, parts, err := g.chatProjection(body)
	var fr *frontRefusal
	switch {
	case errors.Is(err, errNoModel):
		g.m.request("openai", "-", "NOT_FOUND")
		g.log.Info("request", "api", "openai", "route", "-", "code", "NOT_FOUND", "status", http.StatusNotFound)
		writeError(w, http.StatusNotFound, apiErr("no route of that name serves the front door", "invalid_request_error", "model", "model_not_found"))
		return
	case errors.As(err, &fr):
		re := g.p.Refuse([]receipts.Refusal{fr.refusal})
		o := outcome{status: http.StatusUnprocessableEntity, code: string(fr.refusal.Code), refusal: re,
			message: fr.reason + ": " + re.Error(), errType: "privacycut_refusal"}
		name := "-"
		if rt != nil {
			name = rt.name
		}
		g.logRequest("openai", name, o, nil, time.Since(t0))
		g.writeChatError(w, o, nil, fr.param)
		return
	case err != nil:
		o := g.classify(ctx, nil, err)
		g.logRequest("openai", rt.name, o, nil, time.Since(t0))
		g.writeChatError(w, o, nil, "")
		return
	}
	d, err := g.disclose(ctx, rt, proj, f)
	if err != nil {
		o := g.classify(ctx, d, err)
		g.logRequest("openai", rt.name, o, d, time.Since(t0))
		g.writeChatError(w, o, parts, "")
		return
	}
	g.logRequest("openai", rt.name, outcome{status: http.StatusOK, code: "OK"}, d, time.Since(t0))
	res := d.result()
	res.Answer = nil
	created := time.Now().Unix()
	id := "chatcmpl-" + strings.TrimPrefix(res.Seal, "evt:")
	if req.Stream != nil && *req.Stream {
		usage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage != nil && *req.StreamOptions.IncludeUsage
		writeChunks(w, id, created, rt.name, string(d.answer), res, usage)
		return
	}
	writeJSON(w, http.StatusOK, chatCompletion{ID: id, Object: "chat.completion", Created: created, Model: rt.name,
		Choices: []chatChoice{{Index: 0, Message: chatReply{Role: "assistant", Content: string(d.answer)}, FinishReason: "stop"}},
		Usage:   &chatUsage{}, Privacycut: res})
}

// writeChatError answers a front-door request that was not served with an
// OpenAI-style error object whose code is the refusal code (or a fixed
// word); its privacycut member carries the refusal document, or what was
// disclosed. param names the request member at fault: for a refusal of the
// projection, the content of the user message that became the part.
func (g *Gateway) writeChatError(w http.ResponseWriter, o outcome, parts []int, param string) {
	var extra any
	switch {
	case o.disclosed != nil:
		extra = o.disclosed
	case o.refusal != nil:
		extra = o.refusal.Document
		if param == "" && len(o.refusal.Document.Reasons) > 0 {
			if p := o.refusal.Document.Reasons[0].Part; p >= 0 && p < len(parts) {
				param = fmt.Sprintf("messages[%d].content", parts[p])
			}
		}
	case o.verification != nil:
		extra = map[string]any{"verification": o.verification}
	}
	e := apiErr(o.message, o.errType, param, o.code)
	e.Privacycut = extra
	writeError(w, o.status, e)
}

type chatCompletion struct {
	ID         string       `json:"id"`
	Object     string       `json:"object"`
	Created    int64        `json:"created"`
	Model      string       `json:"model"`
	Choices    []chatChoice `json:"choices"`
	Usage      *chatUsage   `json:"usage,omitempty"`
	Privacycut *Result      `json:"privacycut,omitempty"`
}

type chatChoice struct {
	Index        int       `json:"index"`
	Message      chatReply `json:"message"`
	FinishReason string    `json:"finish_reason"`
	Logprobs     *struct{} `json:"logprobs"`
}

type chatReply struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"`
}

type chatUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chunk struct {
	ID         string        `json:"id"`
	Object     string        `json:"object"`
	Created    int64         `json:"created"`
	Model      string        `json:"model"`
	Choices    []chunkChoice `json:"choices"`
	Usage      *chatUsage    `json:"usage,omitempty"`
	Privacycut *Result       `json:"privacycut,omitempty"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason *string    `json:"finish_reason"`
	Logprobs     *struct{}  `json:"logprobs"`
}

type chunkDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// chunkBytes is the most content one chunk carries.
const chunkBytes = 1024

// writeChunks answers a stream: request as server-sent events, once the
// whole answer has been validated: the role, the content in pieces, the
// finish with the privacycut member, the usage when asked, then [DONE].
func writeChunks(w http.ResponseWriter, id string, created int64, model, content string, res *Result, usage bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	send := func(c chunk) {
		b, err := canon.Marshal(c)
		if err != nil {
			return
		}
		w.Write([]byte("data: "))
		w.Write(b)
		w.Write([]byte("\n\n"))
		if fl != nil {
			fl.Flush()
		}
	}
	base := chunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model}
	empty := ""
	c := base
	c.Choices = []chunkChoice{{Delta: chunkDelta{Role: "assistant", Content: &empty}}}
	send(c)
	for len(content) > 0 {
		n := min(len(content), chunkBytes)
		for n < len(content) && !utf8.RuneStart(content[n]) {
			n--
		}
		piece := content[:n]
		content = content[n:]
		c := base
		c.Choices = []chunkChoice{{Delta: chunkDelta{Content: &piece}}}
		send(c)
	}
	stop := "stop"
	c = base
	c.Choices = []chunkChoice{{Delta: chunkDelta{}, FinishReason: &stop}}
	c.Privacycut = res
	send(c)
	if usage {
		c := base
		c.Choices = []chunkChoice{}
		c.Usage = &chatUsage{}
		send(c)
	}
	w.Write([]byte("data: [DONE]\n\n"))
	if fl != nil {
		fl.Flush()
	}
}

// requestContext is the request's context, canceled when the gateway stops
// (Shutdown, past its drain) and bounded by the request timeout and the
// time a rehydration may take after it.
func (g *Gateway) requestContext(r *http.Request) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.requestTimeout()+30*time.Second)
	stop := context.AfterFunc(g.base, cancel)
	return ctx, func() { stop(); cancel() }
}
