package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
)

// disclosure is what one request did: filled in as far as it got.
type disclosure struct {
	route      *routeState
	cut        *pipeline.Cut
	sent       *pipeline.Sent
	answer     json.RawMessage // canonical: the rehydrated result, or the answer as received
	rehydrated *pipeline.Rehydrated
}

// Errors of a disclosure that are not the pipeline's.
var (
	// errBusy: max_in_flight requests are being served.
	errBusy = errors.New("gateway: too many requests in flight")
	// errStopping: the gateway is shutting down.
	errStopping = errors.New("gateway: shutting down")
)

// upstreamError is an answer the gateway cannot use: no answer, an error
// status, an answer that is not JSON. The request's bytes were admitted
// and may have been delivered (Sent says).
type upstreamError struct {
	reason string // fixed words
	status int    // the provider's HTTP status, 0 if none
	err    error  // the transport's error, content-free
}

func (e *upstreamError) Error() string {
	s := "gateway: upstream failed: " + e.reason
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	return s
}

func (e *upstreamError) Unwrap() error { return e.err }

// disclose makes one request's disclosure: a plan of its own from the
// route for this projection (its manifest, an expiry within the route's
// max_lifetime_s and the request timeout), prepared under the route (cut,
// verified, sealed), sent, and for a reversible route rehydrated. A
// request never shares a plan, seal or lease with another.
func (g *Gateway) disclose(ctx context.Context, rt *routeState, projection []byte, f *flight) (*disclosure, error) {
	d := &disclosure{route: rt}
	r := rt.approved.Route
	lifetime := min(time.Duration(r.MaxLifetimeS)*time.Second, g.cfg.requestTimeout())
	t0 := time.Now()
	plan, err := g.p.MakeRoutePlanAt(rt.vocab, projection, rt.approved, lifetime, rt.schema, g.plans.pick(rt.name))
	if err != nil {
		return d, err
	}
	tPlan := time.Since(t0)
	in := pipeline.Input{Vocabulary: rt.vocab, Plan: plan, Projection: projection, Route: rt.approved,
		Run: receipts.RandomID("gw-", 10), Attempt: 1}
	if rt.reversible {
		in.Schema = rt.schema
	}
	cut, err := g.p.Prepare(ctx, in)
	if cut != nil {
		d.cut = cut
		g.m.observe(rt.name, stagePrepare, tPlan+cut.Timings.Cut)
		g.m.observe(rt.name, stageVerify, cut.Timings.Verify)
		if cut.Sealed() {
			g.m.observe(rt.name, stageSeal, cut.Timings.Seal)
		}
	}
	if err != nil {
		return d, err
	}
	if cut.Lease != "" {
		f.setLease(cut.Lease)
	}
	// The provider's answer is awaited at most the route's remote
	// deadline (reversible), and never past the plan's expiry.
	expires, _ := time.Parse(time.RFC3339, cut.Plan.ExpiresAt)
	timeout := time.Until(expires)
	if rt.reversible {
		timeout = min(timeout, time.Duration(r.RemoteDeadlineS)*time.Second)
	}
	if timeout <= 0 {
		timeout = time.Millisecond
	}
	t1 := time.Now()
	sent, err := g.p.Send(ctx, cut, pipeline.SendOptions{Timeout: timeout, Rehydrate: rt.reversible, Client: g.opt.Client})
	d.sent = sent
	if sent != nil {
		n := 0
		for _, dec := range sent.Decisions {
			if dec.Admit {
				n++
			}
		}
		g.m.admitted(rt.name, n)
		g.m.observe(rt.name, stageSend, time.Since(t1)-sent.RehydrateTime)
		if sent.RehydrateTime > 0 {
			g.m.observe(rt.name, stageRehydrate, sent.RehydrateTime)
		}
	}
	if err != nil {
		var re *pipeline.RefusedError
		if errors.As(err, &re) {
			return d, err
		}
		if sent == nil || !sent.Delivered() {
			return d, err
		}
		ue := &upstreamError{reason: "no usable answer", status: sent.Status, err: err}
		switch {
		case sent.Status == 0:
			ue.reason, ue.err = "no answer", contentFree(ctx, err)
		case sent.Status/100 != 2:
			ue.reason, ue.err = "error status", nil
		}
		return d, ue
	}
	if sent.Rehydrated != nil {
		d.rehydrated = sent.Rehydrated
		d.answer = sent.Rehydrated.Result
		return d, nil
	}
	// An irreversible answer is returned as received, once it reads as
	// strict JSON (its canonical form).
	c, err := canon.Canonicalize(sent.Answer)
	if err != nil {
		return d, &upstreamError{reason: "the answer is not JSON", status: sent.Status}
	}
	d.answer = c
	return d, nil
}

// contentFree replaces a transport error, whose text may name the target's
// address, by a fixed one.
func contentFree(ctx context.Context, err error) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		return context.Canceled
	}
	return errors.New("connection failed")
}
