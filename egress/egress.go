package egress

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
)

// Reasons of an admission refusal: the fixed words of EgressDecision@1's
// reason field.
const (
	ReasonNoSeal        = "no-seal"        // no seal with that event id in this authority
	ReasonTarget        = "target"         // target differs from the plan's, byte for byte
	ReasonConsumer      = "consumer"       // consumer differs from the plan's
	ReasonBody          = "body"           // sha256(body) differs from the sealed wire digest
	ReasonExpired       = "expired"        // the plan's expires_at has passed
	ReasonUsesExhausted = "uses-exhausted" // max_uses admissions already made
	ReasonLocalOnly     = "local-only"     // the bytes were registered with DenyLocal
)

// Reasons of a seal refusal. A seal refusal may also carry ReasonTarget,
// ReasonConsumer (the plan names none), ReasonExpired (the plan has expired)
// and ReasonLocalOnly (the export was registered with DenyLocal).
const (
	ReasonSchema           = "schema"            // a schema name is not the expected one
	ReasonVerdict          = "verdict"           // verdict not pass, a claim failed or is missing
	ReasonMode             = "mode"              // plan and verification modes differ or are unknown
	ReasonLease            = "lease"             // a lease without reversible mode, or reversible without lease
	ReasonPolicyRevision   = "policy-revision"   // the plan's policy revision is not the authority's
	ReasonExpiry           = "expiry"            // the plan's expires_at is not RFC 3339
	ReasonMaxUses          = "max-uses"          // max_uses < 1
	ReasonExportDigest     = "export-digest"     // verification's export digest is not sha256(export)
	ReasonSourceDigest     = "source-digest"     // source digest missing, not keyed, or not the verification's
	ReasonRestrictedRef    = "restricted-ref"    // the plan's restricted_ref is not the source digest
	ReasonPlanDigest       = "plan-digest"       // verification or a receipt binds another plan
	ReasonVocabularyDigest = "vocabulary-digest" // verification or a receipt binds another vocabulary
	ReasonReceiptChain     = "receipt-chain"     // receipts missing, out of order, or not linked
	ReasonTerminal         = "terminal"          // the last receipt is not terminal or binds another export
	ReasonReceiptsDigest   = "receipts-digest"   // the terminal receipt's digest is not the verification's
	ReasonSealed           = "sealed"            // this plan and export are already sealed here
	ReasonWireProfile      = "wire-profile"      // the plan's wire profile is not one this build sends
	ReasonWireDigest       = "wire-digest"       // the wire body is missing, or its digest is not the verification's
)

// Error is a refusal by the authority. It carries a refusal code, a fixed
// reason word and the refusal's own event id (as journaled); never input
// bytes.
type Error struct {
	Op      string        // "seal" or "admit"
	Code    receipts.Code // PLAN_MISMATCH or LIMIT_EXCEEDED
	Reason  string        // one of the Reason constants
	EventID string        // the event id of the refusal
}

func (e *Error) Error() string {
	return "egress: " + e.Op + " refused: " + string(e.Code) + ": " + e.Reason
}

// Options configure an Authority.
type Options struct {
	Journal        *Journal         // nil: no journal
	Now            func() time.Time // nil: time.Now
	PolicyRevision string           // the policy revision seals must match; "" matches nothing
}

// SealRequest is what a seal is asked for: the verified cut. Its
// verification is a verifier.Verdict, which only the verifier makes (in
// process or from its plugin's answer): a CutVerification@1 assembled by
// hand cannot be sealed.
type SealRequest struct {
	SourceDigest string // hmac-sha256:… of the source projection
	Export       []byte // the exact export bytes
	// Wire is the exact wire body the cut is sent as (wire.Render). For
	// export@1 it is the export: nil stands for it.
	Wire         []byte
	Plan         receipts.Plan
	Receipts     []receipts.TransformationReceipt
	Verification verifier.Verdict
	Lease        string // "" for irreversible cuts
}

// sealInput is a SealRequest with its verification unwrapped: what the
// checks read.
type sealInput struct {
	SourceDigest string
	Export       []byte
	Wire         []byte
	Plan         receipts.Plan
	Receipts     []receipts.TransformationReceipt
	Verification receipts.Verification
	Lease        string
}

// Authority is an in-memory seal authority and egress gate. Its seals exist
// only in this value: a new Authority (a restarted process) knows none. It
// is safe for concurrent use.
type Authority struct {
	journal *Journal
	now     func() time.Time
	policy  string

	mu      sync.Mutex
	seals   map[string]*seal      // seal event id → seal
	uses    map[string]*planUses  // plan digest → admissions, when there is no journal
	sealed  map[sealKey]time.Time // (plan, export) → the plan's expiry, including reservations
	denied  map[string]time.Time  // local-only digest → until when (zero: for the authority's life)
	pruneAt time.Time             // when prune next looks for what has expired
}

// planUses counts a plan's admissions until the plan expires.
type planUses struct {
	n      int
	expiry time.Time
}

// pruneEvery is how often, at most, the authority drops what can no longer
// be admitted: seals and plans past their expiry, local-only digests past
// their purge time. A long-lived authority (the gateway's) so holds only
// what is still live.
const pruneEvery = time.Minute

type sealKey struct{ plan, export string }

// seal is the authority's private copy of what admission needs.
type seal struct {
	id       string
	digest   string // sha256 of the export
	wire     string // sha256 of the wire body: what Admit admits
	plan     string // sha256 of the plan: what uses are counted under
	target   string
	consumer receipts.Consumer
	expiry   time.Time
	maxUses  int

	mu sync.Mutex // orders the decisions of this seal
}

// NewAuthority returns an authority that knows no seals.
func NewAuthority(opt Options) *Authority {
	now := opt.Now
	if now == nil {
		now = time.Now
	}
	return &Authority{
		journal: opt.Journal,
		now:     now,
		policy:  opt.PolicyRevision,
		seals:   make(map[string]*seal),
		uses:    make(map[string]*planUses),
		sealed:  make(map[sealKey]time.Time),
		denied:  make(map[string]time.Time),
	}
}

// DenyLocal registers digest ("sha256:" over the exact bytes, as
// receipts.SHA256 computes it) as bytes that must never leave: Admit refuses
// a body with that digest, and Seal refuses an export with it, whatever the
// seal. Rehydrated results are registered here.
func (a *Authority) DenyLocal(digest string) { a.DenyLocalUntil(digest, time.Time{}) }

// DenyLocalUntil is DenyLocal until a time: the purge time of a rehydrated
// result, after which the result itself must be gone. The zero time is
// for the authority's life.
func (a *Authority) DenyLocalUntil(digest string, until time.Time) {
	a.mu.Lock()
	if old, ok := a.denied[digest]; !ok || (!old.IsZero() && (until.IsZero() || until.After(old))) {
		a.denied[digest] = until
	}
	a.mu.Unlock()
}

// Release forgets the seal eventID: nothing is admitted under it any more.
// A caller releases a seal once its disclosure is over (the gateway, after
// each request), so that a long-lived authority does not keep it until it
// expires. The plan's use count and its once-only seal stay until the
// plan's expiry.
func (a *Authority) Release(eventID string) {
	a.mu.Lock()
	delete(a.seals, eventID)
	a.mu.Unlock()
}

// Live returns how many seals and local-only digests the authority holds.
func (a *Authority) Live() (seals, denied int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.seals), len(a.denied)
}

// prune drops what has expired, at most once a pruneEvery. a.mu is held.
func (a *Authority) prune(now time.Time) {
	if now.Before(a.pruneAt) {
		return
	}
	a.pruneAt = now.Add(pruneEvery)
	for id, s := range a.seals {
		if !now.Before(s.expiry) {
			delete(a.seals, id)
		}
	}
	for k, expiry := range a.sealed {
		if !expiry.IsZero() && !now.Before(expiry) {
			delete(a.sealed, k)
		}
	}
	for plan, u := range a.uses {
		if !now.Before(u.expiry) {
			delete(a.uses, plan)
		}
	}
	for d, until := range a.denied {
		if !until.IsZero() && !now.Before(until) {
			delete(a.denied, d)
		}
	}
}

// Seal checks that the request is one verified cut and, if every binding
// holds, seals it: it returns a PrivacyCut@1 with a fresh random event id
// and keeps, in memory only, the export digest, target, consumer, expiry and
// use ceiling. A refusal is an *Error with code PLAN_MISMATCH, journaled
// with its own event id. A journal failure is returned as an error and
// nothing is sealed. The seal's journal line is written but not synced: the
// first admission of the seal, synced after it in the same file, makes it
// durable, as does Journal.Sync (see Journal).
func (a *Authority) Seal(req SealRequest) (receipts.PrivacyCut, error) {
	return a.seal(sealInput{
		SourceDigest: req.SourceDigest, Export: req.Export, Wire: req.Wire, Plan: req.Plan, Receipts: req.Receipts,
		Verification: req.Verification.Verification(), Lease: req.Lease,
	})
}

// Sync makes the journal lines of the authority's seals durable (see
// Journal.Sync).
func (a *Authority) Sync() error { return a.journal.Sync() }

func (a *Authority) seal(req sealInput) (receipts.PrivacyCut, error) {
	now := a.now()
	c, reason, err := a.check(&req, now)
	if err != nil {
		return receipts.PrivacyCut{}, err
	}
	if reason != "" {
		return receipts.PrivacyCut{}, a.refuseSeal(reason, now)
	}

	key := sealKey{plan: c.planDigest, export: c.exportDigest}
	id := receipts.NewEventID()
	a.mu.Lock()
	a.prune(now)
	_, denied := a.denied[c.exportDigest]
	if _, w := a.denied[c.wireDigest]; w {
		denied = true
	}
	_, dup := a.sealed[key]
	if !denied && !dup {
		a.sealed[key] = c.expiry // reserved until journaled
	}
	a.mu.Unlock()
	switch {
	case denied:
		return receipts.PrivacyCut{}, a.refuseSeal(ReasonLocalOnly, now)
	case dup:
		return receipts.PrivacyCut{}, a.refuseSeal(ReasonSealed, now)
	}

	if err := a.journal.append(Entry{
		EventID: id, Time: now.UTC(), Kind: "seal", Command: "seal",
		Seal: id, Digest: c.exportDigest, Wire: wireField(c.wireDigest, c.exportDigest), Plan: c.planDigest,
	}, false); err != nil {
		a.mu.Lock()
		delete(a.sealed, key)
		a.mu.Unlock()
		return receipts.PrivacyCut{}, fmt.Errorf("egress: seal not recorded: %w", err)
	}
	s := &seal{
		id: id, digest: c.exportDigest, wire: c.wireDigest, plan: c.planDigest, target: req.Plan.Target,
		consumer: req.Plan.Consumer, expiry: c.expiry, maxUses: req.Plan.MaxUses,
	}
	a.mu.Lock()
	a.seals[id] = s
	a.mu.Unlock()

	return receipts.PrivacyCut{
		Schema:             receipts.SchemaPrivacyCut,
		EventID:            id,
		SourceDigest:       req.SourceDigest,
		ExportDigest:       c.exportDigest,
		WireDigest:         c.wireDigest,
		PlanDigest:         c.planDigest,
		ReceiptsDigest:     c.receiptsDigest,
		VerificationDigest: c.verificationDigest,
		Verdict:            req.Verification.Verdict,
		PolicyRevision:     req.Plan.PolicyRevision,
		Target:             req.Plan.Target,
		Consumer:           req.Plan.Consumer,
		MaxUses:            req.Plan.MaxUses,
		ExpiresAt:          req.Plan.ExpiresAt,
		SealedAt:           now.UTC().Format(time.RFC3339Nano),
		Lease:              req.Lease,
	}, nil
}

// checked holds the digests Seal computed.
type checked struct {
	exportDigest       string
	wireDigest         string
	planDigest         string
	receiptsDigest     string
	verificationDigest string
	expiry             time.Time
}

// check returns the first broken binding as a reason word, or "" and the
// computed digests. err is set only when a value cannot be encoded at all.
func (a *Authority) check(req *sealInput, now time.Time) (checked, string, error) {
	var c checked
	p, v, rs := &req.Plan, &req.Verification, req.Receipts

	if p.Schema != receipts.SchemaPlan || v.Schema != receipts.SchemaVerification {
		return c, ReasonSchema, nil
	}
	for i := range rs {
		if rs[i].Schema != receipts.SchemaTransformation {
			return c, ReasonSchema, nil
		}
	}
	if !v.Passed() {
		return c, ReasonVerdict, nil
	}
	if p.Mode != v.Mode || (p.Mode != receipts.ModeIrreversible && p.Mode != receipts.ModeReversible) {
		return c, ReasonMode, nil
	}
	if (p.Mode == receipts.ModeReversible) != (req.Lease != "") {
		return c, ReasonLease, nil
	}
	if a.policy == "" || p.PolicyRevision != a.policy {
		return c, ReasonPolicyRevision, nil
	}
	expiry, err := p.Expiry()
	if err != nil {
		return c, ReasonExpiry, nil
	}
	if !now.Before(expiry) {
		return c, ReasonExpired, nil
	}
	c.expiry = expiry
	if p.MaxUses < 1 {
		return c, ReasonMaxUses, nil
	}
	if p.Target == "" {
		return c, ReasonTarget, nil
	}
	if p.Consumer.Kind == "" || p.Consumer.ID == "" {
		return c, ReasonConsumer, nil
	}

	c.exportDigest = receipts.SHA256(req.Export)
	if v.ExportDigest != c.exportDigest {
		return c, ReasonExportDigest, nil
	}
	switch p.WireProfile() {
	case receipts.WireExport:
		// The wire body is the export, and the verifier's wire-match
		// says so with the export digest.
		if req.Wire != nil && !bytes.Equal(req.Wire, req.Export) {
			return c, ReasonWireDigest, nil
		}
		c.wireDigest = c.exportDigest
		if v.WireDigest != c.wireDigest {
			return c, ReasonWireDigest, nil
		}
	case receipts.WireOpenAIChat, receipts.WireAnthropicMessages:
		if len(req.Wire) == 0 {
			return c, ReasonWireDigest, nil
		}
		c.wireDigest = receipts.SHA256(req.Wire)
		if v.WireDigest != c.wireDigest || c.wireDigest == c.exportDigest {
			return c, ReasonWireDigest, nil
		}
	default:
		return c, ReasonWireProfile, nil
	}
	if alg, _, err := receipts.ParseDigest(req.SourceDigest); err != nil || alg != receipts.PrefixHMAC || v.SourceDigest != req.SourceDigest {
		return c, ReasonSourceDigest, nil
	}
	if p.RestrictedRef != req.SourceDigest {
		return c, ReasonRestrictedRef, nil
	}

	if c.planDigest, err = receipts.DigestCanonical(p); err != nil {
		return c, "", fmt.Errorf("egress: seal: plan digest: %w", err)
	}
	if v.PlanDigest != c.planDigest {
		return c, ReasonPlanDigest, nil
	}
	for i := range rs {
		if rs[i].PlanDigest != c.planDigest {
			return c, ReasonPlanDigest, nil
		}
	}
	if p.VocabularyDigest == "" || v.VocabularyDigest != p.VocabularyDigest {
		return c, ReasonVocabularyDigest, nil
	}
	for i := range rs {
		if rs[i].VocabularyDigest != p.VocabularyDigest {
			return c, ReasonVocabularyDigest, nil
		}
	}

	// The chain: indexed in order, each receipt's parents are the digests
	// of every earlier receipt, each input is the previous output, the
	// first input is the source, one label throughout.
	if len(rs) == 0 {
		return c, ReasonReceiptChain, nil
	}
	digests := make([]string, 0, len(rs))
	for i := range rs {
		r := &rs[i]
		if r.Index != i || r.LabelDigest != rs[0].LabelDigest || !slices.Equal(r.Parents, digests) {
			return c, ReasonReceiptChain, nil
		}
		if (i == 0 && r.InputDigest != req.SourceDigest) || (i > 0 && r.InputDigest != rs[i-1].OutputDigest) {
			return c, ReasonReceiptChain, nil
		}
		if r.Terminal != (i == len(rs)-1) {
			return c, ReasonTerminal, nil
		}
		d, err := r.Digest()
		if err != nil {
			return c, "", fmt.Errorf("egress: seal: receipt %d digest: %w", i, err)
		}
		digests = append(digests, d)
	}
	last := &rs[len(rs)-1]
	if last.OutputDigest != c.exportDigest || last.ExportDigest != c.exportDigest {
		return c, ReasonTerminal, nil
	}
	c.receiptsDigest = digests[len(digests)-1]
	if v.ReceiptsDigest != c.receiptsDigest {
		return c, ReasonReceiptsDigest, nil
	}
	if c.verificationDigest, err = receipts.DigestCanonical(v); err != nil {
		return c, "", fmt.Errorf("egress: seal: verification digest: %w", err)
	}
	return c, "", nil
}

// refuseSeal journals a seal refusal and returns it. No digest is
// journaled: an export that was not sealed is not known to be public.
func (a *Authority) refuseSeal(reason string, now time.Time) error {
	e := &Error{Op: "seal", Code: receipts.PlanMismatch, Reason: reason, EventID: receipts.NewEventID()}
	jerr := a.journal.Append(Entry{
		EventID: e.EventID, Time: now.UTC(), Kind: "refusal", Command: "seal",
		Codes: []receipts.Code{e.Code}, Reason: reason,
	})
	if jerr != nil {
		return errors.Join(e, fmt.Errorf("egress: refusal not recorded: %w", jerr))
	}
	return e
}

// Admit decides whether body may be sent now to target for consumer under
// the seal eventID. It admits only the sealed wire body's exact bytes, to
// the plan's exact target and consumer, before expiry, within max_uses of
// the plan. Each call is a fresh EgressDecision@1 with its own event id; an
// admission consumes one use, a refusal none. Every decision is journaled
// before it is returned.
//
// Uses are counted per plan digest. With a journal, the count is the
// journal's: under its flock, Admit reads the journal, counts the
// admissions of the plan it holds (from every process, under every seal of
// the plan) and appends the admission only when they are fewer than
// max_uses, so concurrent processes never exceed the ceiling together.
// Without a journal, the count is this Authority's own.
//
// A refusal returns the refusal decision and an *Error with the same code
// and reason. If the journal cannot be read or cannot record an admission,
// the admission does not happen: Admit returns a zero decision, an error
// that is not an *Error, and no use is consumed.
//
// BodyDigest is set only when it is the sealed wire body's digest: a digest
// of other bytes is never recorded, since those bytes are not known to be
// public.
func (a *Authority) Admit(eventID string, body []byte, target string, consumer receipts.Consumer) (receipts.EgressDecision, error) {
	now := a.now()
	bodyDigest := receipts.SHA256(body)

	a.mu.Lock()
	s := a.seals[eventID]
	_, denied := a.denied[bodyDigest] // a body that passes has the seal's digest
	a.mu.Unlock()

	d := receipts.EgressDecision{
		Schema:    receipts.SchemaEgress,
		EventID:   receipts.NewEventID(),
		Target:    target,
		Consumer:  consumer,
		DecidedAt: now.UTC().Format(time.RFC3339Nano),
	}
	if s == nil {
		reason := ReasonNoSeal
		if denied {
			reason = ReasonLocalOnly
		}
		return a.refuseAdmit(d, nil, receipts.PlanMismatch, reason, now)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	d.Seal, d.MaxUses = s.id, s.maxUses
	if bodyDigest == s.wire {
		d.BodyDigest = s.wire
	}
	switch {
	case denied:
		return a.refuseAdmit(d, s, receipts.PlanMismatch, ReasonLocalOnly, now)
	case bodyDigest != s.wire:
		return a.refuseAdmit(d, s, receipts.PlanMismatch, ReasonBody, now)
	case target != s.target:
		return a.refuseAdmit(d, s, receipts.PlanMismatch, ReasonTarget, now)
	case consumer != s.consumer:
		return a.refuseAdmit(d, s, receipts.PlanMismatch, ReasonConsumer, now)
	case !now.Before(s.expiry):
		return a.refuseAdmit(d, s, receipts.PlanMismatch, ReasonExpired, now)
	}

	if a.journal == nil {
		a.mu.Lock()
		u := a.uses[s.plan]
		if u == nil {
			u = &planUses{expiry: s.expiry}
			a.uses[s.plan] = u
		}
		used := u.n
		if used < s.maxUses {
			u.n++
		}
		a.mu.Unlock()
		if used >= s.maxUses {
			return a.refuseAdmit(d, s, receipts.LimitExceeded, ReasonUsesExhausted, now)
		}
		d.Admit, d.Use = true, used+1
		return d, nil
	}

	admit := Entry{
		EventID: d.EventID, Time: now.UTC(), Kind: "admit", Command: "admit",
		Seal: s.id, Digest: s.digest, Wire: wireField(s.wire, s.digest), Plan: s.plan,
	}
	rd, e, refusal := a.refusal(d, s, receipts.LimitExceeded, ReasonUsesExhausted, now)
	use, admitted, err := a.journal.appendAdmission(admit, refusal, s.maxUses)
	switch {
	case admitted && err == nil:
		d.Admit, d.Use = true, use
		return d, nil
	case admitted:
		return receipts.EgressDecision{}, fmt.Errorf("egress: admission not recorded, not admitted: %w", err)
	case errors.Is(err, errNotCounted):
		return receipts.EgressDecision{}, fmt.Errorf("egress: uses not counted, not admitted: %w", err)
	case err != nil:
		return rd, errors.Join(e, fmt.Errorf("egress: refusal not recorded: %w", err))
	}
	return rd, e
}

// wireField is the wire digest to journal: "" when it is the export digest
// (export@1), so that such lines read as they always have.
func wireField(wire, export string) string {
	if wire == export {
		return ""
	}
	return wire
}

// refusal completes a refusal decision and returns it with its error and
// journal entry. s is nil when no seal was found.
func (a *Authority) refusal(d receipts.EgressDecision, s *seal, code receipts.Code, reason string, now time.Time) (receipts.EgressDecision, *Error, Entry) {
	d.Admit, d.Use, d.Code, d.Reason = false, 0, code, reason
	// A refused target or consumer is the caller's, not the plan's: it is
	// not repeated in evidence (a URL can carry anything).
	d.Target, d.Consumer = "", receipts.Consumer{}
	e := &Error{Op: "admit", Code: code, Reason: reason, EventID: d.EventID}
	ent := Entry{
		EventID: d.EventID, Time: now.UTC(), Kind: "refusal", Command: "admit",
		Codes: []receipts.Code{code}, Reason: reason,
	}
	if s != nil {
		ent.Seal, ent.Digest, ent.Wire, ent.Plan = s.id, s.digest, wireField(s.wire, s.digest), s.plan
	}
	return d, e, ent
}

// refuseAdmit completes, journals and returns a refusal decision. s is nil
// when no seal was found; otherwise its lock is held.
func (a *Authority) refuseAdmit(d receipts.EgressDecision, s *seal, code receipts.Code, reason string, now time.Time) (receipts.EgressDecision, error) {
	d, e, ent := a.refusal(d, s, code, reason, now)
	if jerr := a.journal.Append(ent); jerr != nil {
		return d, errors.Join(e, fmt.Errorf("egress: refusal not recorded: %w", jerr))
	}
	return d, e
}
