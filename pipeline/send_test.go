package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/privacycut/privacycut/egress"
	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/embedded"
)

// wireEnv is a pipeline with an embedded vault, a journal, and the
// provider stand-ins expecting credential.
type wireEnv struct {
	p          *pipeline.Pipeline
	dir        string
	vault      *embedded.Vault // closed at the end of the test (restart replaces it)
	vc         *client.Client  // the vault's client
	vocab      *pipeline.Vocabulary
	model      *standin.Server
	url        string
	credential string // the credential file
	journal    string
	conns      atomic.Int64 // connections the stand-in accepted
}

const testCredential = "sk-test-CANARY-credential-0123456789"

func newWireEnv(t *testing.T) *wireEnv {
	t.Helper()
	dir := t.TempDir()
	v, err := embedded.Open(filepath.Join(dir, "vault"), embedded.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &wireEnv{dir: dir, vault: v}
	t.Cleanup(func() { e.vault.Close() })
	vc, err := client.Dial(v.Socket())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vc.Close() })
	st, err := vc.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Profile.Profile != "accepted" {
		t.Skipf("the vault profile is not accepted here (%v): reversible cuts need it", st.Profile.Reasons)
	}
	e.vc, e.model = vc, standin.New(standin.Options{Credential: testCredential})
	e.credential, e.journal = filepath.Join(dir, "credential"), filepath.Join(dir, "journal.jsonl")
	if err := os.WriteFile(e.credential, []byte(testCredential+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(e.model)
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			e.conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	e.url = srv.URL
	key, _ := receipts.NewEvidenceKey(randomKey())
	e.p, err = pipeline.New(pipeline.Options{EvidenceKey: key, Vault: vc, Journal: egress.OpenJournal(e.journal)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.p.Close() })
	if e.vocab, err = pipeline.LoadVocabulary(examples.Vocabulary); err != nil {
		t.Fatal(err)
	}
	return e
}

// cut prepares a reversible openai-chat@1 cut of the bundled example for
// target, with maxUses uses.
func (e *wireEnv) cut(t *testing.T, target string, maxUses int) *pipeline.Cut {
	t.Helper()
	plan, err := e.p.MakePlan(e.vocab, examples.Projection, pipeline.PlanOptions{
		Consumer: receipts.Consumer{Kind: "model", ID: "triage"}, Purpose: "dependency-triage", Target: target,
		Mode: receipts.ModeReversible, MaxUses: maxUses,
		Wire: &receipts.Wire{Profile: receipts.WireOpenAIChat, Model: "m", Instruction: string(examples.Instruction), MaxOutputTokens: 2048},
	}, examples.Schema)
	if err != nil {
		t.Fatal(err)
	}
	cut, err := e.p.Prepare(context.Background(), pipeline.Input{Vocabulary: e.vocab, Plan: plan,
		Projection: examples.Projection, Schema: examples.Schema})
	if err != nil {
		t.Fatal(err)
	}
	return cut
}

// noWait is a Sleep that does not wait.
func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// ownerValues are the owner values of examples/projection.json.
var ownerValues = [][]byte{[]byte("git.corp.example/payments"), []byte("payments-core")}

// TestSendExactRequest: the request the provider stand-in received is
// byte for byte the sealed wire body, holds no owner value, and carries
// the credential in its Authorization header only; the answer is
// rehydrated and the lease consumed.
func TestSendExactRequest(t *testing.T) {
	e := newWireEnv(t)
	cut := e.cut(t, e.url+standin.OpenAIPath, 1)
	sent, err := e.p.Send(context.Background(), cut, pipeline.SendOptions{CredentialFile: e.credential, Rehydrate: true})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	reqs := e.model.Requests()
	if len(reqs) != 1 || !bytes.Equal(reqs[0].Body, cut.Wire) || sent.BodyDigest != receipts.SHA256(cut.Wire) {
		t.Fatalf("%d requests; the body is not the sealed wire body", len(reqs))
	}
	for _, v := range ownerValues {
		if bytes.Contains(reqs[0].Body, v) {
			t.Errorf("the request holds an owner value")
		}
	}
	if bytes.Contains(reqs[0].Body, []byte(testCredential)) {
		t.Errorf("the request body holds the credential")
	}
	for name, vs := range reqs[0].Header {
		for _, v := range vs {
			if bytes.Contains([]byte(v), []byte(testCredential)) && name != "Authorization" {
				t.Errorf("header %s holds the credential", name)
			}
		}
	}
	if reqs[0].Header.Get("Authorization") != "Bearer "+testCredential {
		t.Errorf("the credential is not in the Authorization header")
	}
	if sent.Rehydrated == nil || sent.LeaseState != "CONSUMED" || !bytes.Contains(sent.Rehydrated.Result, ownerValues[0]) {
		t.Fatalf("not rehydrated: lease %s", sent.LeaseState)
	}
	j, err := os.ReadFile(e.journal)
	if err != nil || bytes.Contains(j, []byte(testCredential)) {
		t.Errorf("the journal holds the credential (%v)", err)
	}
}

// TestRehydrateAfterVaultRestart: a vault restarted between a cut and its
// answer draws a new sealing key, so the evidence key sealed to the one the
// client kept from the grant is refused as stale, before anything is
// claimed; the rehydration fetches the key again and succeeds.
func TestRehydrateAfterVaultRestart(t *testing.T) {
	e := newWireEnv(t)
	before, err := e.vc.SealKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cut := e.cut(t, e.url+"/v1/chat/completions", 1)
	e.restartVault(t)
	if cached, err := e.vc.SealKey(context.Background()); err != nil || cached != before {
		t.Fatalf("the client no longer holds the grant's sealing key (%v)", err)
	}
	sent, err := e.p.Send(context.Background(), cut, pipeline.SendOptions{CredentialFile: e.credential, Rehydrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if sent.Rehydrated == nil || sent.LeaseState != "CONSUMED" || !bytes.Contains(sent.Rehydrated.Result, ownerValues[0]) {
		t.Fatalf("not rehydrated: state %s", sent.LeaseState)
	}
	after, err := e.vc.SealKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after == before {
		t.Fatal("the restarted vault kept its sealing key: the test proves nothing")
	}
}

// TestGrantAfterVaultRestart: the values of a cut made after the vault
// restarted are first sealed to the key the client kept, refused as stale
// before any lease is granted, and sealed again to the new key; the cut
// and its round trip succeed, and the vault holds no lease of the refused
// try.
func TestGrantAfterVaultRestart(t *testing.T) {
	e := newWireEnv(t)
	target := e.url + "/v1/chat/completions"
	e.cut(t, target, 1) // the client keeps the vault's status
	e.restartVault(t)
	leases := func() int {
		infos, err := e.vc.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(infos)
	}
	n := leases()
	cut := e.cut(t, target, 1)
	if got := leases(); got != n+1 {
		t.Errorf("%d leases after one cut, want %d", got, n+1)
	}
	sent, err := e.p.Send(context.Background(), cut, pipeline.SendOptions{CredentialFile: e.credential, Rehydrate: true})
	if err != nil {
		t.Fatal(err)
	}
	if sent.Rehydrated == nil || sent.LeaseState != "CONSUMED" {
		t.Fatalf("not rehydrated: state %s", sent.LeaseState)
	}
}

// restartVault closes the embedded vault and opens it again on the same
// directory (a new sealing key, the same leases), then waits for the
// client's connection to come back through a call that leaves what the
// client kept of the vault's status alone.
func (e *wireEnv) restartVault(t *testing.T) {
	t.Helper()
	if err := e.vault.Close(); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.vault, err = embedded.Open(filepath.Join(e.dir, "vault"), embedded.Options{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := e.vc.List(context.Background())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the vault's client did not reconnect: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestSentBodyDigest: Sent.BodyDigest is the sha256 of the body, taken
// from the admission when there is one and computed when the send ended
// before any (a credential file that cannot be read); the cut's WireDigest,
// taken from its seal, is too.
func TestSentBodyDigest(t *testing.T) {
	e := newWireEnv(t)
	for _, tc := range []struct {
		name, credential string
		decisions        bool
	}{
		{"admitted", e.credential, true},
		{"no credential", filepath.Join(t.TempDir(), "missing"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := e.cut(t, e.url+standin.OpenAIPath, 1)
			sent, err := e.p.Send(context.Background(), cut, pipeline.SendOptions{CredentialFile: tc.credential, Rehydrate: true})
			if (err == nil) != tc.decisions || (len(sent.Decisions) > 0) != tc.decisions {
				t.Fatalf("Send = %v with %d decisions", err, len(sent.Decisions))
			}
			if want := receipts.SHA256(cut.Wire); sent.BodyDigest != want || cut.WireDigest != want {
				t.Fatalf("body digest %q, cut's wire digest %q, want %q", sent.BodyDigest, cut.WireDigest, want)
			}
		})
	}
}

// TestSendKeepsConnections: a pipeline's deliveries to one provider share
// a connection, as a gateway's requests do; closing the pipeline closes it.
func TestSendKeepsConnections(t *testing.T) {
	e := newWireEnv(t)
	target := e.url + standin.OpenAIPath
	for uses := 1; uses <= 3; uses++ { // plans of their own
		if _, err := e.p.Send(context.Background(), e.cut(t, target, uses), pipeline.SendOptions{CredentialFile: e.credential, Rehydrate: true}); err != nil {
			t.Fatalf("Send %d: %v", uses, err)
		}
	}
	if n := e.conns.Load(); n != 1 {
		t.Errorf("three deliveries opened %d connections, want 1", n)
	}
	if len(e.model.Requests()) != 3 {
		t.Fatalf("the stand-in got %d requests, want 3", len(e.model.Requests()))
	}
}

// TestCloseSyncsSeals: a prepared cut's seal line is in the journal at
// once, and Close makes it durable: a journal Close cannot sync (its file
// gone) is Close's error.
func TestCloseSyncsSeals(t *testing.T) {
	e := newWireEnv(t)
	e.cut(t, e.url+standin.OpenAIPath, 1)
	j, err := os.ReadFile(e.journal)
	if err != nil || !bytes.Contains(j, []byte(`"kind":"seal"`)) {
		t.Fatalf("no seal line after Prepare (%v)", err)
	}
	if err := os.Remove(e.journal); err != nil {
		t.Fatal(err)
	}
	if err := e.p.Close(); err == nil {
		t.Fatal("Close synced a journal that is gone")
	}
}

// TestSendWithoutValidatedAnswer: a send that ends without a validated
// answer revokes its lease, rehydrates nothing and says why:
// 500 on every use (UPSTREAM_FAILED after max_uses decisions), a refusal,
// a truncated answer, and a target that refuses connections.
func TestSendWithoutValidatedAnswer(t *testing.T) {
	e := newWireEnv(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + closed.Addr().String() + standin.OpenAIPath
	closed.Close()
	for _, tc := range []struct {
		name, target string
		uses, tries  int
		reason       string
	}{
		{"500 on every use", e.url + "/" + standin.ServerError + standin.OpenAIPath, 3, 3, "server-error"},
		{"refusal", e.url + "/" + standin.Refusal + standin.OpenAIPath, 2, 1, "refusal"},
		{"truncated", e.url + "/" + standin.Truncated + standin.OpenAIPath, 2, 1, "truncated"},
		{"connection refused", refusedURL, 2, 2, "connection"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cut := e.cut(t, tc.target, tc.uses)
			sent, err := e.p.Send(context.Background(), cut, pipeline.SendOptions{CredentialFile: e.credential,
				Rehydrate: true, Sleep: noWait})
			var ue *pipeline.UpstreamError
			if !errors.As(err, &ue) || ue.Code != receipts.UpstreamFailed || !bytes.Contains([]byte(ue.Reason), []byte(tc.reason)) {
				t.Fatalf("Send = %v, want UPSTREAM_FAILED (%s)", err, tc.reason)
			}
			if sent.Rehydrated != nil || sent.Answer != nil {
				t.Errorf("something was rehydrated or kept as the answer")
			}
			if sent.LeaseState != "REVOKED" {
				t.Errorf("lease %s after the send, want REVOKED", sent.LeaseState)
			}
			if len(sent.Tries) != tc.tries || len(sent.Decisions) < tc.tries {
				t.Errorf("%d tries and %d decisions, want %d tries", len(sent.Tries), len(sent.Decisions), tc.tries)
			}
			for _, d := range sent.Decisions {
				if d.Admit && d.Use > tc.uses {
					t.Errorf("use %d of %d admitted", d.Use, tc.uses)
				}
			}
		})
	}
}
