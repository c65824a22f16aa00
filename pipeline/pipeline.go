package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/route"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/verifier"
	"github.com/privacycut/privacycut/wire"
)

// PolicyRevision is the policy this build's seal authority enforces.
const PolicyRevision = censor.PolicyRevision

// Options configure a Pipeline.
type Options struct {
	// EvidenceKey keys the digests of source-derived material. Required.
	EvidenceKey *receipts.EvidenceKey
	// Verifier runs the independent verifier. nil: InProcess.
	Verifier Verifier
	// Vault is a connection to vaultd, required for reversible cuts (nil:
	// they are refused VAULT_PROFILE_NOT_PROVEN). The caller closes it.
	Vault *client.Client
	// VaultSocket is the path of Vault's socket. A verifier in its own
	// process dials it to ask the vault about a reversible cut's tokens;
	// without it the plugin is given the vault's grant reply instead.
	VaultSocket string
	// Journal records refusals, seals and admissions (nil: none).
	Journal *egress.Journal
	// Authority is the seal authority and egress gate. nil: a new one
	// journaling to Journal.
	Authority *egress.Authority
	// Buffer, when set, supplies the large buffers of a cut (the decoded
	// texts, the export): the cut's slices share them and the caller decides
	// how long they live (no longer than the Cut is used). nil: the heap.
	Buffer func(n int) []byte
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Command names the pipeline's steps in the journal (default
	// "pipeline").
	Command string
	// VerifyBudget bounds how long a verifier plugin may take to answer a
	// request of n input bytes (nil: DefaultVerifyBudget).
	VerifyBudget func(n int) time.Duration
	// Warn receives content-free warnings the pipeline cannot return (a
	// journal that could not be written, a lease that could not be
	// revoked). nil: dropped.
	Warn func(string)
}

// Pipeline prepares and sends cuts. It is safe for concurrent use when its
// Verifier and Vault are (InProcess and an client.Client are).
type Pipeline struct {
	opt      Options
	auth     *egress.Authority
	verifier Verifier
	stopping sync.WaitGroup // plugin sessions being closed

	// transport is the deliveries' transport when they verify the target
	// with the system's roots: a provider's connections are kept from one
	// Send to the next.
	transport     *http.Transport
	transportOnce sync.Once
}

// New returns a pipeline. Close it when done: it waits for the verifier
// plugins it stops in the background.
func New(opt Options) (*Pipeline, error) {
	if opt.EvidenceKey == nil {
		return nil, errors.New("pipeline: no evidence key")
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	p := &Pipeline{opt: opt, auth: opt.Authority, verifier: opt.Verifier}
	if p.auth == nil {
		p.auth = egress.NewAuthority(egress.Options{Journal: opt.Journal, PolicyRevision: PolicyRevision, Now: opt.Now})
	}
	if p.verifier == nil {
		p.verifier = InProcess()
	}
	return p, nil
}

// Close waits for the verifier plugins the pipeline is stopping, closes
// the provider connections it kept idle and makes the journal lines of its
// seals durable (egress.Authority.Sync).
func (p *Pipeline) Close() error {
	p.stopping.Wait()
	p.transportOnce.Do(func() {}) // none is made after Close
	if p.transport != nil {
		p.transport.CloseIdleConnections()
	}
	return p.auth.Sync()
}

// sharedTransport is the transport Send keeps connections in.
func (p *Pipeline) sharedTransport() *http.Transport {
	p.transportOnce.Do(func() { p.transport = egress.NewTransport(nil, nil) })
	return p.transport
}

// Authority returns the pipeline's seal authority.
func (p *Pipeline) Authority() *egress.Authority { return p.auth }

func (p *Pipeline) budget() func(int) time.Duration {
	if p.opt.VerifyBudget != nil {
		return p.opt.VerifyBudget
	}
	return DefaultVerifyBudget
}

// isInProcess reports whether the pipeline's verifier runs in this process.
func (p *Pipeline) isInProcess() bool {
	_, ok := p.verifier.(inProcess)
	return ok
}

func (p *Pipeline) command() string {
	if p.opt.Command != "" {
		return p.opt.Command
	}
	return "pipeline"
}

func (p *Pipeline) warn(msg string) {
	if p.opt.Warn != nil {
		p.opt.Warn(msg)
	}
}

// Input is one cut to prepare.
type Input struct {
	Vocabulary *Vocabulary
	Plan       *Plan
	// Projection is the Projection@1 document, the complete model input.
	// It is kept, not copied, until the cut is sealed: the caller must not
	// modify it meanwhile.
	Projection []byte
	// Load, when Projection is nil, reads the projection: Prepare calls it
	// once the verifier has begun, so that a plugin starts while the input
	// is read. Refusals (a file over its size limit) are reported as
	// Prepare's; an error is returned as it is.
	Load func() ([]byte, []receipts.Refusal, error)
	// Schema is the output schema document of a reversible cut (bound by
	// the plan's output_schema_digest); it is kept with the cut for Send.
	Schema []byte
	// Route, when set, is the approved route the plan must keep to: a plan
	// that departs from it in any field is refused before anything is cut.
	Route *route.Approved
	// Run and Attempt are bound into a reversible cut's lease and its
	// claim (default "run" and 1).
	Run     string
	Attempt uint32
}

// Cut is a prepared cut: the export, its evidence and, when it passed
// verification, its seal in the pipeline's authority.
type Cut struct {
	Plan         receipts.Plan
	PlanDigest   string
	Export       []byte // the canonical Export@1 (in an Options.Buffer buffer when one was given)
	ExportDigest string
	SourceDigest string
	LabelDigest  string
	Receipts     []receipts.TransformationReceipt
	Verification receipts.Verification
	Seal         receipts.PrivacyCut // zero when not sealed
	// Wire is the exact request of the plan's wire profile, nil for
	// export@1 (whose request is the export); WireDigest its sha256 (the
	// export digest for export@1).
	Wire         []byte
	WireDigest   string
	Lease        string    // the reversible cut's lease, "" otherwise
	LeaseExpires time.Time // the lease's absolute deadline
	Stats        Stats
	Timings      Timings // where Prepare's time went

	schema      []byte
	run         string
	attempt     uint32
	candidate   string
	verifierRev string
}

// Stats count what a cut disclosed.
type Stats struct {
	Parts, Records, PublicItems int
	OwnerSpans                  map[string]int // per category
	Values                      int            // distinct owner values
}

// Timings are the durations of Prepare's steps: the plan made from a route
// (PrepareRoute only; with the projection's decoding), reading, checking
// and cutting the projection (with the vault's grant for a reversible cut,
// and the wire body's rendering), the independent verification, and the
// seal (with the lease's binding).
type Timings struct {
	Plan, Cut, Verify, Seal time.Duration
}

// Sealed reports whether the cut passed verification and was sealed.
func (c *Cut) Sealed() bool { return c.Seal.EventID != "" }

// Body returns the bytes the cut is sent as: its wire body, or for export@1
// the export.
func (c *Cut) Body() []byte {
	if c.Wire != nil {
		return c.Wire
	}
	return c.Export
}

// Bundle returns the cut's CutBundle@1. For a wire profile other than
// export@1 it carries the wire body, its digest and the output schema it was
// rendered with, so that cut verify checks them too.
func (c *Cut) Bundle() receipts.Bundle {
	b := receipts.Bundle{Schema: receipts.SchemaBundle, Export: json.RawMessage(c.Export),
		ExportDigest: c.ExportDigest, Receipts: c.Receipts, Verification: c.Verification, LabelDigest: c.LabelDigest}
	if c.Wire != nil {
		b.Wire, b.WireDigest, b.OutputSchema = json.RawMessage(c.Wire), c.WireDigest, json.RawMessage(c.schema)
	}
	if c.Sealed() {
		b.Seal = &receipts.SealRef{EventID: c.Seal.EventID}
	}
	if c.Lease != "" {
		l := c.Lease
		b.Lease = &l
	}
	return b
}

// LeaseRef is what rehydrating a reversible cut's answer later needs:
// identifiers, digests and plan fields — public or keyed, never a value, a
// token map or a key. `cut` keeps one per lease in its local state.
type LeaseRef struct {
	Lease              string `json:"lease"`
	CutEvent           string `json:"cut_event"`
	Run                string `json:"run"`
	Attempt            uint32 `json:"attempt"`
	Station            string `json:"station"`
	Purpose            string `json:"purpose"`
	ExpiresAt          string `json:"expires_at"`
	Retention          string `json:"retention"`
	PolicyRevision     string `json:"policy_revision"`
	VerifierRevision   string `json:"verifier_revision"`
	LabelDigest        string `json:"label_digest"`
	OutputSchemaDigest string `json:"output_schema_digest"`
	ExportDigest       string `json:"export_digest"`
}

// LeaseRef returns the reference of a reversible, sealed cut's lease.
func (c *Cut) LeaseRef() LeaseRef {
	pl := &c.Plan
	return LeaseRef{Lease: c.Lease, CutEvent: c.Seal.EventID, Run: c.run, Attempt: c.attempt,
		Station: pl.Station, Purpose: pl.Purpose, ExpiresAt: pl.ExpiresAt, Retention: pl.Retention,
		PolicyRevision: pl.PolicyRevision, VerifierRevision: c.verifierRev, LabelDigest: c.LabelDigest,
		OutputSchemaDigest: pl.OutputSchemaDigest, ExportDigest: c.ExportDigest}
}

// Prepare cuts, verifies and seals in.Projection under in.Plan.
//
// A refusal by policy is a *RefusedError. A cut the verifier does not pass
// is returned with a *VerificationError: it is not sealed, and its lease
// (reversible) is revoked. Any other error is operational.
func (p *Pipeline) Prepare(ctx context.Context, in Input) (*Cut, error) {
	return p.prepare(ctx, in, nil, nil)
}

// prepare is Prepare of in.Projection decoded already as doc, when doc is
// not nil, whose binding (censor.Bind) the plan was made with, when b is
// not nil.
func (p *Pipeline) prepare(ctx context.Context, in Input, doc *grammar.Document, b *censor.Binding) (*Cut, error) {
	if in.Vocabulary == nil || in.Plan == nil {
		return nil, errors.New("pipeline: prepare needs a vocabulary and a plan")
	}
	if in.Run == "" {
		in.Run = "run"
	}
	if in.Attempt == 0 {
		in.Attempt = 1
	}
	if !lease.ValidID(in.Run) {
		return nil, fmt.Errorf("pipeline: run must be 1 to %d bytes of printable ASCII without spaces", lease.MaxIDLen)
	}
	if in.Route != nil {
		if err := p.CheckRoute(in.Plan, in.Route); err != nil {
			return nil, err
		}
	}
	// A schema is checked against the plan before anything is cut: an
	// answer that could not be rehydrated is not asked for. A wire profile
	// other than export@1 needs it to render the request.
	if in.Schema != nil {
		if err := p.checkPlanSchema(&in.Plan.fields, in.Schema); err != nil {
			return nil, err
		}
	}
	profile := in.Plan.fields.WireProfile()
	if err := wire.CheckPlan(&in.Plan.fields); err != nil {
		return nil, p.wireRefusal(err)
	}
	if profile != receipts.WireExport && in.Schema == nil {
		return nil, p.refuse(planRefusal(receipts.PlanMismatch), "output_schema",
			"the wire profile "+profile+" needs the plan's output schema", nil)
	}
	// The verifier plugin starts while the projection is parsed and cut.
	t0 := time.Now()
	vs, err := p.verifier.begin(ctx, p.budget())
	if err != nil {
		return nil, err
	}
	defer func() { p.closeLater(vs) }()

	if in.Projection == nil && in.Load != nil {
		data, refs, err := in.Load()
		if err != nil {
			return nil, err
		}
		if refs != nil {
			return nil, p.refuse(refs, "", "", nil)
		}
		in.Projection = data
	}
	if doc == nil {
		var refs []receipts.Refusal
		if doc, refs = grammar.LoadProjection(in.Projection, grammar.LoadOptions{Buffer: p.opt.Buffer}); refs != nil {
			return nil, p.refuse(refs, "", "", nil)
		}
	}
	plan := in.Plan.Fields()
	if err := censor.CheckExpiry(&plan, p.opt.Now()); err != nil {
		return nil, p.refusedCut(err)
	}
	var src censor.TokenSource
	var vault *vaultSource
	if plan.Mode == receipts.ModeReversible {
		if vault, err = p.reversibleSource(ctx, &plan, in); err != nil {
			return nil, err
		}
		src = vault
		// A lease granted for a cut that then fails is revoked.
		defer vault.revokeUnbound(ctx, p)
	}
	out, err := censor.Cut(ctx, censor.Input{Doc: doc, Vocabulary: in.Vocabulary.g, Plan: &plan, Key: p.opt.EvidenceKey,
		Tokens: src, Buffer: p.opt.Buffer, Binding: b})
	if err != nil {
		return nil, p.refusedCut(err)
	}
	rb, err := canon.Marshal(out.Receipts)
	if err != nil {
		return nil, err
	}
	// The exact request the cut is sent as; for export@1, the export.
	var body []byte
	if profile != receipts.WireExport {
		if body, err = wire.Render(out.Export, &plan, in.Schema); err != nil {
			return nil, p.wireRefusal(err)
		}
	}
	vreq := verifier.Request{Source: in.Projection, Export: out.Export, ExportDigest: out.ExportDigest,
		Plan: in.Plan.doc, Vocabulary: in.Vocabulary.doc, Receipts: rb, EvidenceKey: p.opt.EvidenceKey, Now: p.opt.Now(),
		Wire: body}
	if body != nil {
		vreq.OutputSchema = in.Schema
	}
	if vault != nil {
		// The verifier checks each slot's token with the vault that
		// issued it.
		p.issuerFor(&vreq, vault.lease, vault.tokens)
	}
	t1 := time.Now()
	verdict, err := vs.verify(ctx, vreq)
	if err != nil {
		return nil, err
	}
	// The plugin stops on another goroutine while the cut is sealed.
	p.closeLater(vs)
	vs = nil
	t2 := time.Now()
	cut := &Cut{
		Plan: plan, PlanDigest: out.PlanDigest, Export: out.Export, ExportDigest: out.ExportDigest,
		SourceDigest: out.SourceDigest, LabelDigest: out.LabelDigest, Receipts: out.Receipts,
		Verification: verdict.Verification(), schema: in.Schema, run: in.Run, attempt: in.Attempt,
		Wire: body, WireDigest: out.ExportDigest,
		candidate: out.CandidateDigest,
		Stats: Stats{Parts: len(doc.Parts), Records: out.Stats.Records, PublicItems: out.Stats.PublicItems,
			OwnerSpans: out.Stats.OwnerSpans(), Values: out.Pairs},
	}
	cut.verifierRev = cut.Verification.Verifier
	cut.Timings.Cut, cut.Timings.Verify = t1.Sub(t0), t2.Sub(t1)
	if !cut.Verification.Passed() {
		return cut, &VerificationError{Verification: cut.Verification}
	}
	if vault != nil {
		cut.Lease, cut.LeaseExpires = vault.lease, vault.deadline
	}
	cut.Seal, err = p.auth.Seal(egress.SealRequest{SourceDigest: out.SourceDigest, Export: out.Export, Wire: body, Plan: plan,
		Receipts: out.Receipts, Verification: verdict, Lease: cut.Lease})
	if err != nil {
		var ee *egress.Error
		if errors.As(err, &ee) {
			return nil, p.refuse(planRefusal(ee.Code), "", ee.Reason, ee)
		}
		return nil, err
	}
	// The seal hashed the wire body to check it against the verification.
	cut.WireDigest = cut.Seal.WireDigest
	// A reversible lease is bound to the sealed cut: only now can it be
	// claimed, and only for this export.
	if vault != nil {
		if err := vault.bind(ctx, p, cut); err != nil {
			return nil, err
		}
	}
	cut.Timings.Seal = time.Since(t2)
	return cut, nil
}

// closeLater closes a verifier session on another goroutine (a plugin
// stops while the cut is sealed); Close waits for it. A nil session was
// closed already.
func (p *Pipeline) closeLater(s session) {
	if s == nil {
		return
	}
	p.stopping.Go(s.close)
}

// refusedCut turns a censor refusal into a *RefusedError; other errors
// are a vault refusal (vaultRefusal) or operational.
func (p *Pipeline) refusedCut(err error) error {
	var re *censor.RefusedError
	if errors.As(err, &re) {
		return p.refuse(re.Refusals, re.Field, "", nil)
	}
	return p.vaultRefusal(err)
}
