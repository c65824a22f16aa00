package egress_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/wire"
)

// TestSendToStandins: a wire body rendered, sealed and sent to the
// provider stand-ins over verified TLS: what the stand-in received is the
// sealed body byte for byte, with the credential in its header only; a 429
// is redelivered; a refusal or truncation is an unusable answer.
func TestSendToStandins(t *testing.T) {
	for _, profile := range []string{receipts.WireOpenAIChat, receipts.WireAnthropicMessages} {
		for _, tt := range []struct {
			mode      string
			decisions int
			reason    string // wire.ReadAnswer's, "" for a usable answer
		}{
			{standin.Honest, 1, ""},
			{"rate-limited-1", 2, ""},
			{standin.Refusal, 1, wire.ReasonRefusal},
			{standin.Truncated, 1, wire.ReasonTruncated},
		} {
			t.Run(profile+"/"+tt.mode, func(t *testing.T) {
				s := standin.New(standin.Options{Credential: credCanary, RetryAfter: "2"})
				srv := httptest.NewTLSServer(s)
				defer srv.Close()
				f := newWireFixture()
				f.Wire.Profile = profile
				path := standin.OpenAIPath
				if profile == receipts.WireAnthropicMessages {
					path = standin.AnthropicPath
				}
				f.Target = srv.URL + "/" + tt.mode + path
				clk := &clock{t0}
				a, journal := setup(t, clk)
				req := f.build(t)
				cut := mustSeal(t, a, req)
				cred := filepath.Join(t.TempDir(), "credential")
				os.WriteFile(cred, []byte(credCanary+"\n"), 0o600)
				sl := &sleeper{clk: clk}
				sender := &egress.Sender{Authority: a, Sleep: sl.sleep,
					RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
				res, err := sender.Send(context.Background(), egress.Delivery{
					Seal: cut.EventID, Body: req.Wire, Target: f.Target, Consumer: f.Consumer,
					Profile: profile, CredentialFile: cred,
				})
				if err != nil {
					t.Fatalf("Send: %v", err)
				}
				if len(res.Decisions) != tt.decisions {
					t.Errorf("%d decisions, want %d", len(res.Decisions), tt.decisions)
				}
				got := s.Requests()
				if len(got) != tt.decisions {
					t.Fatalf("stand-in got %d requests", len(got))
				}
				for _, r := range got {
					if !bytes.Equal(r.Body, req.Wire) {
						t.Error("the stand-in received other bytes than the sealed body")
					}
					var inHeader int
					for k, vs := range r.Header {
						for _, v := range vs {
							if strings.Contains(v, credCanary) {
								inHeader++
								if k != "Authorization" && k != "X-Api-Key" {
									t.Errorf("credential in header %s", k)
								}
							}
						}
					}
					if inHeader != 1 || bytes.Contains(r.Body, []byte("CANARY")) {
						t.Errorf("credential in %d headers, or in the body", inHeader)
					}
				}
				if j, _ := os.ReadFile(journal); bytes.Contains(j, []byte("CANARY")) {
					t.Error("journal holds the credential")
				}
				_, err = wire.ReadAnswer(profile, res.Status, res.Answer)
				if tt.reason == "" {
					if err != nil {
						t.Errorf("ReadAnswer: %v", err)
					}
					return
				}
				var ae *wire.AnswerError
				if !errors.As(err, &ae) || ae.Reason != tt.reason || ae.Code() != receipts.UpstreamFailed {
					t.Errorf("ReadAnswer: %v, want %s", err, tt.reason)
				}
			})
		}
	}
}

// BenchmarkSendStandin measures one delivery of a sealed openai-chat@1
// body to the stand-in over loopback TLS, admission and journal included,
// against posting the same bytes with a bare client.
func BenchmarkSendStandin(b *testing.B) {
	s := standin.New(standin.Options{})
	srv := httptest.NewTLSServer(s)
	defer srv.Close()
	pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	f := newWireFixture()
	f.Target = srv.URL + standin.OpenAIPath
	f.MaxUses = 1 << 30
	cred := filepath.Join(b.TempDir(), "credential")
	os.WriteFile(cred, []byte(credCanary), 0o600)
	clk := &clock{t0}
	a, _ := setup(b, clk)
	req := f.build(b)
	cut := mustSeal(b, a, req)
	b.Run("sender", func(b *testing.B) {
		sender := &egress.Sender{Authority: a, RootCAs: pool}
		d := egress.Delivery{Seal: cut.EventID, Body: req.Wire, Target: f.Target, Consumer: f.Consumer,
			Profile: receipts.WireOpenAIChat, CredentialFile: cred}
		for b.Loop() {
			if _, err := sender.Send(context.Background(), d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		for b.Loop() {
			tr := srv.Client().Transport.(*http.Transport).Clone()
			c := &http.Client{Transport: tr}
			r, _ := http.NewRequest(http.MethodPost, f.Target, bytes.NewReader(req.Wire))
			r.Header.Set("Authorization", "Bearer "+credCanary)
			r.Header.Set("Content-Type", "application/json")
			resp, err := c.Do(r)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			tr.CloseIdleConnections()
		}
	})
}
