package pipeline_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/route"
)

// approvedRoute signs and opens a route of the bundled example's
// vocabulary and schema to the wire env's stand-in.
func approvedRoute(t *testing.T, e *wireEnv, mode string) *route.Approved {
	t.Helper()
	s, err := rehydrate.ParseSchema(examples.Schema)
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]any{"schema": "DisclosureRoute@1", "name": "triage", "consumer": map[string]any{"kind": "model", "id": "triage"},
		"purpose": "dependency-triage", "target": e.url + "/v1/chat/completions", "mode": mode,
		"categories":        map[string]any{"allowed": []string{"module", "package", "function", "file", "team", "person", "host"}, "prohibited": []string{"credential"}},
		"vocabulary_digest": e.vocab.Digest(), "output_schema_digest": s.Digest(), "max_uses": 2, "max_lifetime_s": 3600,
		"threat_model": "remote-model-honest-but-curious", "retention": "no-retention", "max_parents": 64,
		"wire": map[string]any{"profile": receipts.WireOpenAIChat, "model": "m", "instruction": string(examples.Instruction), "max_output_tokens": 2048}}
	if mode == receipts.ModeReversible {
		doc["remote_deadline_s"], doc["return_window_s"], doc["station"] = 60, 3600, "local"
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	k, err := route.GenerateKey(rand.Reader, "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	note, err := route.Approve(k, b)
	if err != nil {
		t.Fatal(err)
	}
	trust, err := route.NewTrust(k.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	a, err := route.Open(note, trust)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestPrepareRoute: PrepareRoute seals the cut MakeRoutePlanAt and Prepare
// make of the same projection; a projection the grammar refuses is refused
// by the censor with the same refusals as MakeRoutePlanAt's own check
// gives, and on a reversible route before any lease is granted.
func TestPrepareRoute(t *testing.T) {
	e := newWireEnv(t)
	ctx := context.Background()
	// Each plan an expiry of its own: the authority seals a plan once.
	var n time.Duration
	at := func(string, time.Time, time.Time) (time.Time, error) {
		n++
		return time.Now().Add(10*time.Minute + n*time.Second).Truncate(time.Second), nil
	}
	// Text outside the grammar, in the first part's text.
	bad := bytes.Replace(examples.Projection, []byte(`"text": "`), []byte(`"text": "no such words here\n`), 1)
	if bytes.Equal(bad, examples.Projection) {
		t.Fatal("the example projection has no text to spoil")
	}
	for _, mode := range []string{receipts.ModeIrreversible, receipts.ModeReversible} {
		t.Run(mode, func(t *testing.T) {
			a := approvedRoute(t, e, mode)
			in := pipeline.RouteInput{Vocabulary: e.vocab, Route: a, Projection: examples.Projection, Expiry: at,
				Schema: examples.Schema, Run: "run-route"}
			cut, err := e.p.PrepareRoute(ctx, in)
			if err != nil {
				t.Fatalf("PrepareRoute: %v", err)
			}
			if !cut.Sealed() || cut.Timings.Plan <= 0 {
				t.Fatalf("sealed %v, plan timing %v", cut.Sealed(), cut.Timings.Plan)
			}
			plan, err := e.p.MakeRoutePlanAt(e.vocab, examples.Projection, a, 0, examples.Schema, at)
			if err != nil {
				t.Fatal(err)
			}
			two, err := e.p.Prepare(ctx, pipeline.Input{Vocabulary: e.vocab, Plan: plan, Projection: examples.Projection,
				Route: a, Schema: examples.Schema, Run: "run-route"})
			if err != nil {
				t.Fatalf("MakeRoutePlanAt and Prepare: %v", err)
			}
			if mode == receipts.ModeIrreversible && (cut.ExportDigest != two.ExportDigest || !bytes.Equal(cut.Wire, two.Wire)) {
				t.Error("PrepareRoute's export or wire body differs from the two steps'")
			}
			if cut.Plan.RouteDigest != a.Digest || cut.Plan.ManifestDigest != two.Plan.ManifestDigest {
				t.Error("PrepareRoute's plan is not the route's for this projection")
			}

			_, perr := e.p.MakeRoutePlanAt(e.vocab, bad, a, 0, examples.Schema, at)
			leases := leaseCount(t, e)
			_, rerr := e.p.PrepareRoute(ctx, pipeline.RouteInput{Vocabulary: e.vocab, Route: a, Projection: bad, Expiry: at,
				Schema: examples.Schema})
			var pr, rr *pipeline.RefusedError
			if !errors.As(perr, &pr) || !errors.As(rerr, &rr) {
				t.Fatalf("refusals: plan %v, PrepareRoute %v", perr, rerr)
			}
			if d := cmp.Diff(pr.Document.Reasons, rr.Document.Reasons); d != "" || len(rr.Document.Reasons) == 0 {
				t.Errorf("PrepareRoute refuses otherwise than the plan (-plan +PrepareRoute):\n%s", d)
			}
			if mode == receipts.ModeReversible && leaseCount(t, e) != leases {
				t.Error("a lease was granted for a projection the grammar refuses")
			}
		})
	}
}

// leaseCount is the number of leases the env's vault holds, in any state.
func leaseCount(t *testing.T, e *wireEnv) int {
	t.Helper()
	st, err := e.vc.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, k := range st.Leases {
		n += k
	}
	return n
}
