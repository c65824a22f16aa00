package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
)

// SendOptions configure one Send.
type SendOptions struct {
	// Timeout bounds the HTTP exchange (default 5 minutes).
	Timeout time.Duration
	// Quarantine, when set, receives the answer as it arrived, before
	// anything reads it (cut writes it to a 0600 file). An error stops the
	// send there.
	Quarantine func(answer []byte) error
	// Rehydrate asks for a reversible cut's answer to be rehydrated inside
	// the vault with the cut's schema (Input.Schema). Without it the lease
	// stays ACTIVE for a later Rehydrate.
	Rehydrate bool
	// Client sends the request (nil: a client that follows no redirect
	// and uses no proxy from the environment). Tests inject one.
	Client *http.Client
}

// Sent is what a Send did: filled in as far as it got, also when it then
// failed, so that a caller can always say what left.
type Sent struct {
	Decisions  []receipts.EgressDecision // every admission and refusal, in order
	Target     string
	Bytes      int    // bytes sent
	BodyDigest string // sha256 of the bytes sent
	Status     int    // HTTP status of the last answer, 0 if none
	Answer     []byte // the answer as received (untrusted remote output)
	Rehydrated *Rehydrated
	Lease      string // the reversible cut's lease, "" otherwise
	LeaseState string // its state when Send returned, "" if not known
	// RehydrateTime is the time the rehydration took, of Send's.
	RehydrateTime time.Duration
}

// Delivered reports whether bytes were admitted and sent.
func (s *Sent) Delivered() bool { return s.Bytes > 0 }

// Send admits the sealed export of cut at the egress gate and POSTs exactly
// those bytes to the plan's target, with no redirect and no proxy. The
// answer goes to opt.Quarantine. A reversible cut whose answer is then
// rehydrated (opt.Rehydrate) has its result registered as local-only: the
// gate will never admit it.
//
// A reversible cut that ends without a rehydrated answer for any other
// reason than the caller's choice (no answer, an error status, an
// interrupt, a refused rehydration) has its lease revoked, and Sent says
// so.
func (p *Pipeline) Send(ctx context.Context, cut *Cut, opt SendOptions) (*Sent, error) {
	if !cut.Sealed() {
		return nil, errors.New("pipeline: send: the cut is not sealed")
	}
	s := &Sent{Target: cut.Plan.Target, Lease: cut.Lease}
	if cut.Lease != "" {
		s.LeaseState = lease.Active.String()
	}
	rehydrated := false
	if cut.Lease != "" {
		defer func() {
			if !rehydrated && (opt.Rehydrate || s.Status/100 != 2) {
				p.revokeAfterSend(ctx, s)
			}
		}()
	}
	// The gate decides on the exact bytes and target the request will use.
	// They are copied out of the cut first: net/http may read a request
	// body after Do returns, and the cut's buffer may not outlive it.
	body := bytes.Clone(cut.Export)
	dec, err := p.auth.Admit(cut.Seal.EventID, body, cut.Plan.Target, cut.Plan.Consumer)
	if dec.EventID != "" {
		s.Decisions = append(s.Decisions, dec)
	}
	if err != nil {
		var ee *egress.Error
		if errors.As(err, &ee) {
			return s, p.refuse(planRefusal(ee.Code), "", ee.Reason, ee)
		}
		return s, err
	}
	status, answer, err := post(ctx, opt.client(), cut.Plan.Target, body, opt.timeout())
	s.Bytes, s.BodyDigest = len(body), receipts.SHA256(body)
	if err != nil {
		return s, err
	}
	s.Status, s.Answer = status, answer
	if opt.Quarantine != nil {
		if err := opt.Quarantine(answer); err != nil {
			return s, fmt.Errorf("quarantine: %w", err)
		}
	}
	if status/100 != 2 {
		return s, fmt.Errorf("target answered HTTP %d", status)
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

func (o SendOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return 5 * time.Minute
}

func (o SendOptions) client() *http.Client {
	if o.Client != nil {
		return o.Client
	}
	return &http.Client{
		Transport:     &http.Transport{Proxy: nil, ForceAttemptHTTP2: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// post sends body to target exactly.
func post(ctx context.Context, client *http.Client, target string, body []byte, timeout time.Duration) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("post: %w", err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	if err != nil {
		return 0, nil, fmt.Errorf("read answer: %w", err)
	}
	if len(answer) > MaxAnswerBytes {
		return 0, nil, fmt.Errorf("answer larger than %d bytes", MaxAnswerBytes)
	}
	return resp.StatusCode, answer, nil
}
