package pipeline

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"time"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/wire"
)

// SendOptions configure one Send.
type SendOptions struct {
	// CredentialFile holds the provider credential of the plan's wire
	// profile (openai-chat@1 and anthropic-messages@1 need one; export@1
	// sends one as a bearer token only when it is given). It is read when
	// the request is sent, never kept, and never written anywhere.
	CredentialFile string
	// Timeout bounds one try (default egress.DefaultTryTimeout).
	Timeout time.Duration
	// Quarantine, when set, receives the answer — the provider's answer
	// document, as the profile reads it out of the response — before
	// anything else reads it (cut writes it to a 0600 file). An error stops
	// the send there.
	Quarantine func(answer []byte) error
	// Rehydrate asks for a reversible cut's answer to be rehydrated inside
	// the vault with the cut's schema (Input.Schema). Without it the lease
	// stays ACTIVE for a later Rehydrate.
	Rehydrate bool
	// RootCAs, when set, replaces the system roots that verify the target
	// (a test's loopback TLS server). Certificates are always verified.
	RootCAs *x509.CertPool
	// Sleep, when set, waits between redeliveries (tests); nil: a timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Sent is what a Send did: filled in as far as it got, also when it then
// failed, so that a caller can always say what left.
type Sent struct {
	Decisions  []receipts.EgressDecision // every admission and refusal, in order
	Tries      []egress.Try              // every delivery attempt
	Target     string
	Bytes      int    // bytes of the sealed body, sent on every try
	BodyDigest string // its sha256
	Status     int    // HTTP status of the last response, 0 if none
	Answer     []byte // the answer document (untrusted remote output), nil if none was usable
	// AnswerCanonical is the answer's RFC 8785 form, written from the
	// parse that checked it; nil for export@1 (whose answer is not
	// parsed) and for an answer with no canonical form.
	AnswerCanonical []byte
	Rehydrated      *Rehydrated
	Lease           string // the reversible cut's lease, "" otherwise
	LeaseState      string // its state when Send returned, "" if not known
	// RehydrateTime is the time the rehydration took, of Send's.
	RehydrateTime time.Duration
}

// Delivered reports whether the sealed bytes were sent at least once.
func (s *Sent) Delivered() bool { return len(s.Tries) > 0 }

// UpstreamError is a delivery that brought back no usable answer: an error
// status other than 429, a refusal, a truncation, no answer of the
// profile's shape, or redelivery that ran out of uses, time or patience.
// Its code is UPSTREAM_FAILED; it holds no byte of the provider's answer.
type UpstreamError struct {
	Code   receipts.Code // UPSTREAM_FAILED
	Status int           // the last HTTP status, 0 for none
	Reason string        // a fixed word: the last outcome, why redelivery stopped, or the answer's fault
	Err    error         // the *egress.DeliveryError or *wire.AnswerError behind it
}

func (e *UpstreamError) Error() string {
	return "upstream: " + string(e.Code) + ": " + e.Reason
}

func (e *UpstreamError) Unwrap() error { return e.Err }

// Send delivers the sealed request of cut — the wire body, or the export
// for export@1 — to the plan's target: each try admitted afresh at the
// egress gate (a new EgressDecision@1, one use), exactly the sealed bytes,
// the profile's fixed headers and credential, no proxy, no redirect, TLS
// verified; a 429, a 5xx or a connection that fails is redelivered with
// capped backoff honouring Retry-After, within max_uses and the seal's
// expiry. The answer is read out of the response per profile and handed to
// opt.Quarantine; a reversible cut's answer is then rehydrated inside the
// vault (opt.Rehydrate), and the result registered as local-only: the gate
// never admits it.
//
// A reversible cut that ends without a validated answer — no answer, an
// unusable one, an interrupt, a refused rehydration — has its lease
// revoked, and Sent says so. An unusable answer is an *UpstreamError; a
// refusal by the gate or of the rehydration a *RefusedError.
func (p *Pipeline) Send(ctx context.Context, cut *Cut, opt SendOptions) (*Sent, error) {
	if !cut.Sealed() {
		return nil, errors.New("pipeline: send: the cut is not sealed")
	}
	// The bytes are copied out of the cut: net/http may read a request
	// body after Do returns, and the cut's buffer (Options.Buffer) may be
	// unmapped by then.
	body := bytes.Clone(cut.Body())
	s := &Sent{Target: cut.Plan.Target, Lease: cut.Lease, Bytes: len(body)}
	if cut.Lease != "" {
		s.LeaseState = lease.Active.String()
	}
	answered, rehydrated := false, false
	if cut.Lease != "" {
		defer func() {
			if !rehydrated && (opt.Rehydrate || !answered) {
				p.revokeAfterSend(ctx, s)
			}
		}()
	}
	profile := cut.Plan.WireProfile()
	sender := &egress.Sender{Authority: p.auth, RootCAs: opt.RootCAs, Sleep: opt.Sleep, TryTimeout: opt.Timeout,
		MaxAnswerBytes: MaxAnswerBytes}
	if opt.RootCAs == nil {
		// Connections to a provider are kept from one Send to the next
		// (a gateway's requests): one TCP connection and TLS handshake
		// for many deliveries.
		sender.Transport = p.sharedTransport()
	}
	res, err := sender.Send(ctx, egress.Delivery{Seal: cut.Seal.EventID, Body: body, Target: cut.Plan.Target,
		Consumer: cut.Plan.Consumer, Profile: profile, CredentialFile: opt.CredentialFile})
	s.Decisions, s.Tries, s.Status = res.Decisions, res.Tries, res.Status
	s.BodyDigest = bodyDigest(res.Decisions, body)
	if err != nil {
		return s, p.deliveryError(err, res)
	}
	answer, canonical, err := wire.ReadAnswerCanonical(profile, res.Status, res.Answer)
	if err != nil {
		var ae *wire.AnswerError
		if errors.As(err, &ae) {
			p.journalUpstream(ae.Reason)
			return s, &UpstreamError{Code: receipts.UpstreamFailed, Status: ae.Status, Reason: ae.Reason, Err: err}
		}
		return s, err
	}
	answered, s.Answer, s.AnswerCanonical = true, answer, canonical
	if opt.Quarantine != nil {
		if err := opt.Quarantine(answer); err != nil {
			return s, err
		}
	}
	if cut.Lease == "" || !opt.Rehydrate {
		return s, nil
	}
	t := time.Now()
	r, err := p.Rehydrate(ctx, cut.LeaseRef(), cut.schema, answer)
	s.RehydrateTime = time.Since(t)
	if err != nil {
		return s, err
	}
	rehydrated = true
	s.Rehydrated, s.LeaseState = r, r.State
	return s, nil
}

// deliveryError classifies what the sender returned: the gate's refusal of
// the first admission, an upstream failure, or an operational error (a
// credential that cannot be used, the context's end).
func (p *Pipeline) deliveryError(err error, res egress.Result) error {
	var ee *egress.Error
	if errors.As(err, &ee) {
		return p.refuse(planRefusal(ee.Code), "", ee.Reason, ee)
	}
	var de *egress.DeliveryError
	if errors.As(err, &de) {
		if de.Code != receipts.UpstreamFailed {
			return p.refuse(planRefusal(de.Code), "target", de.Outcome, de)
		}
		reason := de.Outcome
		if de.Stopped != "" {
			reason += "/" + de.Stopped // as the journal spells it
		}
		return &UpstreamError{Code: de.Code, Status: res.Status, Reason: reason, Err: de}
	}
	return err
}

// journalUpstream records an answer that could not be used, as the sender
// records a delivery that failed.
func (p *Pipeline) journalUpstream(reason string) {
	if p.opt.Journal == nil {
		return
	}
	if err := p.opt.Journal.Append(egress.Entry{EventID: receipts.NewEventID(), Kind: "refusal", Command: p.command(),
		Codes: []receipts.Code{receipts.UpstreamFailed}, Reason: reason}); err != nil {
		p.warn("evidence journal: " + err.Error())
	}
}

// revokeAfterSend revokes a sent cut's lease and records its state.
func (p *Pipeline) revokeAfterSend(ctx context.Context, s *Sent) {
	if p.opt.Vault == nil {
		return
	}
	l, err := p.opt.Vault.Revoke(context.WithoutCancel(ctx), s.Lease)
	if err != nil {
		p.warn("revoking lease " + s.Lease + " after the send: " + err.Error())
		s.LeaseState = ""
		return
	}
	s.LeaseState = l.State.String()
}

// bodyDigest is the sha256 of body. A decision on body names it when body
// is the sealed wire body (egress.Authority.Admit hashed it to decide), so
// it is computed again only when no decision did.
func bodyDigest(decisions []receipts.EgressDecision, body []byte) string {
	for _, d := range decisions {
		if d.BodyDigest != "" {
			return d.BodyDigest
		}
	}
	return receipts.SHA256(body)
}
