package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/internal/unixsock"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/internal/rpc"
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const helperEnv = "VAULT_SERVER_TEST_HELPER_SOCKET"

func TestMain(m *testing.M) {
	if sock := os.Getenv(helperEnv); sock != "" {
		os.Exit(helper(sock))
	}
	if err := harden.Apply(); err != nil {
		fmt.Fprintln(os.Stderr, "server tests: cannot harden the test process:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// helper runs in a child process (as another uid): it calls Status and
// prints "ok" or "refused: <sentinel>".
func helper(sock string) int {
	c, err := client.Dial(sock)
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Status(ctx); err != nil {
		switch {
		case errors.Is(err, vaultapi.ErrUnavailable):
			fmt.Println("refused: unavailable")
		case errors.Is(err, vaultapi.ErrPeerRejected):
			fmt.Println("refused: peer")
		default:
			fmt.Println("refused: other:", err)
		}
		return 0
	}
	fmt.Println("ok")
	return 0
}

var ctx = context.Background()

type fixture struct {
	v      *service.Vault
	srv    *Server
	c      *client.Client
	sock   string
	keyDir string
}

func start(t testing.TB, opt Options) *fixture { return startIn(t, t.TempDir(), opt) }

func startIn(t testing.TB, d string, opt Options) *fixture {
	t.Helper()
	v, err := service.Open(service.Options{StateDir: filepath.Join(d, "state"), KeyDir: filepath.Join(d, "keys"),
		Station: "station-a", MaxLease: time.Hour, ArenaSize: 1 << 20, SweepInterval: -1})
	if err != nil {
		t.Fatalf("service.Open: %v", err)
	}
	if p := v.Prove(); !p.Accepted() {
		t.Fatalf("profile not accepted: %v", p.Reasons)
	}
	sock := filepath.Join(d, "run", "vault.sock")
	l, err := Listen(sock)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	srv := New(v, opt)
	go srv.Serve(l)
	c, err := client.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Close()
		srv.Stop()
		v.Close()
	})
	return &fixture{v: v, srv: srv, c: c, sock: sock, keyDir: filepath.Join(d, "keys")}
}

// rawClient is a bare gRPC client of the socket, for streams the client
// package would never send.
func rawClient(t testing.TB, sock string) vaultpb.VaultClient {
	t.Helper()
	conn, err := grpc.NewClient("unix:"+sock,
		grpc.WithTransportCredentials(&rpc.Creds{Trust: func(uint32) bool { return true }}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(rpc.MaxMessage), grpc.MaxCallSendMsgSize(rpc.MaxMessage)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return vaultpb.NewVaultClient(conn)
}

func hexDigest(prefix string) string {
	b := make([]byte, 32)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

func canaries(n, size int) []seal.Pair {
	var ps []seal.Pair
	for i := range n {
		b := make([]byte, 6)
		rand.Read(b)
		v := append([]byte("VAULTD-CANARY-api-"+hex.EncodeToString(b)+"-"), bytes.Repeat([]byte{'z'}, size)...)
		ps = append(ps, seal.Pair{Category: service.Categories[i%7], Value: v})
	}
	return ps
}

func (f *fixture) grant(t testing.TB, ps []seal.Pair) service.CreateResult {
	t.Helper()
	return f.grantSchema(t, ps, nil)
}

// grantSchema grants a lease bound to the digest of the output schema
// document schema (none when nil).
func (f *fixture) grantSchema(t testing.TB, ps []seal.Pair, schema []byte) service.CreateResult {
	t.Helper()
	digest := ""
	if schema != nil {
		s, err := rehydrate.ParseSchema(schema)
		if err != nil {
			t.Fatalf("ParseSchema: %v", err)
		}
		digest = s.Digest()
	}
	sealed, err := f.c.Seal(ctx, ps)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	res, err := f.c.CreateLease(ctx, service.CreateRequest{Run: "run-1", Attempt: 1, Target: "https://model.example/v1",
		Purpose: "triage", SourceDigest: hexDigest("hmac-sha256:"), RemoteDeadlineS: 60, ReturnWindowS: 60,
		Lifetime: 30 * time.Minute, Values: sealed, OutputSchemaDigest: digest})
	if err != nil {
		t.Fatalf("CreateLease: %v", err)
	}
	return res
}

func exportOf(tokens []string) []byte {
	return vaulttest.Export(tokens)
}

func (f *fixture) bind(t testing.TB, res service.CreateResult) {
	t.Helper()
	ex := exportOf(res.Tokens)
	if err := f.c.Bind(ctx, res.Lease.ID, "evt:seal", hexDigest("hmac-sha256:"), receipts.SHA256(ex), ex); err != nil {
		t.Fatalf("Bind: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	f := start(t, Options{})
	st, err := f.c.Status(ctx)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if !st.Profile.Accepted() || st.Station != "station-a" || st.Epoch != 1 || st.MaxLease != time.Hour || st.SealKey == [32]byte{} {
		t.Fatalf("status: %+v", st)
	}
	ps := canaries(3, 10)
	res := f.grant(t, ps)
	if len(res.Tokens) != 3 || res.Lease.Principal != fmt.Sprintf("uid:%d", os.Getuid()) {
		t.Fatalf("grant: %d tokens, principal %s", len(res.Tokens), res.Lease.Principal)
	}
	f.bind(t, res)
	cr := service.ClaimRequest{Run: "run-1", Attempt: 1, Station: "station-a", ReturnDigest: hexDigest("sha256:")}
	c1, err := f.c.Claim(ctx, res.Lease.ID, cr)
	if err != nil || c1.Repeated || c1.Lease.State != lease.Claimed {
		t.Fatalf("Claim: %+v %v", c1, err)
	}
	c2, err := f.c.Claim(ctx, res.Lease.ID, cr)
	if err != nil || !c2.Repeated {
		t.Fatalf("repeated Claim: %+v %v", c2, err)
	}
	l, err := f.c.Consume(ctx, res.Lease.ID, cr)
	if err != nil || l.State != lease.Consumed || !l.KeyDestroyed {
		t.Fatalf("Consume: %v %v", l.State, err)
	}
	other := f.grant(t, ps)
	if l, err := f.c.Revoke(ctx, other.Lease.ID); err != nil || l.State != lease.Revoked {
		t.Fatalf("Revoke: %v %v", l.State, err)
	}
	infos, err := f.c.List(ctx)
	if err != nil || len(infos) != 2 {
		t.Fatalf("List: %d, %v", len(infos), err)
	}
	in, err := f.c.Show(ctx, res.Lease.ID)
	if err != nil || in.Key != service.KeyDestroyed || in.Lease.State != lease.Consumed {
		t.Fatalf("Show: %+v %v", in, err)
	}
	st, _ = f.c.Status(ctx)
	if diff := cmp.Diff(map[string]int{"CONSUMED": 1, "REVOKED": 1}, st.Leases); diff != "" {
		t.Errorf("lease counts (-want +got):\n%s", diff)
	}
	r, err := f.c.Rotate(ctx)
	if err != nil || r.From != 1 || r.To != 2 {
		t.Errorf("Rotate: %+v %v", r, err)
	}
	// Every call so far reached a handler; none was refused.
	if f.srv.Rejected() != 0 || f.srv.Calls() < 10 {
		t.Errorf("calls %d rejected %d", f.srv.Calls(), f.srv.Rejected())
	}
}

// TestStreams moves a backup of several chunks through Backup, Restore and
// ProveErasure (K2 over the socket, with its negative control).
func TestStreams(t *testing.T) {
	f := start(t, Options{})
	var all []seal.Pair
	var ids []service.CreateResult
	for range 3 {
		ps := canaries(6, 10<<10)
		all = append(all, ps...)
		r := f.grant(t, ps)
		f.bind(t, r)
		ids = append(ids, r)
	}
	var buf bytes.Buffer
	st, err := f.c.Backup(ctx, &buf)
	if err != nil {
		t.Fatalf("Backup: %v", err)
	}
	if st.Leases != 3 || st.Maps != 3 || st.Bytes != int64(buf.Len()) || buf.Len() < 2*rpc.ChunkSize {
		t.Fatalf("backup stats %+v for %d bytes", st, buf.Len())
	}
	vals := make([][]byte, len(all))
	for i, p := range all {
		vals[i] = p.Value
	}
	if hits := vaulttest.Find(buf.Bytes(), vals); len(hits) > 0 {
		t.Errorf("backup holds values %v", hits)
	}
	mat, err := vaulttest.ReadMaterial(f.keyDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range mat.All() {
		if bytes.Contains(buf.Bytes(), k) {
			t.Errorf("backup holds key material")
		}
	}
	pre := buf.Bytes()
	rep, err := f.c.ProveErasure(ctx, bytes.NewReader(pre), ids[0].Lease.ID, ids[1].Lease.ID)
	if err != nil || rep.Proven || !rep.Destroyed.Decrypts {
		t.Fatalf("control proof: %+v %v", rep, err)
	}
	if _, err := f.c.Revoke(ctx, ids[0].Lease.ID); err != nil {
		t.Fatal(err)
	}
	rep, err = f.c.ProveErasure(ctx, bytes.NewReader(pre), ids[0].Lease.ID, ids[1].Lease.ID)
	if err != nil || !rep.Proven || rep.Destroyed.Code != receipts.LeaseUnrecoverable || !rep.Live.Decrypts {
		t.Fatalf("proof: %+v %v", rep, err)
	}
	rs, err := f.c.Restore(ctx, bytes.NewReader(pre))
	if err != nil || rs.Skipped != 3 {
		t.Fatalf("Restore over the same store: %+v %v", rs, err)
	}
	bad := bytes.Clone(pre)
	bad[len(bad)/2] ^= 1
	_, err = f.c.Restore(ctx, bytes.NewReader(bad))
	if vaultapi.CodeOf(err) != receipts.MalformedRecord {
		t.Errorf("damaged restore: %v", err)
	}
}

// TestErrorsCrossTheSocket: refusal codes and sentinels survive the wire.
func TestErrorsCrossTheSocket(t *testing.T) {
	f := start(t, Options{})
	res := f.grant(t, canaries(1, 1))
	cr := service.ClaimRequest{Run: "run-1", Attempt: 1, Station: "station-a", ReturnDigest: hexDigest("sha256:")}
	_, err := f.c.Claim(ctx, res.Lease.ID, cr) // unbound
	if vaultapi.CodeOf(err) != receipts.LeaseNotActive {
		t.Errorf("claim of an unbound lease: %v", err)
	}
	f.bind(t, res)
	if _, err := f.c.Claim(ctx, res.Lease.ID, cr); err != nil {
		t.Fatal(err)
	}
	cr2 := cr
	cr2.ReturnDigest = hexDigest("sha256:")
	_, err = f.c.Claim(ctx, res.Lease.ID, cr2)
	if vaultapi.CodeOf(err) != receipts.LeaseClaimConflict {
		t.Errorf("conflicting claim: %v", err)
	}
	if _, err := f.c.Show(ctx, "pcl:"+strings.Repeat("a", 26)); !errors.Is(err, vaultapi.ErrNotFound) {
		t.Errorf("Show of an unknown lease: %v", err)
	}
	if _, err := f.c.Show(ctx, "junk"); !errors.Is(err, vaultapi.ErrInvalid) {
		t.Errorf("Show of a malformed id: %v", err)
	}
	ex := exportOf(res.Tokens)
	if err := f.c.Bind(ctx, res.Lease.ID, "evt:x", hexDigest("hmac-sha256:"), hexDigest("sha256:"), ex); !errors.Is(err, vaultapi.ErrInvalid) {
		t.Errorf("Bind with a wrong digest: %v", err)
	}
	// A refused export crosses with its code and position.
	r2 := f.grant(t, canaries(2, 1))
	swapped := exportOf([]string{r2.Tokens[1], r2.Tokens[0]})
	err = f.c.Bind(ctx, r2.Lease.ID, "evt:x", hexDigest("hmac-sha256:"), receipts.SHA256(swapped), swapped)
	var ref *receipts.Refusal
	if vaultapi.CodeOf(err) != receipts.PlanMismatch || !errors.As(err, &ref) || ref.Kind != "export" || ref.Part != 0 || ref.Line != 1 {
		t.Errorf("Bind of a swapped export: %v (%+v)", err, ref)
	}
	// The profile gate crosses too.
	t.Setenv("GOTRACEBACK", "crash")
	f.v.Prove()
	sealed, _ := seal.Seal(mustStatus(t, f).SealKey, canaries(1, 1))
	_, err = f.c.CreateLease(ctx, service.CreateRequest{Run: "r", Attempt: 1, Target: "https://t", Purpose: "p",
		SourceDigest: hexDigest("hmac-sha256:"), Values: sealed})
	if vaultapi.CodeOf(err) != receipts.VaultProfileNotProven {
		t.Errorf("CreateLease with the profile not proven: %v", err)
	}
	if _, err := f.c.Rotate(ctx); vaultapi.CodeOf(err) != receipts.VaultProfileNotProven {
		t.Errorf("Rotate with the profile not proven: %v", err)
	}
}

func mustStatus(t *testing.T, f *fixture) service.Status {
	t.Helper()
	st, err := f.c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestInterceptorRequiresPeer: a call whose context has no peer
// credentials is refused before the handler, and not counted.
func TestInterceptorRequiresPeer(t *testing.T) {
	srv := New(nil, Options{AllowUIDs: []uint32{0}})
	called := false
	_, err := srv.unary(ctx, nil, nil, func(context.Context, any) (any, error) { called = true; return nil, nil })
	if called || status.Code(err) != codes.PermissionDenied || srv.Calls() != 0 {
		t.Errorf("interceptor without peer: called %v, %v, calls %d", called, err, srv.Calls())
	}
}

func TestListen(t *testing.T) {
	d := t.TempDir()
	sock := filepath.Join(d, "run", "v.sock")
	l, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(sock)
	di, _ := os.Stat(filepath.Dir(sock))
	if fi.Mode().Perm() != 0o600 || fi.Mode()&os.ModeSocket == 0 || di.Mode().Perm() != 0o700 {
		t.Errorf("socket %v dir %v", fi.Mode(), di.Mode())
	}
	if _, err := Listen(sock); !errors.Is(err, unixsock.ErrInUse) {
		t.Errorf("second Listen on a live socket: %v", err)
	}
	// A stale socket (nobody listening) is replaced.
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	l2, err := Listen(sock)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	l2.Close()
	// Not a socket, or a directory open to others: refused.
	os.WriteFile(sock, []byte("x"), 0o600)
	if _, err := Listen(sock); err == nil {
		t.Errorf("Listen over a regular file succeeded")
	}
	wide := filepath.Join(d, "wide")
	os.Mkdir(wide, 0o755)
	os.Chmod(wide, 0o755)
	if _, err := Listen(filepath.Join(wide, "v.sock")); err == nil {
		t.Errorf("Listen in a 0755 directory succeeded")
	}
	// A 0700 directory of another uid: its owner could swap the socket.
	if os.Geteuid() == 0 {
		other := filepath.Join(d, "other")
		os.Mkdir(other, 0o700)
		if err := os.Chown(other, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := Listen(filepath.Join(other, "v.sock")); err == nil || !strings.Contains(err.Error(), "not owned") {
			t.Errorf("Listen in another uid's 0700 directory: %v", err)
		}
	}
}

// TestPeerCredentials: a connection from a uid not on the allow-list is
// refused in the transport handshake, before any handler runs; the same
// helper on the allow-list gets through (positive control).
func TestPeerCredentials(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test switches a child process to uid 65534")
	}
	const nobody = 65534
	// The helper must be able to reach the binary and the socket: give it
	// a world-readable copy of the test binary and open the socket's
	// directory and the socket itself (test only), so that the only thing
	// that can refuse it is SO_PEERCRED.
	dir, err := os.MkdirTemp("", "vault-server-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) }) // runs after the fixtures' cleanups
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "server.test")
	src, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	run := func(f *fixture) string {
		os.Chmod(filepath.Dir(f.sock), 0o711)
		os.Chmod(f.sock, 0o666)
		cmd := exec.Command(bin)
		cmd.Env = []string{helperEnv + "=" + f.sock}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}

	sub := func(name string) string {
		p := filepath.Join(dir, name)
		os.Mkdir(p, 0o755)
		os.Chmod(p, 0o755)
		return p
	}
	denied := startIn(t, sub("denied"), Options{}) // allow-list: root only
	if out := run(denied); !strings.HasPrefix(out, "refused:") {
		t.Fatalf("uid %d got through: %s", nobody, out)
	}
	if denied.srv.Calls() != 0 || denied.srv.Rejected() == 0 {
		t.Errorf("refused peer: %d calls reached a handler, %d rejections", denied.srv.Calls(), denied.srv.Rejected())
	}

	allowed := startIn(t, sub("allowed"), Options{AllowUIDs: []uint32{0, nobody}})
	if out := run(allowed); out != "ok" {
		t.Fatalf("allowed uid %d refused: %s", nobody, out)
	}
	if allowed.srv.Calls() != 1 || allowed.srv.Rejected() != 0 {
		t.Errorf("allowed peer: %d calls, %d rejections", allowed.srv.Calls(), allowed.srv.Rejected())
	}
}

// TestSealKeyCache: Seal reuses the key of the client's last Status; after
// the vault restarts (a new key pair) CreateLease refuses the stale seal
// (ErrStaleKey) and the next Seal fetches the new key.
func TestSealKeyCache(t *testing.T) {
	d := t.TempDir()
	f1 := startIn(t, d, Options{})
	c, err := client.Dial(f1.sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	old, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	f1.c.Close()
	f1.srv.Stop()
	f1.v.Close()
	f2 := startIn(t, d, Options{})
	if mustStatus(t, f2).SealKey == old.SealKey {
		t.Fatal("a restarted vault kept its seal key")
	}
	create := func() error {
		sealed, err := c.Seal(ctx, canaries(2, 4))
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		if sealed.Recipient != old.SealKey && sealed.Recipient != mustStatus(t, f2).SealKey {
			t.Fatal("sealed to a key no vault published")
		}
		_, err = c.CreateLease(ctx, service.CreateRequest{Run: "r", Attempt: 1, Target: "https://model.example/v1",
			Purpose: "p", SourceDigest: hexDigest("hmac-sha256:"), RemoteDeadlineS: 60, ReturnWindowS: 60,
			Lifetime: 30 * time.Minute, Values: sealed})
		return err
	}
	if err := create(); !errors.Is(err, vaultapi.ErrStaleKey) {
		t.Fatalf("CreateLease sealed to the old boot's key: %v, want ErrStaleKey", err)
	}
	if err := create(); err != nil {
		t.Fatalf("CreateLease after the key was fetched again: %v", err)
	}
}

// TestIssuedAcrossTheSocket: the verifier's question through the client:
// the values cross sealed, the answer is one bool per pair, and a lease
// that ended is LEASE_NOT_ACTIVE.
func TestIssuedAcrossTheSocket(t *testing.T) {
	f := start(t, Options{})
	ps := canaries(3, 1)
	res := f.grant(t, ps)
	sealed, err := f.c.Seal(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.c.Issued(ctx, res.Lease.ID, sealed, res.Tokens)
	if err != nil || !cmp.Equal(got, []bool{true, true, true}) {
		t.Fatalf("Issued: %v, %v", got, err)
	}
	swapped := []string{res.Tokens[1], res.Tokens[0], res.Tokens[2]}
	got, err = f.c.Issued(ctx, res.Lease.ID, sealed, swapped)
	if err != nil || !cmp.Equal(got, []bool{false, false, true}) {
		t.Fatalf("Issued of a swap: %v, %v", got, err)
	}
	if _, err := f.c.Issued(ctx, res.Lease.ID, sealed, res.Tokens[:1]); !errors.Is(err, vaultapi.ErrInvalid) {
		t.Errorf("Issued with fewer tokens: %v", err)
	}
	if _, err := f.c.Revoke(ctx, res.Lease.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.c.Issued(ctx, res.Lease.ID, sealed, res.Tokens)
	if vaultapi.CodeOf(err) != receipts.LeaseNotActive {
		t.Errorf("Issued after revoke: %v", err)
	}
	for _, p := range ps {
		if strings.Contains(err.Error(), string(p.Value)) {
			t.Errorf("the refusal names a value")
		}
	}
}

// TestClientKeepsProfile: a client answers Profile from its last Status
// until a call is refused with VAULT_PROFILE_NOT_PROVEN, and then asks the
// vault again; the vault's own gate refuses the grant meanwhile.
func TestClientKeepsProfile(t *testing.T) {
	f := start(t, Options{})
	p, err := f.c.Profile(ctx)
	if err != nil || !p.Accepted() {
		t.Fatalf("profile %+v, %v", p, err)
	}
	t.Setenv("GOTRACEBACK", "crash") // no longer provable
	if f.v.Prove().Accepted() {
		t.Fatal("the profile is still accepted: the test proves nothing")
	}
	if p, err := f.c.Profile(ctx); err != nil || !p.Accepted() {
		t.Fatalf("the kept profile: %+v, %v", p, err)
	}
	sealed, err := f.c.Seal(ctx, canaries(1, 1))
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.c.CreateLease(ctx, service.CreateRequest{Run: "r", Attempt: 1, Target: "https://t", Purpose: "p",
		SourceDigest: hexDigest("hmac-sha256:"), Values: sealed})
	if vaultapi.CodeOf(err) != receipts.VaultProfileNotProven {
		t.Fatalf("CreateLease with the profile not proven: %v", err)
	}
	if p, err := f.c.Profile(ctx); err != nil || p.Accepted() {
		t.Fatalf("after the refusal: %+v, %v; want the vault's profile, not accepted", p, err)
	}
}
