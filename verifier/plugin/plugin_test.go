package plugin

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privacycut/privacycut/internal/syncbuf"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
	"github.com/privacycut/privacycut/verifier/internal/cuttest"
	"github.com/privacycut/privacycut/verifier/plugin/internal/verifierpb"
)

// grpcPair connects the gRPC adapters in process.
func grpcPair(t *testing.T) (verifier.Checker, *goplugin.GRPCClient) {
	t.Helper()
	client, server := goplugin.TestPluginGRPCConn(t, false, pluginMap(verifier.InProcess(), testDial))
	t.Cleanup(func() {
		// Stop the server first: client.Close asks the server's controller
		// to stop it, which would race with a second Stop here.
		server.Stop()
		client.Close()
	})
	raw, err := client.Dispense(pluginName)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := raw.(verifier.Checker)
	if !ok {
		t.Fatalf("dispensed %T", raw)
	}
	return c, client
}

// answersOther is a plugin that answers every request with the verifier's
// passing answer to another one.
type answersOther struct{ other verifier.Request }

func (a answersOther) Verify(context.Context, verifier.Request) (receipts.Verification, error) {
	return verifier.Verify(a.other), nil
}

// TestClientChecksAnswer: through the real gRPC adapters, a passing answer
// about another request (another export, another plan) is ErrReply, not a
// verdict; the answer about the request itself is taken.
func TestClientChecksAnswer(t *testing.T) {
	req := makeCut(t, sampleParts, cutOptions{})
	for name, other := range map[string]verifier.Request{
		"this request": req,
		"other export": makeCut(t, sampleParts[:1], cutOptions{}),
		"other plan":   makeCut(t, sampleParts, cutOptions{Allowed: []string{"module", "team", "person"}}),
	} {
		t.Run(name, func(t *testing.T) {
			if v := verifier.Verify(other); v.Verdict != receipts.VerdictPass {
				t.Fatalf("the other request does not pass: %v", v.Failed())
			}
			client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{pluginName: &grpcPlugin{impl: answersOther{other}}})
			t.Cleanup(func() { server.Stop(); client.Close() })
			raw, err := client.Dispense(pluginName)
			if err != nil {
				t.Fatal(err)
			}
			v, err := raw.(verifier.Checker).Verify(context.Background(), req)
			if name == "this request" {
				if err != nil || v.Verdict != receipts.VerdictPass {
					t.Fatalf("%v, %v", v.Verdict, err)
				}
				return
			}
			if !errors.Is(err, ErrReply) || v.Verdict != "" {
				t.Fatalf("verdict %q, err %v; want ErrReply", v.Verdict, err)
			}
		})
	}
}

// answersHuge is a plugin whose answer is over maxAnswerBytes.
type answersHuge struct{}

func (answersHuge) Verify(_ context.Context, req verifier.Request) (receipts.Verification, error) {
	v := verifier.Verify(req)
	v.Claims[0].Detail = strings.Repeat("x", 2<<20) // under gRPC's default limit, over the host's
	return v, nil
}

// TestClientAnswerTooLarge: an answer over the message limit is ErrReply
// (a bad answer), not ErrTooLarge (which says the request's inputs were).
func TestClientAnswerTooLarge(t *testing.T) {
	client, server := goplugin.TestPluginGRPCConn(t, false, map[string]goplugin.Plugin{pluginName: &grpcPlugin{impl: answersHuge{}}})
	t.Cleanup(func() { server.Stop(); client.Close() })
	raw, err := client.Dispense(pluginName)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.(verifier.Checker).Verify(context.Background(), makeCut(t, sampleParts, cutOptions{})); !errors.Is(err, ErrReply) {
		t.Fatalf("err = %v, want ErrReply", err)
	}
}

// agreeInProcess checks that a verifier.Checker gives exactly the in-process result.
func agreeInProcess(t *testing.T, c verifier.Checker, req verifier.Request) receipts.Verification {
	t.Helper()
	got, err := c.Verify(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := verifier.Verify(req)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("plugin result differs from in-process (-want +got):\n%s", diff)
	}
	return got
}

func TestGRPCAdapters(t *testing.T) {
	c, _ := grpcPair(t)
	for _, v := range loadVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			got := agreeInProcess(t, c, vectorRequest(t, v))
			if (got.Verdict == receipts.VerdictPass) != v.Pass {
				t.Errorf("verdict %s", got.Verdict)
			}
		})
	}
	t.Run("multi-chunk inputs", func(t *testing.T) {
		req := makeCut(t, []testPart{{Kind: "block", Key: "big", Text: bigText(3*chunkSize + 12345)}}, cutOptions{})
		if got := agreeInProcess(t, c, req); got.Verdict != receipts.VerdictPass {
			t.Fatalf("verdict %s: %+v", got.Verdict, got.Claims)
		}
	})
	t.Run("no key, no clock", func(t *testing.T) {
		req := makeCut(t, sampleParts, cutOptions{})
		req.EvidenceKey = nil
		req.Now = time.Time{}
		agreeInProcess(t, c, req)
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := c.Verify(ctx, makeCut(t, sampleParts, cutOptions{}))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestStreamProtocol sends malformed streams straight to the plugin's
// server and checks the status codes of the one mapping table.
func TestStreamProtocol(t *testing.T) {
	_, client := grpcPair(t)
	pb := verifierpb.NewVerifierClient(client.Conn)
	hdr := func(sizes ...uint64) *verifierpb.VerifyRequest {
		return &verifierpb.VerifyRequest{Msg: &verifierpb.VerifyRequest_Header{Header: &verifierpb.Header{Sizes: sizes}}}
	}
	chunk := func(in verifierpb.Input, data string) *verifierpb.VerifyRequest {
		return &verifierpb.VerifyRequest{Msg: &verifierpb.VerifyRequest_Chunk{Chunk: &verifierpb.Chunk{Input: in, Data: []byte(data)}}}
	}
	keptHdr := func(sizes ...uint64) *verifierpb.VerifyRequest {
		return &verifierpb.VerifyRequest{Msg: &verifierpb.VerifyRequest_Header{Header: &verifierpb.Header{Sizes: sizes, VocabularyKept: true}}}
	}
	keyHdr := &verifierpb.VerifyRequest{Msg: &verifierpb.VerifyRequest_Header{Header: &verifierpb.Header{Sizes: []uint64{0, 0, 0, 0, 0, 0, 0}, EvidenceKey: []byte("short")}}}
	tests := []struct {
		name string
		msgs []*verifierpb.VerifyRequest
		want codes.Code
	}{
		{"empty stream", nil, codes.InvalidArgument},
		{"chunk first", []*verifierpb.VerifyRequest{chunk(verifierpb.Input_INPUT_SOURCE, "x")}, codes.InvalidArgument},
		{"six sizes", []*verifierpb.VerifyRequest{hdr(0, 0, 0, 0, 0, 0)}, codes.InvalidArgument},
		{"too large", []*verifierpb.VerifyRequest{hdr(MaxInputBytes+1, 0, 0, 0, 0, 0, 0)}, codes.OutOfRange},
		{"bad key length", []*verifierpb.VerifyRequest{keyHdr}, codes.InvalidArgument},
		{"more than declared", []*verifierpb.VerifyRequest{hdr(1, 0, 0, 0, 0, 0, 0), chunk(verifierpb.Input_INPUT_SOURCE, "xy")}, codes.InvalidArgument},
		{"fewer than declared", []*verifierpb.VerifyRequest{hdr(3, 0, 0, 0, 0, 0, 0), chunk(verifierpb.Input_INPUT_SOURCE, "xy")}, codes.InvalidArgument},
		{"out of order", []*verifierpb.VerifyRequest{hdr(1, 1, 0, 0, 0, 0, 0), chunk(verifierpb.Input_INPUT_EXPORT, "x"), chunk(verifierpb.Input_INPUT_SOURCE, "x")}, codes.InvalidArgument},
		{"unknown input", []*verifierpb.VerifyRequest{hdr(0, 0, 0, 0, 0, 0, 0), chunk(verifierpb.Input(9), "x")}, codes.InvalidArgument},
		{"second header", []*verifierpb.VerifyRequest{hdr(0, 0, 0, 0, 0, 0, 0), hdr(0, 0, 0, 0, 0, 0, 0)}, codes.InvalidArgument},
		// The server has received no vocabulary yet: every request above
		// was refused before it got one.
		{"kept vocabulary, none received", []*verifierpb.VerifyRequest{keptHdr(0, 0, 0, 0, 0, 0, 0)}, codes.InvalidArgument},
		{"well-formed empty request", []*verifierpb.VerifyRequest{hdr(0, 0, 0, 0, 0, 0, 0)}, codes.OK},
		{"kept vocabulary, one received", []*verifierpb.VerifyRequest{keptHdr(0, 0, 0, 0, 0, 0, 0)}, codes.OK},
		{"kept vocabulary with a size", []*verifierpb.VerifyRequest{keptHdr(0, 0, 0, 1, 0, 0, 0), chunk(verifierpb.Input_INPUT_VOCABULARY, "x")}, codes.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stream, err := pb.Verify(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range tt.msgs {
				if err := stream.Send(m); err != nil && err != io.EOF {
					t.Fatal(err)
				}
			}
			resp, err := stream.CloseAndRecv()
			if got := status.Code(err); got != tt.want {
				t.Fatalf("code %v (%v), want %v", got, err, tt.want)
			}
			if err == nil {
				if _, err := fromWire(resp); err != nil {
					t.Fatalf("reply: %v", err)
				}
			} else if !strings.HasPrefix(status.Convert(err).Message(), "verifier: ") {
				t.Errorf("message %q", status.Convert(err).Message())
			}
		})
	}
}

// TestFromWireRefusesBadReplies: the host recomputes the verdict and
// insists on every claim, in order.
func TestFromWireRefusesBadReplies(t *testing.T) {
	good := toWire(verifier.Verify(makeCut(t, sampleParts, cutOptions{})))
	if _, err := fromWire(good); err != nil {
		t.Fatal(err)
	}
	tests := map[string]func(r *verifierpb.VerifyResponse){
		"pass over a failed claim": func(r *verifierpb.VerifyResponse) { r.Claims[3].Ok = false },
		"fail over held claims":    func(r *verifierpb.VerifyResponse) { r.Verdict = "fail" },
		"claim missing":            func(r *verifierpb.VerifyResponse) { r.Claims = r.Claims[1:] },
		"claims reordered":         func(r *verifierpb.VerifyResponse) { r.Claims[0], r.Claims[1] = r.Claims[1], r.Claims[0] },
		"no claims":                func(r *verifierpb.VerifyResponse) { r.Claims = nil },
		"wrong schema":             func(r *verifierpb.VerifyResponse) { r.Schema = "x" },
		"odd verdict":              func(r *verifierpb.VerifyResponse) { r.Verdict = "maybe" },
	}
	for name, mutate := range tests {
		t.Run(name, func(t *testing.T) {
			r := toWire(verifier.Verify(makeCut(t, sampleParts, cutOptions{})))
			mutate(r)
			if _, err := fromWire(r); !errors.Is(err, ErrReply) {
				t.Fatalf("err = %v", err)
			}
		})
	}
}

// startPlugin re-executes the test binary as the plugin process.
func startPlugin(t testing.TB, log io.Writer, extraEnv ...string) (*Client, error) {
	t.Helper()
	exe := selfExe(t)
	logger := hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Trace, Output: log})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return Start(ctx, exe, []string{Arg}, extraEnv, logger)
}

// TestSubprocess runs the verifier in its own process: a good and a
// corrupted vector, and a canary scan of everything the plugin logged.
func TestSubprocess(t *testing.T) {
	var log syncbuf.Buffer
	c, err := startPlugin(t, &log)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	vs := map[string]vector{}
	for _, v := range loadVectors(t) {
		vs[v.Name] = v
	}
	if got := agreeInProcess(t, c.Checker(), vectorRequest(t, vs["good-irreversible"])); got.Verdict != receipts.VerdictPass {
		t.Errorf("good vector: %s %+v", got.Verdict, got.Claims)
	}
	if got := agreeInProcess(t, c.Checker(), vectorRequest(t, vs["value-left"])); got.Verdict != "fail" {
		t.Errorf("corrupted vector: %s", got.Verdict)
	}

	// Canaries in every input, in verdicts that pass and that fail.
	const canary = "CANARY-b91c4e"
	parts := []testPart{{Kind: "block", Key: "k", Text: "finding GO-2023-2102 golang.org/x/net@v0.15.0 affected https://go.dev/issue/63417 owner.module=\"" + canary + "\"\n"}}
	req := makeCut(t, parts, cutOptions{})
	agreeInProcess(t, c.Checker(), req)
	bad := req
	bad.Export = bytes.Replace(req.Export, []byte("redacted:module:1"), []byte(canary), 1)
	bad.Source = append(bytes.Clone(req.Source), []byte(canary)...)
	agreeInProcess(t, c.Checker(), bad)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	out := log.String()
	if !strings.Contains(out, stderrMarker) {
		t.Fatalf("the host logger did not capture the plugin's stderr: %q", out)
	}
	if strings.Contains(out, canary) || strings.Contains(out, "git.corp.example") || strings.Contains(out, "payments core") {
		t.Fatalf("plugin log holds input:\n%s", out)
	}
}

// TestSubprocessHardenFailure: a failing Harden hook stops the plugin
// before it serves.
func TestSubprocessHardenFailure(t *testing.T) {
	var log syncbuf.Buffer
	c, err := startPlugin(t, &log, hardenFailEnv+"=1")
	if err == nil {
		c.Close()
		t.Fatal("plugin started although hardening failed")
	}
	if !errors.Is(err, ErrStart) {
		t.Fatalf("err = %v", err)
	}
}

func TestStartRefusesMissingExecutable(t *testing.T) {
	_, err := Start(context.Background(), "/nonexistent/verifier-plugin", nil, nil, nil)
	if !errors.Is(err, ErrStart) {
		t.Fatalf("err = %v", err)
	}
}

// TestStatusRoundTrip: each protocol error the plugin returns is the same
// error on the host, and no status is read as another's error.
func TestStatusRoundTrip(t *testing.T) {
	for _, e := range []error{ErrStream, ErrTooLarge, context.Canceled, context.DeadlineExceeded} {
		if got := errorOf(statusOf(e)); got != e {
			t.Errorf("%v came back as %v", e, got)
		}
	}
	if got := errorOf(statusOf(errors.New("secret detail"))); !errors.Is(got, ErrInternal) || strings.Contains(got.Error(), "secret") {
		t.Errorf("an unknown error came back as %v", got)
	}
	// gRPC's own code for an answer over the host's receive limit.
	if got := errorOf(status.Error(codes.ResourceExhausted, "grpc: received message larger than max")); got != ErrReply {
		t.Errorf("ResourceExhausted came back as %v", got)
	}
}

// TestDescribes: the host refuses a plugin's answer whose revision, export
// digest or plan digest is not the request's (ErrReply), and takes the
// verifier's own answer to the same request.
func TestDescribes(t *testing.T) {
	req := makeCut(t, sampleParts, cutOptions{})
	v := verifier.Verify(req)
	if err := describes(v, expect(req)); err != nil {
		t.Fatalf("the verifier's own answer: %v", err)
	}
	for name, change := range map[string]func(*receipts.Verification){
		"revision":       func(v *receipts.Verification) { v.Verifier = "verifier/0" },
		"export digest":  func(v *receipts.Verification) { v.ExportDigest = receipts.SHA256([]byte("other")) },
		"plan digest":    func(v *receipts.Verification) { v.PlanDigest = receipts.SHA256([]byte("other")) },
		"no plan digest": func(v *receipts.Verification) { v.PlanDigest = "" },
		"wire digest":    func(v *receipts.Verification) { v.WireDigest = receipts.SHA256([]byte("other")) },
	} {
		w := v
		change(&w)
		if err := describes(w, expect(req)); err != ErrReply {
			t.Errorf("%s changed: %v, want ErrReply", name, err)
		}
	}
	// A plan without a canonical form has no digest on either side.
	req.Plan = []byte("{")
	if err := describes(verifier.Verify(req), expect(req)); err != nil {
		t.Errorf("an undecodable plan: %v", err)
	}
}

// TestPluginIssuer: the plugin dials its own token issuer at the request's
// vault socket (Options.DialIssuer): a genuine reversible cut passes and a
// forged one fails token-consistency as in process; a socket it cannot
// dial, and a request that names none, fail the claim saying why.
func TestPluginIssuer(t *testing.T) {
	c, _ := grpcPair(t)
	vs := map[string]vector{}
	for _, v := range loadVectors(t) {
		vs[v.Name] = v
	}
	if got := agreeInProcess(t, c, vectorRequest(t, vs["good-reversible"])); got.Verdict != receipts.VerdictPass {
		t.Fatalf("genuine cut: failed %v", got.Failed())
	}
	if got := agreeInProcess(t, c, vectorRequest(t, vs["reversible-tokens-swapped-consistently"])); !slices.Equal(got.Failed(), []string{receipts.ClaimTokenConsistent}) {
		t.Fatalf("forged cut: failed %v", got.Failed())
	}
	for _, tc := range []struct {
		name   string
		socket string
		detail string
	}{
		{"vault not dialed", filepath.Join(t.TempDir(), "missing.sock"), "token issuer: unavailable"},
		{"no vault socket", "", "no issuer given"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := vectorRequest(t, vs["good-reversible"])
			req.VaultSocket = tc.socket
			v, err := c.Verify(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(v.Failed(), []string{receipts.ClaimTokenConsistent}) {
				t.Fatalf("failed %v", v.Failed())
			}
			if d := v.Claims[4].Detail; !strings.Contains(d, tc.detail) {
				t.Fatalf("token-consistency %q, want %q", d, tc.detail)
			}
		})
	}
}

// TestPluginGranted: a host's grant reply (verifier.Granted) crosses to
// the plugin as its tokens, and answers there as in process.
func TestPluginGranted(t *testing.T) {
	c, _ := grpcPair(t)
	honest := []string{"pcv:abcdefghij:module:qqqqqqqqqqqqqqqqqqqb", "pcv:abcdefghij:team:qqqqqqqqqqqqqqqqqqqb", "pcv:abcdefghij:person:qqqqqqqqqqqqqqqqqqqb"}
	for _, tc := range []struct {
		name   string
		tokens []string
		pass   bool
	}{
		{"the grant", honest, true},
		{"another order", []string{honest[1], honest[0], honest[2]}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := makeCut(t, sampleParts, cutOptions{Mode: receipts.ModeReversible})
			req.Issuer, req.Lease = &verifier.Granted{Lease: cuttest.Lease, Tokens: tc.tokens}, cuttest.Lease
			got := agreeInProcess(t, c, req)
			if (got.Verdict == receipts.VerdictPass) != tc.pass {
				t.Fatalf("verdict %s, failed %v", got.Verdict, got.Failed())
			}
		})
	}
	req := makeCut(t, sampleParts, cutOptions{Mode: receipts.ModeReversible})
	req.Issuer, req.Lease = &verifier.Granted{Lease: cuttest.Lease, Tokens: make([]string, maxGrantedTokens+1)}, cuttest.Lease
	if _, err := c.Verify(context.Background(), req); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a grant over the limit: %v", err)
	}
}
