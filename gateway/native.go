package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

// SchemaResult is the schema name of the native API's answer.
const SchemaResult = "GatewayResult@1"

// Result is a GatewayResult@1: what one request disclosed and got back.
type Result struct {
	Schema string `json:"schema"`
	Route  string `json:"route"`
	// Answer is the answer: rehydrated inside the vault for a reversible
	// route (the one output that holds owner values), as received (strict
	// JSON, in canonical form) for an irreversible one. The front door's
	// privacycut member leaves it out: its content carries it.
	Answer json.RawMessage `json:"answer,omitempty"`
	// Decisions are every EgressDecision@1 of the request, in order (a
	// redelivery is one more).
	Decisions    []receipts.EgressDecision        `json:"decisions"`
	Verification receipts.Verification            `json:"verification"`
	Receipts     []receipts.TransformationReceipt `json:"receipts"`
	Rehydration  *receipts.RehydrationReceipt     `json:"rehydration"`
	// Seal is the seal's event id; ExportDigest the sealed export's
	// digest and BodyDigest that of the bytes sent.
	Seal         string `json:"seal"`
	ExportDigest string `json:"export_digest"`
	BodyDigest   string `json:"body_digest"`
	// Lease is the reversible cut's lease and LeaseState its state after
	// the request (CONSUMED), null and absent for an irreversible route.
	Lease      *string `json:"lease"`
	LeaseState string  `json:"lease_state,omitempty"`
}

func (d *disclosure) result() *Result {
	c, s := d.cut, d.sent
	r := &Result{Schema: SchemaResult, Route: d.route.name, Answer: d.answer, Decisions: s.Decisions,
		Verification: c.Verification, Receipts: c.Receipts, Seal: c.Seal.EventID, ExportDigest: c.ExportDigest,
		BodyDigest: s.BodyDigest, LeaseState: s.LeaseState}
	if r.Decisions == nil {
		r.Decisions = []receipts.EgressDecision{}
	}
	if c.Lease != "" {
		l := c.Lease
		r.Lease = &l
	}
	if d.rehydrated != nil {
		rc := d.rehydrated.Receipt
		r.Rehydration = &rc
	}
	return r
}

// serveNative is POST /v1/routes/{name}/cut: the body is a Projection@1,
// the answer a GatewayResult@1 (200); a refusal is its refusal document
// (422); an unusable provider answer UPSTREAM_FAILED (502) and a refused
// rehydration (422), both saying that the request was disclosed and the
// lease's state.
func (g *Gateway) serveNative(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now()
	rt := g.routes[r.PathValue("name")]
	if rt == nil {
		g.m.request("native", "-", "NOT_FOUND")
		writeError(w, http.StatusNotFound, apiErr("no route of that name", "invalid_request_error", "name", "route_not_found"))
		return
	}
	f, done, err := g.admit()
	if err != nil {
		o := g.classify(r.Context(), nil, err)
		g.logRequest("native", rt.name, o, nil, time.Since(t0))
		g.writeNativeError(w, o)
		return
	}
	defer done()
	ctx, cancel := g.requestContext(r)
	defer cancel()
	body, err := g.readBody(w, r)
	var d *disclosure
	if err == nil {
		d, err = g.disclose(ctx, rt, body, f)
	}
	if err != nil {
		o := g.classify(ctx, d, err)
		g.logRequest("native", rt.name, o, d, time.Since(t0))
		g.writeNativeError(w, o)
		return
	}
	g.logRequest("native", rt.name, outcome{status: http.StatusOK, code: "OK"}, d, time.Since(t0))
	out, err := encodeResult(d.result())
	writeBody(w, http.StatusOK, out, err)
}

func (g *Gateway) writeNativeError(w http.ResponseWriter, o outcome) {
	switch {
	case o.disclosed != nil:
		writeJSON(w, o.status, o.disclosed)
	case o.refusal != nil:
		writeJSON(w, o.status, o.refusal.Document)
	default:
		e := apiErr(o.message, o.errType, "", o.code)
		if o.verification != nil {
			e.Privacycut = map[string]any{"verification": o.verification}
		}
		writeError(w, o.status, e)
	}
}
