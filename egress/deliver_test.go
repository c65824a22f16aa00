package egress_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/receipts"
)

// credCanary is the planted credential: it must appear in the request's
// credential header and nowhere else.
const credCanary = "sk-CANARY-0f1e2d3c4b5a69788796a5b4c3d2e1f0"

// received is one request a test server got.
type received struct {
	header http.Header
	body   []byte
	host   string
}

// script is a test server answering each request with the next response.
type script struct {
	mu    sync.Mutex
	got   []received
	steps []func(w http.ResponseWriter)
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.got = append(s.got, received{header: r.Header.Clone(), body: body, host: r.Host})
	n := len(s.got) - 1
	s.mu.Unlock()
	if n < len(s.steps) {
		s.steps[n](w)
		return
	}
	s.steps[len(s.steps)-1](w)
}

func (s *script) requests() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

func status(code int, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"status":%d}`, code)
	}
}

// sleeper records the waits and advances the clock by them.
type sleeper struct {
	mu    sync.Mutex
	clk   *clock
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits = append(s.waits, d)
	s.clk.t = s.clk.t.Add(d)
	return ctx.Err()
}

// sendEnv is a sealed cut, a TLS loopback server and a sender.
type sendEnv struct {
	a       *egress.Authority
	journal string
	req     egress.UnverifiedSeal
	cut     receipts.PrivacyCut
	srv     *httptest.Server
	script  *script
	sender  *egress.Sender
	sleeper *sleeper
	cred    string // credential file
	f       fixture
}

func newSendEnv(t *testing.T, f fixture, steps ...func(http.ResponseWriter)) *sendEnv {
	t.Helper()
	sc := &script{steps: steps}
	srv := httptest.NewTLSServer(sc)
	t.Cleanup(srv.Close)
	f.Target = srv.URL + "/v1/chat/completions"
	clk := &clock{t0}
	a, path := setup(t, clk)
	req := f.build(t)
	cut := mustSeal(t, a, req)
	sl := &sleeper{clk: clk}
	cred := filepath.Join(t.TempDir(), "credential")
	if err := os.WriteFile(cred, []byte(credCanary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return &sendEnv{
		a: a, journal: path, req: req, cut: cut, srv: srv, script: sc, sleeper: sl, cred: cred, f: f,
		sender: &egress.Sender{
			Authority: a,
			RootCAs:   srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
			Sleep:     sl.sleep,
		},
	}
}

func (e *sendEnv) delivery() egress.Delivery {
	body := e.req.Wire
	if body == nil {
		body = e.req.Export
	}
	return egress.Delivery{
		Seal: e.cut.EventID, Body: body, Target: e.f.Target, Consumer: e.f.Consumer,
		Profile: e.req.Plan.WireProfile(), CredentialFile: e.cred,
	}
}

// checkClean fails if the credential appears in the journal, the error or
// the result's JSON.
func (e *sendEnv) checkClean(t *testing.T, res egress.Result, err error) {
	t.Helper()
	j, _ := os.ReadFile(e.journal)
	if bytes.Contains(j, []byte("CANARY")) {
		t.Error("the journal holds the credential")
	}
	if err != nil && strings.Contains(err.Error(), "CANARY") {
		t.Errorf("error %q holds the credential", err)
	}
	if b, _ := json.Marshal(res); bytes.Contains(b, []byte("CANARY")) {
		t.Error("the result holds the credential")
	}
	if s := fmt.Sprintf("%+v %#v", res, res); strings.Contains(s, "CANARY") {
		t.Error("the formatted result holds the credential")
	}
}

func outcomes(res egress.Result) []string {
	var out []string
	for _, t := range res.Tries {
		out = append(out, t.Outcome)
	}
	return out
}

// TestSend429Then200: a 429 is redelivered — the same bytes, a fresh
// admission — after the wait Retry-After asks; the 200 is the answer.
func TestSend429Then200(t *testing.T) {
	f := newWireFixture()
	e := newSendEnv(t, f, status(429, "Retry-After", "7"), status(200))
	res, err := e.sender.Send(context.Background(), e.delivery())
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	e.checkClean(t, res, err)
	if len(res.Decisions) != 2 || res.Decisions[0].Use != 1 || res.Decisions[1].Use != 2 ||
		res.Decisions[0].EventID == res.Decisions[1].EventID || !res.Decisions[1].Admit {
		t.Fatalf("decisions %+v", res.Decisions)
	}
	for _, d := range res.Decisions {
		if d.BodyDigest != e.cut.WireDigest {
			t.Errorf("decision over %s, want the wire digest", d.BodyDigest)
		}
	}
	if diff := cmp.Diff([]string{egress.OutcomeRateLimited, egress.OutcomeOK}, outcomes(res)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if res.Status != 200 || string(res.Answer) != `{"status":200}` || res.Failure != "" {
		t.Errorf("result status %d answer %q failure %q", res.Status, res.Answer, res.Failure)
	}
	if diff := cmp.Diff([]time.Duration{7 * time.Second}, e.sleeper.waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	got := e.script.requests()
	if len(got) != 2 {
		t.Fatalf("server got %d requests", len(got))
	}
	for i, r := range got {
		if !bytes.Equal(r.body, e.req.Wire) {
			t.Errorf("request %d body is not the sealed wire body", i)
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range r.header {
				if !yield(k) {
					return
				}
			}
		})
		if diff := cmp.Diff([]string{"Authorization", "Content-Length", "Content-Type", "User-Agent"}, keys); diff != "" {
			t.Errorf("request %d header names (-want +got):\n%s", i, diff)
		}
		if r.header.Get("Authorization") != "Bearer "+credCanary || r.header.Get("Content-Type") != "application/json" ||
			r.header.Get("User-Agent") != egress.UserAgent {
			t.Errorf("request %d headers %v", i, r.header)
		}
		if bytes.Contains(r.body, []byte("CANARY")) {
			t.Errorf("request %d body holds the credential", i)
		}
	}
	kinds := []string{}
	for _, ent := range readJournal(t, e.journal) {
		kinds = append(kinds, ent.Kind+":"+ent.Reason)
	}
	if diff := cmp.Diff([]string{"seal:", "admit:", "delivery:rate-limited", "admit:", "delivery:ok"}, kinds); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
}

// TestSend500MaxUses: a server that always fails gets exactly max_uses
// tries, each a decision, with doubling waits, and the delivery fails
// UPSTREAM_FAILED.
func TestSend500MaxUses(t *testing.T) {
	f := newWireFixture()
	f.MaxUses = 3
	e := newSendEnv(t, f, status(500))
	res, err := e.sender.Send(context.Background(), e.delivery())
	e.checkClean(t, res, err)
	var de *egress.DeliveryError
	if !errors.As(err, &de) {
		t.Fatalf("Send: %v, want a *DeliveryError", err)
	}
	if de.Code != receipts.UpstreamFailed || de.Outcome != egress.OutcomeServerError || de.Stopped != egress.StopUsesExhausted {
		t.Errorf("error %+v", de)
	}
	if len(res.Decisions) != 3 || len(e.script.requests()) != 3 {
		t.Errorf("%d decisions, %d requests; want 3 each", len(res.Decisions), len(e.script.requests()))
	}
	if diff := cmp.Diff([]time.Duration{time.Second, 2 * time.Second}, e.sleeper.waits); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	if res.Failure != egress.OutcomeServerError || res.Stopped != egress.StopUsesExhausted || res.Status != 500 {
		t.Errorf("result %+v", res)
	}
	lines := readJournal(t, e.journal)
	last := lines[len(lines)-1]
	want := egress.Entry{EventID: de.EventID, Time: last.Time, Kind: "refusal", Command: "send", Seal: e.cut.EventID,
		Codes: []receipts.Code{receipts.UpstreamFailed}, Reason: "server-error/uses-exhausted", Status: 500}
	if diff := cmp.Diff(want, last); diff != "" {
		t.Errorf("last journal line (-want +got):\n%s", diff)
	}
}

// TestSendRetryAfter: Retry-After as an HTTP date is honoured against the
// clock; one beyond MaxWait, the seal's expiry or the context's deadline
// stops redelivery without another use.
func TestSendRetryAfter(t *testing.T) {
	date := t0.Add(90 * time.Second).Format(http.TimeFormat)
	tests := []struct {
		name    string
		header  string
		maxWait time.Duration
		ctx     func() (context.Context, context.CancelFunc)
		waits   []time.Duration
		stopped string
	}{
		{name: "date", header: date, waits: []time.Duration{90 * time.Second}},
		{name: "seconds below the backoff", header: "0", waits: []time.Duration{time.Second}},
		{name: "unreadable", header: "soon", waits: []time.Duration{time.Second}},
		{name: "beyond max wait", header: "121", stopped: egress.StopWait},
		{name: "beyond expiry", header: "3600", maxWait: 2 * time.Hour, stopped: egress.StopExpired},
		{name: "beyond the deadline", header: "60", ctx: func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 30*time.Second)
		}, stopped: egress.StopDeadline},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newWireFixture()
			e := newSendEnv(t, f, status(429, "Retry-After", tt.header), status(200))
			e.sender.MaxWait = tt.maxWait
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			res, err := e.sender.Send(ctx, e.delivery())
			if diff := cmp.Diff(tt.waits, e.sleeper.waits); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if tt.stopped == "" {
				if err != nil || len(res.Decisions) != 2 {
					t.Errorf("Send: %d decisions, %v", len(res.Decisions), err)
				}
				return
			}
			var de *egress.DeliveryError
			if !errors.As(err, &de) || de.Stopped != tt.stopped || de.Outcome != egress.OutcomeRateLimited || len(res.Decisions) != 1 {
				t.Errorf("Send: %d decisions, %v; want stopped %s after one", len(res.Decisions), err, tt.stopped)
			}
		})
	}
}

// TestSendRedirectNotFollowed: a 3xx is an unusable answer; the place it
// points to gets nothing.
func TestSendRedirectNotFollowed(t *testing.T) {
	other := &script{steps: []func(http.ResponseWriter){status(200)}}
	osrv := httptest.NewTLSServer(other)
	defer osrv.Close()
	f := newWireFixture()
	e := newSendEnv(t, f, status(307, "Location", osrv.URL+"/v1/chat/completions"))
	res, err := e.sender.Send(context.Background(), e.delivery())
	var de *egress.DeliveryError
	if !errors.As(err, &de) || de.Outcome != egress.OutcomeRedirect || de.Stopped != "" || de.Code != receipts.UpstreamFailed {
		t.Fatalf("Send: %v", err)
	}
	if len(other.requests()) != 0 || len(res.Decisions) != 1 || res.Status != 307 {
		t.Errorf("redirect followed: %d requests there, %d decisions", len(other.requests()), len(res.Decisions))
	}
}

// TestSendIgnoresEnvironmentProxy: with HTTPS_PROXY, HTTP_PROXY and
// ALL_PROXY naming a recording proxy, a delivery to a non-loopback host
// name still goes straight to its target.
func TestSendIgnoresEnvironmentProxy(t *testing.T) {
	var proxied sync.Map
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Store(r.Method+" "+r.Host, true)
		http.Error(w, "proxy", http.StatusBadGateway)
	}))
	defer proxy.Close()
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"} {
		t.Setenv(k, proxy.URL)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")

	f := newWireFixture()
	sc := &script{steps: []func(http.ResponseWriter){status(200)}}
	srv := httptest.NewTLSServer(sc)
	defer srv.Close()
	// example.com is in the test certificate; the dialer maps it to the
	// loopback server, so only a proxy could see the request elsewhere.
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	f.Target = "https://example.com:" + port + "/v1/chat/completions"
	clk := &clock{t0}
	a, _ := setup(t, clk)
	req := f.build(t)
	cut := mustSeal(t, a, req)
	cred := filepath.Join(t.TempDir(), "cred")
	os.WriteFile(cred, []byte(credCanary), 0o600)
	var dialed []string
	s := &egress.Sender{
		Authority: a,
		RootCAs:   srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed = append(dialed, addr)
			return (&net.Dialer{}).DialContext(ctx, network, srv.Listener.Addr().String())
		},
	}
	res, err := s.Send(context.Background(), egress.Delivery{Seal: cut.EventID, Body: req.Wire, Target: f.Target,
		Consumer: f.Consumer, Profile: receipts.WireOpenAIChat, CredentialFile: cred})
	if err != nil || res.Status != 200 {
		t.Fatalf("Send: %+v, %v", res, err)
	}
	if diff := cmp.Diff([]string{"example.com:" + port}, dialed); diff != "" {
		t.Errorf("dialed (-want +got):\n%s", diff)
	}
	proxied.Range(func(k, _ any) bool {
		t.Errorf("the proxy saw %v", k)
		return true
	})
	if got := sc.requests(); len(got) != 1 || got[0].host != "example.com:"+port {
		t.Errorf("target got %+v", got)
	}
}

// TestSendConnectionFailure: a try that gets no response is redelivered; a
// certificate that does not verify is final.
func TestSendConnectionFailure(t *testing.T) {
	f := newWireFixture()
	e := newSendEnv(t, f, status(200))
	fails := 1
	e.sender.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if fails > 0 {
			fails--
			return nil, syscall.ECONNREFUSED
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	res, err := e.sender.Send(context.Background(), e.delivery())
	if err != nil || len(res.Decisions) != 2 {
		t.Fatalf("Send: %d decisions, %v", len(res.Decisions), err)
	}
	if diff := cmp.Diff([]string{egress.OutcomeConnection, egress.OutcomeOK}, outcomes(res)); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}

	e2 := newSendEnv(t, newWireFixture(), status(200))
	e2.sender.RootCAs = nil // the system roots do not know the test certificate
	res, err = e2.sender.Send(context.Background(), e2.delivery())
	var de *egress.DeliveryError
	if !errors.As(err, &de) || de.Outcome != egress.OutcomeTLS || len(res.Decisions) != 1 || len(e2.script.requests()) != 0 {
		t.Errorf("unverified TLS: %d decisions, %v", len(res.Decisions), err)
	}
}

// TestSendOtherOutcomes: a 4xx and an oversized answer end the delivery
// after one try.
func TestSendOtherOutcomes(t *testing.T) {
	e := newSendEnv(t, newWireFixture(), status(401))
	res, err := e.sender.Send(context.Background(), e.delivery())
	var de *egress.DeliveryError
	if !errors.As(err, &de) || de.Outcome != egress.OutcomeClientError || len(res.Decisions) != 1 || res.Status != 401 {
		t.Errorf("401: %d decisions, %v", len(res.Decisions), err)
	}
	e = newSendEnv(t, newWireFixture(), status(200))
	e.sender.MaxAnswerBytes = 5
	res, err = e.sender.Send(context.Background(), e.delivery())
	if !errors.As(err, &de) || de.Outcome != egress.OutcomeTooLarge || len(res.Decisions) != 1 || res.Answer != nil {
		t.Errorf("too large: %d decisions, %v", len(res.Decisions), err)
	}
}

// TestSendCanceled: a context already done admits nothing.
func TestSendCanceled(t *testing.T) {
	e := newSendEnv(t, newWireFixture(), status(200))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := e.sender.Send(ctx, e.delivery())
	var de *egress.DeliveryError
	if !errors.As(err, &de) || de.Outcome != egress.OutcomeCanceled || !errors.Is(err, context.Canceled) || len(res.Decisions) != 0 {
		t.Errorf("canceled: %d decisions, %v", len(res.Decisions), err)
	}
}

// TestSendHeadersPerProfile: anthropic-messages@1 sends x-api-key and
// anthropic-version; export@1 sends no credential unless one is given.
func TestSendHeadersPerProfile(t *testing.T) {
	f := newWireFixture()
	f.Wire.Profile = receipts.WireAnthropicMessages
	e := newSendEnv(t, f, status(200))
	if _, err := e.sender.Send(context.Background(), e.delivery()); err != nil {
		t.Fatal(err)
	}
	h := e.script.requests()[0].header
	if h.Get("X-Api-Key") != credCanary || h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Authorization") != "" {
		t.Errorf("anthropic headers %v", h)
	}

	e = newSendEnv(t, newFixture(), status(200))
	d := e.delivery()
	d.CredentialFile = ""
	if _, err := e.sender.Send(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	if h := e.script.requests()[0].header; h.Get("Authorization") != "" || !bytes.Equal(e.script.requests()[0].body, []byte(exportBytes)) {
		t.Errorf("export@1 without credential: %v", h)
	}
	e = newSendEnv(t, newFixture(), status(200))
	if _, err := e.sender.Send(context.Background(), e.delivery()); err != nil {
		t.Fatal(err)
	}
	if h := e.script.requests()[0].header; h.Get("Authorization") != "Bearer "+credCanary {
		t.Errorf("export@1 with credential: %v", h)
	}
}

// TestSendRefusals: what is refused before any byte is sent — a target
// that may not be sent to, a missing or unusable credential, a first
// admission the gate refuses — consumes no use.
func TestSendRefusals(t *testing.T) {
	e := newSendEnv(t, newWireFixture(), status(200))
	tests := []struct {
		name  string
		mut   func(*egress.Delivery)
		check func(error) bool
	}{
		{"http to a remote host", func(d *egress.Delivery) { d.Target = "http://models.example.net/v1" }, isDelivery(receipts.PlanMismatch)},
		{"user info", func(d *egress.Delivery) {
			d.Target = strings.Replace(d.Target, "https://", "https://u:"+credCanary+"@", 1)
		}, isDelivery(receipts.PlanMismatch)},
		{"ftp", func(d *egress.Delivery) { d.Target = "ftp://127.0.0.1/x" }, isDelivery(receipts.PlanMismatch)},
		{"no credential", func(d *egress.Delivery) { d.CredentialFile = "" }, isCred(egress.CredNone)},
		{"credential missing", func(d *egress.Delivery) { d.CredentialFile += ".missing" }, isCred(egress.CredNotFound)},
		{"wrong consumer", func(d *egress.Delivery) { d.Consumer.ID = "other" }, func(err error) bool {
			var ee *egress.Error
			return errors.As(err, &ee) && ee.Reason == egress.ReasonConsumer
		}},
		{"wrong body", func(d *egress.Delivery) { d.Body = []byte(exportBytes) }, func(err error) bool {
			var ee *egress.Error
			return errors.As(err, &ee) && ee.Reason == egress.ReasonBody
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := e.delivery()
			tt.mut(&d)
			res, err := e.sender.Send(context.Background(), d)
			if !tt.check(err) {
				t.Errorf("Send: %v", err)
			}
			for _, dec := range res.Decisions {
				if dec.Admit {
					t.Error("admitted")
				}
			}
			e.checkClean(t, res, err)
		})
	}
	if n := len(e.script.requests()); n != 0 {
		t.Errorf("server got %d requests", n)
	}
	// Every use is still there.
	if res, err := e.sender.Send(context.Background(), e.delivery()); err != nil || res.Decisions[0].Use != 1 {
		t.Errorf("after refusals: %v", err)
	}
}

func isDelivery(code receipts.Code) func(error) bool {
	return func(err error) bool {
		var de *egress.DeliveryError
		return errors.As(err, &de) && de.Code == code
	}
}

func isCred(reason string) func(error) bool {
	return func(err error) bool {
		var ce *egress.CredentialError
		return errors.As(err, &ce) && ce.Reason == reason
	}
}

// TestSendConcurrent: senders racing on one seal admit max_uses times in
// all; the others are refused by the gate.
func TestSendConcurrent(t *testing.T) {
	f := newWireFixture()
	f.MaxUses = 2
	e := newSendEnv(t, f, status(200))
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, limited := 0, 0
	for range 6 {
		wg.Go(func() {
			_, err := e.sender.Send(context.Background(), e.delivery())
			var ee *egress.Error
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.As(err, &ee) && ee.Code == receipts.LimitExceeded:
				limited++
			default:
				t.Errorf("Send: %v", err)
			}
		})
	}
	wg.Wait()
	if ok != 2 || limited != 4 || len(e.script.requests()) != 2 {
		t.Errorf("%d sent, %d refused, %d requests; want 2, 4, 2", ok, limited, len(e.script.requests()))
	}
}

// TestReadCredential: the file rules, each refusal content-free.
func TestReadCredential(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, mode)
		return p
	}
	good := write("good", credCanary+"\r\n", 0o600)
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o700)
	tests := []struct {
		name, path, reason string
	}{
		{"good", good, ""},
		{"read only", write("ro", credCanary, 0o400), ""},
		{"missing", filepath.Join(dir, "none"), egress.CredNotFound},
		{"symlink", link, egress.CredSymlink},
		{"fifo", fifo, egress.CredNotRegular},
		{"directory", sub, egress.CredNotRegular},
		{"group readable", write("g", credCanary, 0o640), egress.CredMode},
		{"world readable", write("w", credCanary, 0o604), egress.CredMode},
		{"empty", write("e", "", 0o600), egress.CredEmpty},
		{"only a newline", write("nl", "\n", 0o600), egress.CredEmpty},
		{"two lines", write("2", credCanary+"\nx\n", 0o600), egress.CredChars},
		{"space", write("sp", "Bearer "+credCanary, 0o600), egress.CredChars},
		{"not ASCII", write("na", credCanary+"é", 0o600), egress.CredChars},
		{"too large", write("big", credCanary+strings.Repeat("k", 64<<10), 0o600), egress.CredTooLarge},
	}
	if os.Geteuid() == 0 {
		other := write("other", credCanary, 0o600)
		if err := os.Chown(other, 4242, -1); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct{ name, path, reason string }{"other owner", other, egress.CredOwner})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := egress.ReadCredential(tt.path)
			if tt.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !c.Equal([]byte(credCanary)) {
					t.Error("credential is not the file's line")
				}
				return
			}
			if !isCred(tt.reason)(err) || c != nil {
				t.Fatalf("ReadCredential: %v, want %q", err, tt.reason)
			}
			if strings.Contains(err.Error(), "CANARY") || strings.Contains(err.Error(), dir) {
				t.Errorf("error %q quotes the file or its path", err)
			}
		})
	}
}

// TestCredentialRedacts: no formatter, logger or encoder shows the
// credential, alone or inside a struct; Wipe forgets it.
func TestCredentialRedacts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c")
	os.WriteFile(p, []byte(credCanary), 0o600)
	c, err := egress.ReadCredential(p)
	if err != nil {
		t.Fatal(err)
	}
	holder := struct {
		Name string
		Cred *egress.Credential
	}{"x", c}
	var out bytes.Buffer
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		fmt.Fprintf(&out, verb+" "+verb+"\n", c, holder)
	}
	slog.New(slog.NewJSONHandler(&out, nil)).Info("m", "cred", c, "holder", holder)
	slog.New(slog.NewTextHandler(&out, nil)).Info("m", "cred", c, "holder", holder)
	if bytes.Contains(out.Bytes(), []byte("CANARY")) {
		t.Errorf("formatted output holds the credential:\n%s", out.String())
	}
	if b, err := json.Marshal(holder); err == nil || bytes.Contains(b, []byte("CANARY")) {
		t.Errorf("json.Marshal = %q, %v; want a refusal", b, err)
	}
	if _, err := c.MarshalText(); err == nil {
		t.Error("MarshalText did not refuse")
	}
	var seen []byte
	c.Reveal(func(k []byte) error {
		seen = k
		return nil
	})
	c.Wipe()
	if bytes.Contains(seen, []byte("CANARY")) || len(bytes.Trim(seen, "\x00")) != 0 {
		t.Errorf("Wipe left %q", seen)
	}
	if err := c.Reveal(func([]byte) error { return nil }); !isCred(egress.CredWiped)(err) {
		t.Errorf("Reveal after Wipe: %v", err)
	}
	var nilCred *egress.Credential
	nilCred.Wipe()
}

// TestSendStops: the other ends of redelivery — a journal that cannot
// record a try, a later admission the gate refuses, a context canceled
// during the wait — each fail the delivery with its stop word.
func TestSendStops(t *testing.T) {
	t.Run("not recorded", func(t *testing.T) {
		var e *sendEnv
		breakJournal := func(w http.ResponseWriter) {
			os.Remove(e.journal)
			os.Mkdir(e.journal, 0o700)
			status(500)(w)
		}
		e = newSendEnv(t, newWireFixture(), breakJournal)
		res, err := e.sender.Send(context.Background(), e.delivery())
		var de *egress.DeliveryError
		if !errors.As(err, &de) || de.Stopped != egress.StopNotRecorded || len(res.Decisions) != 1 {
			t.Errorf("Send: %d decisions, %v", len(res.Decisions), err)
		}
		e2 := (*sendEnv)(nil)
		breakOK := func(w http.ResponseWriter) {
			os.Remove(e2.journal)
			os.Mkdir(e2.journal, 0o700)
			status(200)(w)
		}
		e2 = newSendEnv(t, newWireFixture(), breakOK)
		res, err = e2.sender.Send(context.Background(), e2.delivery())
		if err == nil || !strings.Contains(err.Error(), "delivery not recorded") || res.Status != 200 {
			t.Errorf("Send: %+v, %v", res, err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		var e *sendEnv
		deny := func(w http.ResponseWriter) {
			e.a.DenyLocal(e.cut.WireDigest)
			status(503)(w)
		}
		e = newSendEnv(t, newWireFixture(), deny)
		res, err := e.sender.Send(context.Background(), e.delivery())
		var de *egress.DeliveryError
		if !errors.As(err, &de) || de.Stopped != egress.StopRefused || de.Outcome != egress.OutcomeServerError ||
			len(res.Decisions) != 2 || res.Decisions[1].Admit {
			t.Errorf("Send: %d decisions, %v", len(res.Decisions), err)
		}
	})
	t.Run("canceled while waiting", func(t *testing.T) {
		e := newSendEnv(t, newWireFixture(), status(429))
		ctx, cancel := context.WithCancel(context.Background())
		e.sender.Sleep = func(context.Context, time.Duration) error {
			cancel()
			return context.Canceled
		}
		res, err := e.sender.Send(ctx, e.delivery())
		var de *egress.DeliveryError
		if !errors.As(err, &de) || de.Stopped != egress.StopCanceled || !errors.Is(err, context.Canceled) || len(res.Decisions) != 1 {
			t.Errorf("Send: %d decisions, %v", len(res.Decisions), err)
		}
	})
}
