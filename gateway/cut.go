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
	cut, err := g.p.PrepareRoute(ctx, pipeline.RouteInput{Vocabulary: rt.vocab, Route: rt.approved,
		Projection: projection, Lifetime: lifetime, Expiry: g.plans.pick(rt.name), Schema: rt.schema,
		Run: receipts.RandomID("gw-", 10), Attempt: 1})
	if cut != nil {
		d.cut = cut
		g.m.observe(rt.name, stagePrepare, cut.Timings.Plan+cut.Timings.Cut)
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
	// The seal serves this request only: once it is over, nothing more is
	// admitted under it, and the gateway's authority forgets it.
	defer g.p.Authority().Release(cut.Seal.EventID)
	// The provider's answer, redeliveries included, is awaited at most
	// the route's remote deadline (reversible), and never past the plan's
	// expiry; the rehydration that follows is not bounded by it.
	expires, _ := time.Parse(time.RFC3339, cut.Plan.ExpiresAt)
	budget := time.Until(expires)
	if rt.reversible {
		budget = min(budget, time.Duration(r.RemoteDeadlineS)*time.Second)
	}
	budget = max(budget, time.Millisecond)
	sctx, cancel := context.WithTimeout(ctx, budget)
	t1 := time.Now()
	sent, err := g.p.Send(sctx, cut, pipeline.SendOptions{CredentialFile: rt.credential, Timeout: budget})
	cancel()
	d.sent = sent
	if sent != nil {
		n := 0
		for _, dec := range sent.Decisions {
			if dec.Admit {
				n++
			}
		}
		g.m.admitted(rt.name, n)
		g.m.observe(rt.name, stageSend, time.Since(t1))
	}
	if err != nil {
		// The pipeline revoked a reversible cut's lease that got no answer.
		return d, err
	}
	if rt.reversible {
		return d, g.rehydrate(ctx, d)
	}
	// An irreversible answer is returned as the profile read it, once it
	// reads as strict JSON (its canonical form; the profile's reading
	// writes it, but for export@1).
	c := sent.AnswerCanonical
	if c == nil {
		var err error
		if c, err = canon.Canonicalize(sent.Answer); err != nil {
			return d, &upstreamError{reason: "the answer is not JSON", status: sent.Status}
		}
	}
	d.answer = c
	return d, nil
}

// rehydrate has the vault rehydrate a reversible answer, on the request's
// context rather than the delivery's deadline. A refused or failed
// rehydration revokes the lease, as Send would: the answer it holds is
// never restored.
func (g *Gateway) rehydrate(ctx context.Context, d *disclosure) error {
	t := time.Now()
	r, err := g.p.Rehydrate(ctx, d.cut.LeaseRef(), d.route.schema, d.sent.Answer)
	g.m.observe(d.route.name, stageRehydrate, time.Since(t))
	if err != nil {
		if l, rerr := g.vault.Revoke(context.WithoutCancel(ctx), d.cut.Lease); rerr == nil {
			d.sent.LeaseState = l.State.String()
		} else if info, serr := g.vault.Show(context.WithoutCancel(ctx), d.cut.Lease); serr == nil {
			d.sent.LeaseState = info.Lease.State.String()
		} else {
			d.sent.LeaseState = ""
		}
		return err
	}
	d.rehydrated, d.answer = r, r.Result
	d.sent.Rehydrated, d.sent.LeaseState = r, r.State
	return nil
}
