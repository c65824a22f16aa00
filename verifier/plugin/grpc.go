package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
	"github.com/privacycut/privacycut/verifier/plugin/internal/verifierpb"
)

const (
	// chunkSize is the payload of one streamed message: well under gRPC's
	// default 4 MiB message limit, which is never raised.
	chunkSize = 1 << 20
	// MaxInputBytes bounds each input of a plugin request.
	MaxInputBytes = canon.DefaultMaxBytes
	// maxAnswerBytes bounds the plugin's answer as the host receives it. A
	// CutVerification@1 is a few KiB: each claim keeps a bounded number of
	// problems (four) of a few dozen bytes.
	maxAnswerBytes = 1 << 20
	// preallocMax bounds what a declared size may make the plugin allocate
	// before the bytes arrive.
	preallocMax = 256 << 20
	// maxGrantedTokens bounds the tokens of a grant reply sent in the
	// header, which must fit in one gRPC message (4 MiB): a token is some
	// 50 bytes.
	maxGrantedTokens = 1 << 16
	nInputs          = 7
	// vocabularyInput indexes the vocabulary in Header.sizes.
	vocabularyInput = int(verifierpb.Input_INPUT_VOCABULARY) - 1
)

// Errors of the plugin protocol. Their messages are fixed and content-free.
var (
	// ErrStream is returned for a request stream that breaks the protocol:
	// no header first, an unknown input, inputs out of order, more or fewer
	// bytes than declared, a malformed evidence key.
	ErrStream = errors.New("verifier: malformed request stream")
	// ErrTooLarge is returned for an input over MaxInputBytes, or a grant
	// reply (verifier.Granted) of more than 65,536 tokens.
	ErrTooLarge = errors.New("verifier: request input too large")
	// ErrReply is returned by the host when the plugin's answer is not a
	// well-formed CutVerification@1 (every claim, in order, verdict
	// consistent with the claims) or not about the request (revision,
	// export, plan and wire digests).
	ErrReply = errors.New("verifier: malformed verification from plugin")
	// ErrInternal stands for every other plugin-side failure.
	ErrInternal = errors.New("verifier: plugin internal error")
)

// statusOf maps an error to the gRPC status the plugin returns: the one
// table from errors to codes. Unknown errors become Internal with a generic
// message.
func statusOf(err error) error {
	switch {
	case errors.Is(err, ErrStream):
		return status.Error(codes.InvalidArgument, ErrStream.Error())
	case errors.Is(err, ErrTooLarge):
		// Not ResourceExhausted: the host's gRPC reports an answer over
		// maxAnswerBytes with that code.
		return status.Error(codes.OutOfRange, ErrTooLarge.Error())
	case errors.Is(err, context.Canceled):
		return status.Error(codes.Canceled, context.Canceled.Error())
	case errors.Is(err, context.DeadlineExceeded):
		return status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
	}
	return status.Error(codes.Internal, ErrInternal.Error())
}

// errorOf maps a status received by the host back to this package's errors.
func errorOf(err error) error {
	switch status.Code(err) {
	case codes.InvalidArgument:
		return ErrStream
	case codes.OutOfRange:
		return ErrTooLarge
	case codes.ResourceExhausted:
		// The plugin's answer is over maxAnswerBytes.
		return ErrReply
	case codes.Canceled:
		return context.Canceled
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	}
	return fmt.Errorf("%w (%s)", ErrInternal, status.Code(err))
}

// grpcClient is the host side of the protocol.
type grpcClient struct {
	c verifierpb.VerifierClient
	// attached: the inputs were handed to the plugin process in a sealed
	// memfd at start (Run); the request carries only the header.
	attached bool
}

func (g *grpcClient) Verify(ctx context.Context, req verifier.Request) (receipts.Verification, error) {
	return g.verify(ctx, req, false)
}

// verify is Verify, with req's vocabulary replaced by the one the plugin
// kept when keptVocabulary is set (Header.vocabulary_kept).
func (g *grpcClient) verify(ctx context.Context, req verifier.Request, keptVocabulary bool) (receipts.Verification, error) {
	if keptVocabulary {
		req.Vocabulary = nil
	}
	inputs := inputsOf(req)
	hdr := &verifierpb.Header{ExportDigest: req.ExportDigest, Lease: req.Lease, VaultSocket: req.VaultSocket, VocabularyKept: keptVocabulary}
	// A grant reply crosses as its tokens; an Issuer of another kind cannot
	// cross, and the plugin dials its own at the vault socket.
	if g, ok := req.Issuer.(*verifier.Granted); ok && g != nil && req.VaultSocket == "" {
		if len(g.Tokens) > maxGrantedTokens {
			return receipts.Verification{}, ErrTooLarge
		}
		hdr.Granted, hdr.GrantedLease, hdr.GrantedTokens = true, g.Lease, g.Tokens
	}
	if !req.Now.IsZero() {
		hdr.NowUnixNano = req.Now.UnixNano()
	}
	for _, in := range inputs {
		hdr.Sizes = append(hdr.Sizes, uint64(len(in)))
	}
	var key []byte
	if req.EvidenceKey != nil {
		if err := req.EvidenceKey.Reveal(func(b []byte) error {
			key = slices.Clone(b)
			return nil
		}); err != nil {
			return receipts.Verification{}, err
		}
	}
	defer clear(key)
	hdr.EvidenceKey = key

	// The host hashes the export (64 MiB: some 40 ms) while the plugin
	// works, not after it has answered.
	var expected answerOf
	hashed := make(chan struct{})
	go func() { expected = expect(req); close(hashed) }()
	defer func() { <-hashed }() // nothing reads req's buffers after Verify returns

	// go-plugin dials with a 2 GiB receive limit; an answer is a few KiB.
	stream, err := g.c.Verify(ctx, grpc.MaxCallRecvMsgSize(maxAnswerBytes))
	if err != nil {
		return receipts.Verification{}, errorOf(err)
	}
	send := func(m *verifierpb.VerifyRequest) bool {
		// io.EOF means the plugin ended the stream: its status comes
		// from CloseAndRecv.
		err = stream.Send(m)
		return err == nil
	}
	hdr.Attached = g.attached
	ok := send(&verifierpb.VerifyRequest{Msg: &verifierpb.VerifyRequest_Header{Header: hdr}})
	for i := 0; ok && !g.attached && i < nInputs; i++ {
		in := inputs[i]
		for off := 0; ok && off < len(in); off += chunkSize {
			ok = send(&verifierpb.VerifyRequest{Msg: &verifierpb.VerifyRequest_Chunk{Chunk: &verifierpb.Chunk{
				Input: verifierpb.Input(i + 1),
				Data:  in[off:min(off+chunkSize, len(in))],
			}}})
		}
	}
	if !ok && err != io.EOF {
		return receipts.Verification{}, errorOf(err)
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return receipts.Verification{}, errorOf(err)
	}
	v, err := fromWire(resp)
	if err != nil {
		return v, err
	}
	<-hashed
	if err := describes(v, expected); err != nil {
		return receipts.Verification{}, err
	}
	return v, nil
}

// inputsOf lists the inputs of req in the order of the Input enum.
func inputsOf(req verifier.Request) [nInputs][]byte {
	return [nInputs][]byte{req.Source, req.Export, req.Plan, req.Vocabulary, req.Receipts, req.Wire, req.OutputSchema}
}

// answerOf is what the host can recompute of a plugin's answer to req: the
// verifier revision, the digests of the export, the plan and the wire body
// (as the verifier computes them).
type answerOf struct{ exportDigest, planDigest, wireDigest string }

func expect(req verifier.Request) answerOf {
	a := answerOf{exportDigest: receipts.SHA256(req.Export)}
	a.wireDigest = a.exportDigest
	if len(req.Wire) > 0 {
		a.wireDigest = receipts.SHA256(req.Wire)
	}
	// "" when the plan has no canonical form, as the verifier writes it.
	if canonical, err := canon.Canonicalize(req.Plan); err == nil {
		a.planDigest = receipts.SHA256(canonical)
	}
	return a
}

// describes checks a plugin's answer against e. An answer about something
// else is ErrReply, whatever its verdict.
func describes(v receipts.Verification, e answerOf) error {
	if v.Verifier != verifier.Revision || v.ExportDigest != e.exportDigest || v.PlanDigest != e.planDigest || v.WireDigest != e.wireDigest {
		return ErrReply
	}
	return nil
}

// fromWire checks and converts the plugin's answer. The verdict is
// recomputed from the claims: a plugin cannot say pass over a failed or a
// missing claim.
func fromWire(r *verifierpb.VerifyResponse) (receipts.Verification, error) {
	v := receipts.Verification{
		Schema: r.GetSchema(), Verdict: r.GetVerdict(), Verifier: r.GetVerifier(), Mode: r.GetMode(),
		SourceDigest: r.GetSourceDigest(), ExportDigest: r.GetExportDigest(), PlanDigest: r.GetPlanDigest(),
		VocabularyDigest: r.GetVocabularyDigest(), ReceiptsDigest: r.GetReceiptsDigest(), WireDigest: r.GetWireDigest(),
	}
	names := receipts.Claims()
	if v.Schema != receipts.SchemaVerification || len(r.GetClaims()) != len(names) {
		return receipts.Verification{}, ErrReply
	}
	verdict := receipts.VerdictPass
	for i, c := range r.GetClaims() {
		if c.GetName() != names[i] {
			return receipts.Verification{}, ErrReply
		}
		if !c.GetOk() {
			verdict = receipts.VerdictFail
		}
		v.Claims = append(v.Claims, receipts.Claim{Name: c.GetName(), OK: c.GetOk(), Detail: c.GetDetail()})
	}
	if v.Verdict != verdict {
		return receipts.Verification{}, ErrReply
	}
	return v, nil
}

func toWire(v receipts.Verification) *verifierpb.VerifyResponse {
	r := &verifierpb.VerifyResponse{
		Schema: v.Schema, Verdict: v.Verdict, Verifier: v.Verifier, Mode: v.Mode,
		SourceDigest: v.SourceDigest, ExportDigest: v.ExportDigest, PlanDigest: v.PlanDigest,
		VocabularyDigest: v.VocabularyDigest, ReceiptsDigest: v.ReceiptsDigest, WireDigest: v.WireDigest,
	}
	for _, c := range v.Claims {
		r.Claims = append(r.Claims, &verifierpb.Claim{Name: c.Name, Ok: c.OK, Detail: c.Detail})
	}
	return r
}

// grpcServer is the plugin side of the protocol.
type grpcServer struct {
	verifierpb.UnimplementedVerifierServer
	impl verifier.Checker
	dial DialIssuer // nil: requests get no issuer
	kept keptVocabulary
}

// keptVocabulary is the vocabulary a plugin process last received in full:
// a later request may name it instead of carrying it again
// (Header.vocabulary_kept). A vocabulary is public, and a kept one is never
// changed, only replaced.
type keptVocabulary struct {
	mu sync.Mutex
	b  []byte
	ok bool
}

// use returns the vocabulary of a request: the kept one when the header
// says so (ErrStream when none was received), else voc, which it keeps (a
// copy: voc may be in a buffer cleared when the request ends).
func (k *keptVocabulary) use(kept bool, voc []byte) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if kept {
		if !k.ok {
			return nil, ErrStream
		}
		return k.b, nil
	}
	if !k.ok || !bytes.Equal(k.b, voc) {
		k.b, k.ok = bytes.Clone(voc), true
	}
	return voc, nil
}

func (s *grpcServer) Verify(stream verifierpb.Verifier_VerifyServer) error {
	req, release, err := s.receive(stream)
	defer func() {
		release()
		if req.EvidenceKey != nil {
			req.EvidenceKey.Wipe()
		}
	}()
	if err != nil {
		return statusOf(err)
	}
	if req.VaultSocket != "" && s.dial != nil {
		issuer, closeIssuer, err := s.dial(stream.Context(), req.VaultSocket)
		if err != nil {
			// The claim names it: the verification still runs.
			issuer, closeIssuer = unavailable{}, func() {}
		}
		defer closeIssuer()
		req.Issuer = issuer
	}
	v, err := s.impl.Verify(stream.Context(), req)
	if err != nil {
		return statusOf(err)
	}
	if err := stream.SendAndClose(toWire(v)); err != nil {
		return statusOf(err)
	}
	return nil
}

// unavailable is the issuer of a request whose vault could not be dialed.
type unavailable struct{}

func (unavailable) Issued(context.Context, string, []verifier.Pair) ([]bool, error) {
	return nil, verifier.ErrIssuerUnavailable
}

// attachFD is the plugin's end of the attachment channel the host passed at
// start (from PRIVACYCUT_VERIFIER_ATTACHMENT), or -1.
var attachFD = -1

// receive reads one request stream: a header, then the chunks of each input
// in order, exactly the declared sizes — or, when the header says the inputs
// are attached, opens the attachment instead. A header that names the kept
// vocabulary declares it empty, and gets the kept one (keptVocabulary).
// release frees what receive took: streamed inputs and an attachment read
// into the plugin's buffer hold owner values and are cleared; a mapped
// attachment is unmapped.
func (s *grpcServer) receive(stream verifierpb.Verifier_VerifyServer) (req verifier.Request, release func(), err error) {
	release = func() {}
	first, err := stream.Recv()
	if err != nil {
		return req, release, recvError(err)
	}
	hdr := first.GetHeader()
	if hdr == nil || len(hdr.GetSizes()) != nInputs {
		return req, release, ErrStream
	}
	for _, n := range hdr.GetSizes() {
		if n > MaxInputBytes {
			return req, release, ErrTooLarge
		}
	}
	if hdr.GetVocabularyKept() && hdr.GetSizes()[vocabularyInput] != 0 {
		return req, release, ErrStream
	}
	if k := hdr.GetEvidenceKey(); len(k) > 0 {
		key, err := receipts.NewEvidenceKey(k)
		clear(k)
		if err != nil {
			return req, release, ErrStream
		}
		req.EvidenceKey = key
	}
	req.ExportDigest = hdr.GetExportDigest()
	req.Lease, req.VaultSocket = hdr.GetLease(), hdr.GetVaultSocket()
	if hdr.GetGranted() {
		if len(hdr.GetGrantedTokens()) > maxGrantedTokens {
			return req, release, ErrTooLarge
		}
		req.Issuer = &verifier.Granted{Lease: hdr.GetGrantedLease(), Tokens: hdr.GetGrantedTokens()}
	}
	if n := hdr.GetNowUnixNano(); n != 0 {
		req.Now = time.Unix(0, n).UTC()
	}
	if hdr.GetAttached() {
		if attachFD < 0 {
			return req, release, errAttachment
		}
		if m, err := stream.Recv(); err != io.EOF {
			_ = m
			return req, release, ErrStream // nothing may follow the header
		}
		data, unmap, err := receiveAttachment(attachFD, hdr.GetSizes())
		if err != nil {
			return req, release, err
		}
		var in [nInputs][]byte
		off := uint64(0)
		for i, n := range hdr.GetSizes() {
			in[i] = data[off : off+n : off+n]
			off += n
		}
		setInputs(&req, in)
		if req.Vocabulary, err = s.kept.use(hdr.GetVocabularyKept(), req.Vocabulary); err != nil {
			return req, unmap, err
		}
		return req, unmap, nil
	}
	bufs := make([][]byte, nInputs)
	release = func() {
		for _, b := range bufs {
			clear(b)
		}
	}
	for i, n := range hdr.GetSizes() {
		bufs[i] = make([]byte, 0, min(n, preallocMax))
	}
	cur := 0
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			return req, release, recvError(err)
		}
		ch := m.GetChunk()
		if ch == nil {
			return req, release, ErrStream
		}
		i := int(ch.GetInput()) - 1
		if i < cur || i >= nInputs {
			return req, release, ErrStream
		}
		for ; cur < i; cur++ {
			if uint64(len(bufs[cur])) != hdr.GetSizes()[cur] {
				return req, release, ErrStream
			}
		}
		if uint64(len(bufs[i])+len(ch.GetData())) > hdr.GetSizes()[i] {
			return req, release, ErrStream
		}
		bufs[i] = append(bufs[i], ch.GetData()...)
		clear(ch.GetData())
	}
	for i, n := range hdr.GetSizes() {
		if uint64(len(bufs[i])) != n {
			return req, release, ErrStream
		}
	}
	setInputs(&req, [nInputs][]byte(bufs))
	if req.Vocabulary, err = s.kept.use(hdr.GetVocabularyKept(), req.Vocabulary); err != nil {
		return req, release, err
	}
	return req, release, nil
}

// setInputs sets the inputs of req from in, in the order of inputsOf.
func setInputs(req *verifier.Request, in [nInputs][]byte) {
	req.Source, req.Export, req.Plan, req.Vocabulary, req.Receipts, req.Wire, req.OutputSchema = in[0], in[1], in[2], in[3], in[4], in[5], in[6]
}

func recvError(err error) error {
	switch status.Code(err) {
	case codes.Canceled:
		return context.Canceled
	case codes.DeadlineExceeded:
		return context.DeadlineExceeded
	}
	return ErrStream
}
