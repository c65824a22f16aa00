package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/internal/readall"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// Handler returns the gateway's HTTP API: POST /v1/routes/{name}/cut,
// POST /v1/chat/completions, GET /healthz and GET /metrics. A request
// that did not come through the peer-checked unix listener (Listen) must
// carry the bearer token of listen.token_file; without one configured it
// is refused. GET /healthz needs neither.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/routes/{name}/cut", g.serveNative)
	mux.HandleFunc("POST /v1/chat/completions", g.serveChat)
	mux.HandleFunc("GET /metrics", g.serveMetrics)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, apiErr("not found", "invalid_request_error", "", "not_found"))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/healthz" {
			g.serveHealth(w, r)
			return
		}
		if !g.authenticated(r) {
			g.m.request(apiOf(r), "-", "UNAUTHENTICATED")
			w.Header().Set("WWW-Authenticate", `Bearer realm="privacycut-gateway"`)
			writeError(w, http.StatusUnauthorized, apiErr("a bearer token is required on this listener, and the one given is not the gateway's",
				"authentication_error", "", "invalid_api_key"))
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// authenticated: the request came through the unix listener (whose peers
// were checked at accept), or carries the bearer token, compared in
// constant time.
func (g *Gateway) authenticated(r *http.Request) bool {
	if via(r.Context()) == viaUnix {
		return true
	}
	if !g.hasTok {
		return false
	}
	h := r.Header.Get("Authorization")
	const prefix = "Bearer "
	if len(h) < len(prefix) || !strings.EqualFold(h[:len(prefix)], prefix) {
		return false
	}
	return g.tok.equal([]byte(h[len(prefix):]))
}

func apiOf(r *http.Request) string {
	switch {
	case r.URL.Path == "/v1/chat/completions":
		return "openai"
	case strings.HasPrefix(r.URL.Path, "/v1/routes/"):
		return "native"
	}
	return "other"
}

func (g *Gateway) serveHealth(w http.ResponseWriter, _ *http.Request) {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	status, state := http.StatusOK, "ok"
	if closed {
		status, state = http.StatusServiceUnavailable, "stopping"
	}
	body, _ := canon.Marshal(map[string]any{"status": state, "routes": len(g.names)})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

func (g *Gateway) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	g.m.write(w)
	seals, denied := g.p.Authority().Live()
	fmt.Fprintf(w, "# HELP privacycut_gateway_live_seals Seals the gateway's authority holds (each request's, until it ends).\n"+
		"# TYPE privacycut_gateway_live_seals gauge\nprivacycut_gateway_live_seals %d\n", seals)
	fmt.Fprintf(w, "# HELP privacycut_gateway_local_only Digests of rehydrated results the gate refuses, until their purge time.\n"+
		"# TYPE privacycut_gateway_local_only gauge\nprivacycut_gateway_local_only %d\n", denied)
}

// admit takes a place among the requests in flight, or says why not.
func (g *Gateway) admit() (*flight, func(), error) {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return nil, nil, errStopping
	}
	select {
	case g.sem <- struct{}{}:
	default:
		return nil, nil, errBusy
	}
	f := g.begin()
	g.m.inFlight.Add(1)
	return f, func() {
		g.end(f)
		g.m.inFlight.Add(-1)
		<-g.sem
	}, nil
}

// readBody reads a request body of at most the configured limit. A body
// over it is refused LIMIT_EXCEEDED (part -1, as a projection file over
// its limit is), journaled.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			return nil, errContentType
		}
	}
	limit := g.cfg.maxRequestBytes()
	body, err := readall.Read(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return nil, g.p.Refuse([]receipts.Refusal{{Code: receipts.LimitExceeded, Part: -1, Line: 1, Column: 1}})
	}
	if err != nil {
		return nil, errReadBody
	}
	return body, nil
}

var (
	errContentType = errors.New("gateway: the body must be application/json")
	errReadBody    = errors.New("gateway: the request body could not be read")
)

// apiError is an OpenAI-style error object, the answer to every request
// that is not served (both APIs; the native API answers a refusal with its
// refusal document instead). Nothing of the request is echoed: message is
// fixed text with codes and positions, param a member path of the
// request's schema.
type apiError struct {
	Error      errorBody `json:"error"`
	Privacycut any       `json:"privacycut,omitempty"`
}

type errorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func apiErr(message, typ, param, code string) apiError {
	e := apiError{Error: errorBody{Message: message, Type: typ}}
	if param != "" {
		e.Error.Param = &param
	}
	if code != "" {
		e.Error.Code = &code
	}
	return e
}

func writeError(w http.ResponseWriter, status int, e apiError) {
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := canon.Marshal(v)
	writeBody(w, status, body, err)
}

// encodeResult is canon.Marshal of r, without parsing its answer again: the
// answer is canonical JSON already (the provider's, canonicalized, or the
// vault's rehydration, which is canonical), and "answer" sorts first of
// the members, so it is written in front of the others as it is.
func encodeResult(r *Result) ([]byte, error) {
	answer := r.Answer
	rest := *r
	rest.Answer = nil
	body, err := canon.Marshal(&rest)
	if err != nil || answer == nil {
		return body, err
	}
	out := make([]byte, 0, len(`{"answer":,`)+len(answer)+len(body))
	out = append(append(append(out, `{"answer":`...), answer...), ',')
	return append(out, body[1:]...), nil
}

// writeBody writes an encoded JSON answer, or when err is set a generic
// internal error instead.
func writeBody(w http.ResponseWriter, status int, body []byte, err error) {
	if err != nil {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"code":"internal","message":"the answer could not be encoded","param":null,"type":"server_error"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusUnprocessableEntity || status == http.StatusBadGateway {
		// A refusal is final, and an UPSTREAM_FAILED request was
		// disclosed: a retry is a new disclosure, which the official
		// clients then do not make on their own.
		w.Header().Set("X-Should-Retry", "false")
	}
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// Disclosed is what the gateway says of a request whose bytes were
// admitted when it then fails: upstream (UPSTREAM_FAILED) or in the
// rehydration. The request was disclosed; the lease's state says whether
// its values can still be restored (never: a failed reversible request's
// lease is revoked).
type Disclosed struct {
	receipts.RefusalDocument
	Disclosed  bool                      `json:"disclosed"`
	Decisions  []receipts.EgressDecision `json:"decisions"`
	Status     int                       `json:"status"`
	Lease      *string                   `json:"lease"`
	LeaseState string                    `json:"lease_state,omitempty"`
}

// outcome is how one request ended, for both APIs: the HTTP status, the
// metrics code, and the body parts each API renders its own way.
type outcome struct {
	status       int
	code         string // a refusal code, OK, or a fixed upper-case word
	refusal      *pipeline.RefusedError
	disclosed    *Disclosed // bytes left: UPSTREAM_FAILED or a refused rehydration
	verification *receipts.Verification
	message      string // fixed text
	errType      string // OpenAI error type
	err          error  // an operational error, logged (errors are content-free)
}

// classify maps a disclosure's error to its outcome.
func (g *Gateway) classify(ctx context.Context, d *disclosure, err error) outcome {
	var re *pipeline.RefusedError
	var ve *pipeline.VerificationError
	var ue *upstreamError
	var pue *pipeline.UpstreamError
	delivered := d != nil && d.sent != nil && d.sent.Delivered()
	switch {
	case errors.As(err, &re) && delivered:
		return outcome{status: http.StatusUnprocessableEntity, code: codeOf(re), refusal: re,
			disclosed: g.disclosed(d, re.Document),
			message:   "the request was disclosed, then its answer was refused: " + re.Error(), errType: "privacycut_refusal"}
	case errors.As(err, &re):
		status := http.StatusUnprocessableEntity
		return outcome{status: status, code: codeOf(re), refusal: re, message: re.Error(), errType: "privacycut_refusal"}
	case errors.As(err, &ve):
		v := ve.Verification
		return outcome{status: http.StatusUnprocessableEntity, code: "VERIFICATION_FAILED", verification: &v,
			message: ve.Error(), errType: "privacycut_verification_failed"}
	case errors.As(err, &pue):
		doc := g.p.Refuse([]receipts.Refusal{{Code: receipts.UpstreamFailed, Part: -1, Kind: "return"}}).Document
		return outcome{status: http.StatusBadGateway, code: string(receipts.UpstreamFailed),
			disclosed: g.disclosed(d, doc), message: "upstream failed: " + pue.Reason, errType: "privacycut_upstream_failed"}
	case errors.As(err, &ue):
		doc := g.p.Refuse([]receipts.Refusal{{Code: receipts.UpstreamFailed, Part: -1, Kind: "return"}}).Document
		return outcome{status: http.StatusBadGateway, code: string(receipts.UpstreamFailed),
			disclosed: g.disclosed(d, doc), message: ue.Error(), errType: "privacycut_upstream_failed"}
	case errors.Is(err, errPlansExhausted):
		re := g.p.Refuse([]receipts.Refusal{{Code: receipts.LimitExceeded, Part: -1, Kind: "plan"}})
		return outcome{status: http.StatusTooManyRequests, code: string(receipts.LimitExceeded), refusal: re,
			message: "too many requests of this projection in flight: " + errPlansExhausted.Error(), errType: "privacycut_refusal"}
	case errors.Is(err, errBusy):
		return outcome{status: http.StatusServiceUnavailable, code: "BUSY", message: errBusy.Error(), errType: "server_busy"}
	case errors.Is(err, errStopping):
		return outcome{status: http.StatusServiceUnavailable, code: "STOPPING", message: errStopping.Error(), errType: "server_busy"}
	case errors.Is(err, errContentType):
		return outcome{status: http.StatusUnsupportedMediaType, code: "CONTENT_TYPE", message: errContentType.Error(), errType: "invalid_request_error"}
	case errors.Is(err, errReadBody):
		return outcome{status: http.StatusBadRequest, code: "READ_FAILED", message: errReadBody.Error(), errType: "invalid_request_error"}
	case errors.Is(err, vaultapi.ErrUnavailable):
		return outcome{status: http.StatusServiceUnavailable, code: "VAULT_UNAVAILABLE", message: "the vault is not reachable", errType: "server_error"}
	case errors.Is(err, pipeline.ErrPoolClosed) || ctx.Err() != nil:
		return outcome{status: http.StatusServiceUnavailable, code: "CANCELED", message: "the request was canceled", errType: "server_error"}
	}
	return outcome{status: http.StatusInternalServerError, code: "INTERNAL", message: "the request failed inside the gateway", errType: "server_error", err: err}
}

func codeOf(re *pipeline.RefusedError) string {
	if len(re.Document.Reasons) == 0 {
		return "REFUSED"
	}
	return string(re.Document.Reasons[0].Code)
}

func (g *Gateway) disclosed(d *disclosure, doc receipts.RefusalDocument) *Disclosed {
	out := &Disclosed{RefusalDocument: doc, Disclosed: d.sent.Delivered(), Decisions: d.sent.Decisions,
		Status: d.sent.Status, LeaseState: d.sent.LeaseState}
	if out.Decisions == nil {
		out.Decisions = []receipts.EgressDecision{}
	}
	if d.sent.Lease != "" {
		l := d.sent.Lease
		out.Lease = &l
	}
	return out
}

// logRequest writes one line per request: API, route, outcome code and
// status, event ids, and durations. Never a value.
func (g *Gateway) logRequest(api, route string, o outcome, d *disclosure, took time.Duration) {
	attrs := []any{"api", api, "route", route, "code", o.code, "status", o.status, "ms", took.Milliseconds()}
	if d != nil && d.cut != nil && d.cut.Sealed() {
		attrs = append(attrs, "seal", d.cut.Seal.EventID)
	}
	if d != nil && d.sent != nil {
		var ids []string
		for _, dec := range d.sent.Decisions {
			ids = append(ids, dec.EventID)
		}
		attrs = append(attrs, "decisions", ids)
		if d.sent.Lease != "" {
			attrs = append(attrs, "lease", d.sent.Lease, "lease_state", d.sent.LeaseState)
		}
	}
	if o.refusal != nil {
		attrs = append(attrs, "event_id", o.refusal.Document.EventID)
	} else if o.disclosed != nil {
		attrs = append(attrs, "event_id", o.disclosed.EventID)
	}
	if o.err != nil {
		attrs = append(attrs, "error", o.err.Error())
	}
	level := slog.LevelInfo
	if o.status >= 500 {
		level = slog.LevelWarn
	}
	g.log.Log(context.Background(), level, "request", attrs...)
	g.m.request(api, route, o.code)
}
