package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/privacycut/privacycut/internal/readall"
	"github.com/privacycut/privacycut/receipts"
)

// UserAgent is the fixed User-Agent of every delivery.
const UserAgent = "privacycut/1"

// AnthropicVersion is the anthropic-version header of anthropic-messages@1.
const AnthropicVersion = "2023-06-01"

// Defaults of a Sender.
const (
	DefaultTryTimeout     = 5 * time.Minute
	DefaultMaxAnswerBytes = 64 << 20
	DefaultInitialBackoff = 1 * time.Second
	DefaultMaxBackoff     = 30 * time.Second
	DefaultMaxWait        = 2 * time.Minute
)

// Outcomes of one try, and the reasons redelivery stops. They are the
// fixed words of Try.Outcome, Result.Failure and Result.Stopped.
const (
	OutcomeOK          = "ok"           // a 2xx response
	OutcomeRateLimited = "rate-limited" // 429: redelivered
	OutcomeServerError = "server-error" // 5xx: redelivered
	OutcomeConnection  = "connection"   // no (whole) response: redelivered
	OutcomeRedirect    = "redirect"     // 3xx, not followed
	OutcomeClientError = "client-error" // 4xx other than 429
	OutcomeStatus      = "status"       // any other status
	OutcomeTooLarge    = "too-large"    // a response body over MaxAnswerBytes
	OutcomeTLS         = "tls"          // the server's certificate did not verify
	OutcomeCanceled    = "canceled"     // the caller's context ended during the try

	StopUsesExhausted = "uses-exhausted" // every use of the plan was consumed
	StopExpired       = "expired"        // the next try would fall past the seal's expiry
	StopDeadline      = "deadline"       // the next try would fall past the caller's deadline
	StopWait          = "wait"           // Retry-After asks to wait longer than MaxWait
	StopRefused       = "refused"        // the gate refused the next admission
	StopNotRecorded   = "not-recorded"   // the journal could not record a try
	StopCanceled      = "canceled"       // the caller's context ended between tries
)

// Sender delivers sealed wire bodies over HTTP. Its zero value, given an
// Authority, is usable: TLS verified against the system roots, no proxy,
// real sleeps.
type Sender struct {
	Authority *Authority // the gate every try is admitted by; its clock is the sender's

	// RootCAs, when set, replaces the system roots for verifying the
	// server (a test's loopback server). Certificates are always verified.
	RootCAs *x509.CertPool
	// DialContext, when set, dials connections (a test's listener).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// Transport, when set, is the transport of every delivery, its
	// connections kept for the next one to the same target: a long-lived
	// process (the gateway) opens a provider connection, and does its TLS
	// handshake, once rather than per request. It must come from
	// NewTransport, which RootCAs and DialContext then do not change. Nil:
	// a transport of the delivery's own, closed when it ends.
	Transport *http.Transport
	// Sleep waits d or until ctx ends (nil: a timer).
	Sleep func(ctx context.Context, d time.Duration) error

	TryTimeout     time.Duration // one try, connection to last answer byte; 0: DefaultTryTimeout
	MaxAnswerBytes int64         // 0: DefaultMaxAnswerBytes
	InitialBackoff time.Duration // wait after the first failed try; 0: DefaultInitialBackoff
	MaxBackoff     time.Duration // cap of the doubling backoff; 0: DefaultMaxBackoff
	MaxWait        time.Duration // longest wait honoured, Retry-After included; 0: DefaultMaxWait
}

// Delivery is one sealed body to send.
type Delivery struct {
	Seal     string            // the seal's event id
	Body     []byte            // the sealed wire body, exactly
	Target   string            // the plan's target
	Consumer receipts.Consumer // the plan's consumer
	Profile  string            // the plan's wire profile
	// CredentialFile is read at send time. openai-chat@1 and
	// anthropic-messages@1 require one; export@1 sends one, as a bearer
	// token, only when it is given.
	CredentialFile string
}

// Try is one delivery attempt: its admission and what came back.
type Try struct {
	Decision string `json:"decision"`  // the admission's event id
	Use      int    `json:"use"`       // its use number
	Status   int    `json:"status"`    // HTTP status, 0 when no response came
	Outcome  string `json:"outcome"`   // one of the Outcome words
	WaitedMS int64  `json:"waited_ms"` // the wait before this try
}

// Result is what a delivery did: every decision of the gate (admissions
// and a refusal, in order), every try, and the last response.
type Result struct {
	Decisions []receipts.EgressDecision `json:"decisions"`
	Tries     []Try                     `json:"tries"`
	Status    int                       `json:"status"`            // of the last response, 0 for none
	Answer    []byte                    `json:"-"`                 // the last response body, at most MaxAnswerBytes
	Failure   string                    `json:"failure,omitempty"` // "" on success, else the last try's outcome
	Stopped   string                    `json:"stopped,omitempty"` // why redelivery stopped, "" when the outcome is final
}

// DeliveryError is a delivery that ended without a 2xx response. Its code
// is UPSTREAM_FAILED (PLAN_MISMATCH for a target that may not be sent to),
// Outcome the last try's, Stopped why redelivery stopped; EventID names its
// journal line. It holds no response bytes and no credential.
type DeliveryError struct {
	Code    receipts.Code
	Outcome string
	Stopped string
	EventID string
	err     error // the context's error, for OutcomeCanceled
}

func (e *DeliveryError) Error() string {
	s := "egress: delivery failed: " + string(e.Code) + ": " + e.Outcome
	if e.Stopped != "" {
		s += " (redelivery stopped: " + e.Stopped + ")"
	}
	return s
}

func (e *DeliveryError) Unwrap() error { return e.err }

// Send delivers d: each try is admitted afresh by the Authority (a new
// EgressDecision@1 consuming one use) and POSTs exactly d.Body to exactly
// d.Target with Content-Type application/json, the fixed UserAgent and the
// profile's credential header (openai-chat@1: Authorization: Bearer;
// anthropic-messages@1: x-api-key and anthropic-version: 2023-06-01), and
// nothing else the client adds but Host and Content-Length: no proxy from
// the environment, no redirect followed, no Accept-Encoding. A target must
// be https, or http to a loopback address (127.0.0.0/8, ::1, localhost).
//
// A 429, a 5xx or a try that gets no whole response is redelivered — the
// same bytes, a fresh admission — after a wait that doubles from
// InitialBackoff up to MaxBackoff and is at least what Retry-After asks
// (seconds or an HTTP date), as long as a use is left, the wait ends
// before the seal's expiry and the context's deadline, and it is at most
// MaxWait. Any other response ends the delivery.
//
// The credential is read once, before the first admission, and wiped when
// Send returns; it is never in the Result, an error or the journal. A 2xx
// response returns a nil error; everything else returns the Result so far
// and an error: the gate's *Error when the first admission is refused, a
// *CredentialError, or a *DeliveryError (UPSTREAM_FAILED) journaled as a
// refusal. Each try is journaled as a "delivery" line.
func (s *Sender) Send(ctx context.Context, d Delivery) (Result, error) {
	var res Result
	if err := checkTarget(d.Target); err != nil {
		return res, err
	}
	cred, err := s.credential(d)
	if err != nil {
		return res, err
	}
	defer cred.Wipe()

	tr := s.Transport
	if tr == nil {
		tr = NewTransport(s.RootCAs, s.DialContext)
		defer tr.CloseIdleConnections()
	}
	client := &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	a := s.Authority
	var wait time.Duration
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			// No use is consumed for a try that cannot be made.
			if n == 0 {
				return res, &DeliveryError{Code: receipts.UpstreamFailed, Outcome: OutcomeCanceled, err: err}
			}
			return res, s.fail(&res, StopCanceled, err)
		}
		dec, err := a.Admit(d.Seal, d.Body, d.Target, d.Consumer)
		if dec.EventID != "" {
			res.Decisions = append(res.Decisions, dec)
		}
		if err != nil {
			if n == 0 {
				return res, err
			}
			stop := StopRefused
			if ee := (*Error)(nil); errors.As(err, &ee) && ee.Reason == ReasonUsesExhausted {
				stop = StopUsesExhausted
			}
			return res, s.fail(&res, stop, nil)
		}
		try := Try{Decision: dec.EventID, Use: dec.Use, WaitedMS: wait.Milliseconds()}
		status, body, retryAfter, outcome, cerr := s.try(ctx, client, d, cred)
		try.Status, try.Outcome = status, outcome
		res.Tries = append(res.Tries, try)
		res.Status, res.Answer = status, body
		if err := a.journal.Append(Entry{
			EventID: receipts.NewEventID(), Time: a.now().UTC(), Kind: "delivery", Command: "send",
			Seal: dec.Seal, Decision: dec.EventID, Use: dec.Use, Status: status, Reason: outcome,
		}); err != nil {
			if outcome == OutcomeOK {
				return res, fmt.Errorf("egress: delivery not recorded: %w", err)
			}
			res.Failure, res.Stopped = outcome, StopNotRecorded
			return res, errors.Join(&DeliveryError{Code: receipts.UpstreamFailed, Outcome: outcome, Stopped: StopNotRecorded}, err)
		}
		switch outcome {
		case OutcomeOK:
			return res, nil
		case OutcomeRateLimited, OutcomeServerError, OutcomeConnection:
		default:
			res.Failure = outcome
			return res, s.fail(&res, "", cerr)
		}
		// Redelivery, if a use, the time and the caller allow it.
		if dec.Use >= dec.MaxUses {
			return res, s.fail(&res, StopUsesExhausted, nil)
		}
		wait = max(s.backoff(n), retryAfter)
		now := a.now()
		expiry, _ := a.sealExpiry(d.Seal)
		deadline, hasDeadline := ctx.Deadline()
		switch {
		case wait > s.maxWait():
			return res, s.fail(&res, StopWait, nil)
		case !now.Add(wait).Before(expiry):
			return res, s.fail(&res, StopExpired, nil)
		case hasDeadline && wait >= time.Until(deadline): // contexts keep real time
			return res, s.fail(&res, StopDeadline, nil)
		}
		if err := s.sleep(ctx, wait); err != nil {
			return res, s.fail(&res, StopCanceled, err)
		}
	}
}

// fail records the end of a failed delivery as a refusal and returns its
// error. stop is why redelivery stopped, "" when the last outcome was
// final; cause is a context error, if any.
func (s *Sender) fail(res *Result, stop string, cause error) error {
	if n := len(res.Tries); n > 0 {
		res.Failure = res.Tries[n-1].Outcome
	}
	res.Stopped = stop
	e := &DeliveryError{Code: receipts.UpstreamFailed, Outcome: res.Failure, Stopped: stop, EventID: receipts.NewEventID(), err: cause}
	reason := e.Outcome
	if stop != "" {
		reason += "/" + stop
	}
	a := s.Authority
	ent := Entry{
		EventID: e.EventID, Time: a.now().UTC(), Kind: "refusal", Command: "send",
		Codes: []receipts.Code{e.Code}, Reason: reason, Status: res.Status,
	}
	if n := len(res.Decisions); n > 0 {
		ent.Seal = res.Decisions[n-1].Seal
	}
	if err := a.journal.Append(ent); err != nil {
		return errors.Join(e, fmt.Errorf("egress: refusal not recorded: %w", err))
	}
	return e
}

// try makes one POST and classifies what came back. err is the context's
// error for OutcomeCanceled.
func (s *Sender) try(ctx context.Context, client *http.Client, d Delivery, cred *Credential) (status int, body []byte, retryAfter time.Duration, outcome string, err error) {
	tctx, cancel := context.WithTimeout(ctx, s.tryTimeout())
	defer cancel()
	req, rerr := http.NewRequestWithContext(tctx, http.MethodPost, d.Target, bytes.NewReader(d.Body))
	if rerr != nil {
		return 0, nil, 0, OutcomeConnection, nil
	}
	req.Header = http.Header{
		"Content-Type": {"application/json"},
		"User-Agent":   {UserAgent},
	}
	if cred != nil {
		// The header value is a Go string: it cannot be wiped, and lives
		// until the collector reclaims it.
		cred.Reveal(func(k []byte) error {
			switch d.Profile {
			case receipts.WireAnthropicMessages:
				req.Header["X-Api-Key"] = []string{string(k)}
			default:
				req.Header["Authorization"] = []string{"Bearer " + string(k)}
			}
			return nil
		})
	}
	if d.Profile == receipts.WireAnthropicMessages {
		req.Header["Anthropic-Version"] = []string{AnthropicVersion}
	}
	resp, derr := client.Do(req)
	if derr != nil {
		switch {
		case ctx.Err() != nil:
			return 0, nil, 0, OutcomeCanceled, ctx.Err()
		case isTLSVerification(derr):
			return 0, nil, 0, OutcomeTLS, nil
		}
		return 0, nil, 0, OutcomeConnection, nil
	}
	defer resp.Body.Close()
	limit := s.maxAnswer()
	body, berr := readall.Read(io.LimitReader(resp.Body, limit+1), resp.ContentLength)
	switch {
	case berr != nil && ctx.Err() != nil:
		return resp.StatusCode, nil, 0, OutcomeCanceled, ctx.Err()
	case berr != nil:
		return resp.StatusCode, nil, 0, OutcomeConnection, nil
	case int64(len(body)) > limit:
		return resp.StatusCode, nil, 0, OutcomeTooLarge, nil
	}
	status = resp.StatusCode
	switch {
	case status/100 == 2:
		outcome = OutcomeOK
	case status == http.StatusTooManyRequests:
		outcome = OutcomeRateLimited
	case status/100 == 5:
		outcome = OutcomeServerError
	case status/100 == 3:
		outcome = OutcomeRedirect
	case status/100 == 4:
		outcome = OutcomeClientError
	default:
		outcome = OutcomeStatus
	}
	return status, body, parseRetryAfter(resp.Header.Get("Retry-After"), s.Authority.now()), outcome, nil
}

// parseRetryAfter reads Retry-After: delay-seconds or an HTTP date. A
// missing or unreadable value asks for no wait.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

func isTLSVerification(err error) bool {
	var ce *tls.CertificateVerificationError
	var ue x509.UnknownAuthorityError
	var he x509.HostnameError
	var ie x509.CertificateInvalidError
	return errors.As(err, &ce) || errors.As(err, &ue) || errors.As(err, &he) || errors.As(err, &ie)
}

// checkTarget refuses a target that is not an absolute https URL, or http
// to a loopback address, or that holds user information.
func checkTarget(target string) error {
	bad := &DeliveryError{Code: receipts.PlanMismatch, Outcome: "target"}
	u, err := url.Parse(target)
	if err != nil || u.User != nil || u.Host == "" || u.Opaque != "" {
		return bad
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		h := u.Hostname()
		if h == "localhost" {
			return nil
		}
		if ip, err := netip.ParseAddr(h); err == nil && ip.IsLoopback() {
			return nil
		}
	}
	return bad
}

// credential reads the credential the delivery needs, if any.
func (s *Sender) credential(d Delivery) (*Credential, error) {
	if d.CredentialFile == "" {
		if d.Profile == receipts.WireOpenAIChat || d.Profile == receipts.WireAnthropicMessages {
			return nil, &CredentialError{Reason: CredNone}
		}
		return nil, nil
	}
	return ReadCredential(d.CredentialFile)
}

// NewTransport returns the transport deliveries are made with: no proxy,
// TLS verified against rootCAs (nil: the system's roots), no transparent
// compression (which would add Accept-Encoding); dial, when not nil,
// dials its connections.
func NewTransport(rootCAs *x509.CertPool, dial func(ctx context.Context, network, addr string) (net.Conn, error)) *http.Transport {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            dial,
		TLSClientConfig:        &tls.Config{RootCAs: rootCAs, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		DisableCompression:     true,
		TLSHandshakeTimeout:    30 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		// Kept connections: enough for a gateway's concurrent requests
		// to one provider (HTTP/1.1 carries one at a time), none for
		// longer than a minute and a half idle.
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
}

func (s *Sender) backoff(n int) time.Duration {
	b, m := s.InitialBackoff, s.MaxBackoff
	if b <= 0 {
		b = DefaultInitialBackoff
	}
	if m <= 0 {
		m = DefaultMaxBackoff
	}
	for range n {
		if b >= m {
			break
		}
		b *= 2
	}
	return min(b, m)
}

func (s *Sender) sleep(ctx context.Context, d time.Duration) error {
	if s.Sleep != nil {
		return s.Sleep(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Sender) tryTimeout() time.Duration {
	if s.TryTimeout > 0 {
		return s.TryTimeout
	}
	return DefaultTryTimeout
}

func (s *Sender) maxAnswer() int64 {
	if s.MaxAnswerBytes > 0 {
		return s.MaxAnswerBytes
	}
	return DefaultMaxAnswerBytes
}

func (s *Sender) maxWait() time.Duration {
	if s.MaxWait > 0 {
		return s.MaxWait
	}
	return DefaultMaxWait
}

// sealExpiry returns the expiry of the seal id.
func (a *Authority) sealExpiry(id string) (time.Time, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.seals[id]; s != nil {
		return s.expiry, true
	}
	return time.Time{}, false
}
