package standin

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/privacycut/privacycut/internal/readall"
)

// Paths of the provider stand-ins. A mode may stand before them as one
// path element ("/refusal/v1/chat/completions"); without one the mode is
// Honest.
const (
	OpenAIPath    = "/v1/chat/completions"
	AnthropicPath = "/v1/messages"
)

// Modes of the provider stand-ins, besides Honest, Invent and Unmarked. A
// mode with a count suffix, "rate-limited-2", misbehaves for the first N
// requests to its path and is honest afterwards.
const (
	Refusal     = "refusal"      // the model declines (OpenAI: message.refusal; Anthropic: stop_reason refusal)
	Truncated   = "truncated"    // the answer is cut at the token ceiling (finish_reason length / stop_reason max_tokens)
	NoToolUse   = "no-tool-use"  // Anthropic: a text answer with stop_reason end_turn; OpenAI: prose content
	RateLimited = "rate-limited" // 429 with Retry-After and the provider's error object
	ServerError = "server-error" // 500 with the provider's error object
	Overloaded  = "overloaded"   // Anthropic 529 overloaded_error; OpenAI 503
)

// MaxRequestBytes is the largest request body a stand-in reads.
const MaxRequestBytes = 64 << 20

// Options configure a Server.
type Options struct {
	// Credential is the API key the provider stand-ins expect; "" accepts
	// any non-empty key.
	Credential string
	// RetryAfter is the Retry-After header of a 429 or overload, "" for "1".
	RetryAfter string
	// Script, when set, gives the modes of the first requests to the
	// provider stand-ins, one per request, before the path's mode applies.
	Script []string
	// Now is the clock of "created" fields (nil: time.Now).
	Now func() time.Time
}

// Request is one request a Server received, exactly as it came.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Server is the loopback stand-in of the remote model: the Export@1
// stand-in of Handler and faithful stand-ins of the OpenAI Chat Completions
// and Anthropic Messages APIs. It records every request. It is safe for
// concurrent use.
type Server struct {
	opt Options

	mu     sync.Mutex
	got    []Request
	script int
	counts map[string]int // path → requests
}

// New returns a stand-in server.
func New(opt Options) *Server {
	if opt.RetryAfter == "" {
		opt.RetryAfter = "1"
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	return &Server{opt: opt, counts: map[string]int{}}
}

// Requests returns every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// ServeHTTP routes a request: a path ending in OpenAIPath or AnthropicPath
// goes to that provider's stand-in, any other path to the Export@1
// stand-in, whose mode is the last path element.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := readall.Read(io.LimitReader(r.Body, MaxRequestBytes+1), r.ContentLength)
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.got = append(s.got, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	s.counts[r.URL.Path]++
	n := s.counts[r.URL.Path]
	scripted := ""
	if s.script < len(s.opt.Script) && (strings.HasSuffix(r.URL.Path, OpenAIPath) || strings.HasSuffix(r.URL.Path, AnthropicPath)) {
		scripted = s.opt.Script[s.script]
		s.script++
	}
	s.mu.Unlock()

	var p provider
	var prefix string
	switch {
	case strings.HasSuffix(r.URL.Path, OpenAIPath):
		p, prefix = openAI{}, strings.TrimSuffix(r.URL.Path, OpenAIPath)
	case strings.HasSuffix(r.URL.Path, AnthropicPath):
		p, prefix = anthropic{}, strings.TrimSuffix(r.URL.Path, AnthropicPath)
	default:
		serveExport(w, r, body)
		return
	}
	mode := prefix[strings.LastIndexByte(prefix, '/')+1:]
	if mode == "" {
		mode = Honest
	}
	if scripted != "" {
		mode = scripted
	} else if base, limit, ok := counted(mode); ok {
		mode = Honest
		if n <= limit {
			mode = base
		}
	}
	s.serveProvider(w, r, p, mode, body)
}

// counted splits "rate-limited-2" into its mode and count.
func counted(mode string) (string, int, bool) {
	i := strings.LastIndexByte(mode, '-')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(mode[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return mode[:i], n, true
}

// apiError is a provider error: its status, type and message.
type apiError struct {
	status int
	typ    string
	code   string // OpenAI's code
	param  string // OpenAI's param
	msg    string
}

// provider is one API's rules: reading a request, and writing answers and
// errors in its shapes.
type provider interface {
	// check reads the request as the provider would and returns the model,
	// the user texts in order, or the error the provider answers with.
	check(h http.Header, body []byte) (model string, texts []string, e *apiError)
	writeError(w http.ResponseWriter, e *apiError, requestID string)
	answer(model, mode, requestID string, a Answer, created int64) (status int, body []byte)
	overloaded() *apiError
}

func (s *Server) serveProvider(w http.ResponseWriter, r *http.Request, p provider, mode string, body []byte) {
	reqID := newID()
	if r.Method != http.MethodPost {
		p.writeError(w, &apiError{status: http.StatusMethodNotAllowed, typ: "invalid_request_error", msg: "this endpoint accepts POST only"}, reqID)
		return
	}
	if len(body) > MaxRequestBytes {
		p.writeError(w, &apiError{status: http.StatusRequestEntityTooLarge, typ: "request_too_large", msg: "request body too large"}, reqID)
		return
	}
	if e := s.checkKey(p, r.Header); e != nil {
		p.writeError(w, e, reqID)
		return
	}
	switch mode {
	case RateLimited:
		w.Header().Set("Retry-After", s.opt.RetryAfter)
		p.writeError(w, &apiError{status: http.StatusTooManyRequests, typ: rateLimitType(p), code: "rate_limit_exceeded", msg: "rate limit reached for this stand-in; retry later"}, reqID)
		return
	case ServerError:
		p.writeError(w, &apiError{status: http.StatusInternalServerError, typ: serverErrorType(p), msg: "the stand-in failed while processing the request"}, reqID)
		return
	case Overloaded:
		w.Header().Set("Retry-After", s.opt.RetryAfter)
		p.writeError(w, p.overloaded(), reqID)
		return
	case Honest, Invent, Unmarked, Refusal, Truncated, NoToolUse:
	default:
		p.writeError(w, &apiError{status: http.StatusNotFound, typ: "not_found_error", msg: "unknown stand-in mode"}, reqID)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		p.writeError(w, &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", msg: "the request body must be JSON (Content-Type application/json)"}, reqID)
		return
	}
	model, texts, e := p.check(r.Header, body)
	if e != nil {
		p.writeError(w, e, reqID)
		return
	}
	ans := answerTexts(texts, mode)
	status, out := p.answer(model, mode, reqID, ans, s.opt.Now().Unix())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(out)
}

func (s *Server) checkKey(p provider, h http.Header) *apiError {
	var key string
	switch p.(type) {
	case openAI:
		auth := h.Get("Authorization")
		k, ok := strings.CutPrefix(auth, "Bearer ")
		if !ok || k == "" {
			return &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key", msg: "no API key was provided in an Authorization: Bearer header"}
		}
		key = k
	case anthropic:
		// The API key goes in x-api-key; the official Go SDK sends it as
		// a bearer token, which the API takes too.
		key = h.Get("X-Api-Key")
		if k, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); key == "" && ok {
			key = k
		}
		if key == "" {
			return &apiError{status: http.StatusUnauthorized, typ: "authentication_error", msg: "x-api-key header is required"}
		}
	}
	if s.opt.Credential != "" && key != s.opt.Credential {
		if _, ok := p.(openAI); ok {
			return &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error", code: "invalid_api_key", msg: "the API key provided is not valid"}
		}
		return &apiError{status: http.StatusUnauthorized, typ: "authentication_error", msg: "invalid x-api-key"}
	}
	return nil
}

func rateLimitType(p provider) string {
	if _, ok := p.(openAI); ok {
		return "requests"
	}
	return "rate_limit_error"
}

func serverErrorType(p provider) string {
	if _, ok := p.(openAI); ok {
		return "server_error"
	}
	return "api_error"
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// decodeObject decodes a JSON object into its members, keeping each value
// raw. Duplicate keys and trailing data are refused.
func decodeObject(b []byte) (map[string]json.RawMessage, bool) {
	m, _, ok := decodeObjectInto(b, "", nil)
	return m, ok
}

// decodeObjectInto is decodeObject, except that the value of the member
// named key, when there is one, is decoded straight into into and left out
// of the map (direct reports it): one pass over it instead of a raw copy
// decoded again. When it does not decode into into, ok is false as for a
// body that is not an object; the caller decodes the body again with
// decodeObject to tell.
func decodeObjectInto(b []byte, key string, into any) (m map[string]json.RawMessage, direct, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		return nil, false, false
	}
	m = map[string]json.RawMessage{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, direct, false
		}
		name, _ := k.(string)
		if _, dup := m[name]; dup || direct && name == key {
			return nil, direct, false
		}
		if into != nil && name == key {
			direct = true
			if err := dec.Decode(into); err != nil {
				return nil, direct, false
			}
			continue
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, direct, false
		}
		m[name] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, direct, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, direct, false
	}
	return m, direct, true
}

// unknownMember returns the first member of m not in known, sorted, or "".
func unknownMember(m map[string]json.RawMessage, known ...string) string {
	var extra []string
	for k := range m {
		if !slices.Contains(known, k) {
			extra = append(extra, k)
		}
	}
	slices.Sort(extra)
	if len(extra) > 0 {
		return extra[0]
	}
	return ""
}

func badRequest(format string, a ...any) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: "invalid_request_error", msg: fmt.Sprintf(format, a...)}
}

// positiveInt reports whether raw is a JSON integer ≥ 1.
func positiveInt(raw json.RawMessage) bool {
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n >= 1
}

// strictSchema reports whether a JSON Schema meets the strict
// structured-output rules: every object schema (type object, or with
// properties) has additionalProperties false and lists every property in
// required. It is the stand-in's own reading, written without the wire
// package's.
func strictSchema(v any) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if !strictSchema(e) {
				return false
			}
		}
	case map[string]any:
		props, hasProps := x["properties"].(map[string]any)
		if x["type"] == "object" || hasProps {
			if x["additionalProperties"] != false {
				return false
			}
			req, _ := x["required"].([]any)
			for name := range props {
				if !slices.Contains(req, any(name)) {
					return false
				}
			}
		}
		for _, k := range []string{"properties", "$defs", "definitions"} {
			if m, ok := x[k].(map[string]any); ok {
				for _, sub := range m {
					if !strictSchema(sub) {
						return false
					}
				}
			}
		}
		for _, k := range []string{"items", "anyOf", "allOf", "oneOf", "prefixItems", "not"} {
			if sub, ok := x[k]; ok && !strictSchema(sub) {
				return false
			}
		}
	}
	return true
}
