package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/server"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

var hardenOnce sync.Once

// vaultFixture is an in-process vaultd (service + gRPC server on a unix
// socket) for the vault and lease commands. The test process is hardened
// once (RLIMIT_CORE 0, PR_SET_DUMPABLE 0) so that the vault's profile can
// be accepted, as in the daemon.
type vaultFixture struct {
	*testEnv
	v      *service.Vault
	c      *client.Client
	sock   string
	values [][]byte
}

func newVaultFixture(t *testing.T, opts ...func(*service.Options)) *vaultFixture {
	t.Helper()
	hardenOnce.Do(func() {
		if err := harden.Apply(); err != nil {
			t.Fatalf("cannot harden the test process: %v", err)
		}
	})
	e := newTestEnv(t)
	opt := service.Options{StateDir: filepath.Join(e.dir, "vstate"), KeyDir: filepath.Join(e.dir, "vkeys"),
		Station: "station-a", MaxLease: time.Hour, ArenaSize: 1 << 20, SweepInterval: -1}
	for _, o := range opts {
		o(&opt)
	}
	v, err := service.Open(opt)
	if err != nil {
		t.Fatalf("service.Open: %v", err)
	}
	if p := v.Prove(); !p.Accepted() {
		t.Fatalf("profile not accepted: %v", p.Reasons)
	}
	sock := filepath.Join(e.dir, "run", "vault.sock")
	l, err := server.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(v, server.Options{})
	go srv.Serve(l)
	c, err := client.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); srv.Stop(); v.Close() })
	return &vaultFixture{testEnv: e, v: v, c: c, sock: sock}
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// grant creates a bound lease over two canary values through the client.
func (f *vaultFixture) grant(t *testing.T) vaultapi.CreateResult {
	t.Helper()
	ctx := context.Background()
	pairs := []seal.Pair{
		{Category: "module", Value: []byte(canary + "-" + randHex(4))},
		{Category: "team", Value: []byte(canary + "-" + randHex(4))},
	}
	for _, p := range pairs {
		f.values = append(f.values, p.Value)
	}
	sealed, err := f.c.Seal(ctx, pairs)
	if err != nil {
		t.Fatal(err)
	}
	res, err := f.c.CreateLease(ctx, vaultapi.CreateRequest{Run: "run-1", Attempt: 1, Target: "https://model.example/v1",
		Purpose: "triage", SourceDigest: "hmac-sha256:" + randHex(32), RemoteDeadlineS: 60, ReturnWindowS: 60,
		Lifetime: 30 * time.Minute, Values: sealed})
	if err != nil {
		t.Fatalf("CreateLease: %v", err)
	}
	ex := vaulttest.Export(res.Tokens)
	if err := f.c.Bind(ctx, res.Lease.ID, "evt:seal", "hmac-sha256:"+randHex(32), receipts.SHA256(ex), ex); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	return res
}

// cut runs the command with --vault and checks that no output holds a
// canary.
func (f *vaultFixture) cut(t *testing.T, args ...string) (int, []byte, []byte) {
	t.Helper()
	code, out, errb := f.run(t, append(args, "--vault", f.sock)...)
	assertNoCanary(t, "stdout", out)
	assertNoCanary(t, "stderr", errb)
	return code, out, errb
}

func decodeStrict(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := canon.Unmarshal(bytes.TrimSpace(b), v, canon.Options{}); err != nil {
		t.Fatalf("output is not the expected JSON document: %v\n%s", err, b)
	}
}

func TestVaultStatus(t *testing.T) {
	f := newVaultFixture(t)
	f.grant(t)
	code, out, errb := f.cut(t, "vault", "status", "--json")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb)
	}
	var st statusOut
	decodeStrict(t, out, &st)
	p := st.Profile
	if st.Storage.Floor != 0 || st.Storage.Low || st.Storage.State.TotalBytes <= 0 || st.Storage.Key.TotalBytes <= 0 {
		t.Errorf("storage: %+v", st.Storage)
	}
	if p.Schema != "VaultProfile@1" || p.Profile != "accepted" || p.Arena.Bytes == 0 || !p.Arena.Locked ||
		p.Dumpable || p.CoreLimit != 0 || p.PID != os.Getpid() || len(p.Reasons) != 0 {
		t.Errorf("status: %+v", p)
	}
	code, out, _ = f.cut(t, "vault", "status")
	if code != ExitOK || !bytes.Contains(out, []byte("profile: accepted")) || !bytes.Contains(out, []byte("ACTIVE 1")) ||
		!bytes.Contains(out, []byte("free-space floor: none")) || bytes.Contains(out, []byte("BELOW THE FLOOR")) {
		t.Errorf("human status (exit %d):\n%s", code, out)
	}
	// The socket may come from the environment.
	var o, e bytes.Buffer
	code = Run(context.Background(), []string{"vault", "status", "--json"}, Env{Stdout: &o, Stderr: &e, Getenv: func(k string) string {
		if k == "PRIVACYCUT_VAULT" {
			return f.sock
		}
		return f.getenv(k)
	}})
	if code != ExitOK {
		t.Errorf("status with $PRIVACYCUT_VAULT: exit %d: %s", code, e.Bytes())
	}
}

// TestVaultUID: $PRIVACYCUT_VAULT_UID names further uids the vault may run
// as; a malformed list is a usage error, and a list without the vault's
// uid still lets root's and the caller's own vault through.
func TestVaultUID(t *testing.T) {
	f := newVaultFixture(t)
	for _, tc := range []struct {
		uids string
		code int
	}{
		{"65534", ExitOK}, {"65534, 998", ExitOK}, {"", ExitOK},
		{"nobody", ExitUsage}, {"65534,", ExitUsage}, {"-1", ExitUsage}, {"4294967296", ExitUsage},
	} {
		f.env = map[string]string{"PRIVACYCUT_VAULT_UID": tc.uids}
		if code, _, errb := f.cut(t, "vault", "status"); code != tc.code {
			t.Errorf("PRIVACYCUT_VAULT_UID=%q: exit %d, want %d: %s", tc.uids, code, tc.code, errb)
		}
	}
}

func TestVaultUsageAndUnreachable(t *testing.T) {
	e := newTestEnv(t)
	nobody := filepath.Join(e.dir, "nobody.sock")
	tests := []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"vault"}, ExitUsage, "usage: cut vault <command>"},
		{[]string{"vault", "frobnicate", "--vault", "x"}, ExitUsage, `unknown vault command "frobnicate"`},
		{[]string{"vault", "backup", "--vault", "x"}, ExitUsage, "usage: cut vault backup"},
		{[]string{"vault", "prove-erasure", "onlyone", "--vault", "x"}, ExitUsage, "usage: cut vault prove-erasure"},
		{[]string{"lease"}, ExitUsage, "usage: cut lease <command>"},
		{[]string{"lease", "show", "--vault", "x"}, ExitUsage, "usage: cut lease show"},
		// No socket at all, or one nothing answers on: exit 1, naming the
		// socket and asking whether vaultd runs.
		{[]string{"vault", "status"}, ExitError, "cut vault status: no vault configured: pass --vault SOCK or set PRIVACYCUT_VAULT"},
		{[]string{"lease", "list"}, ExitError, "cut lease list: no vault configured"},
		{[]string{"vault", "status", "--vault", nobody}, ExitError, "vault socket " + nobody + " does not answer (no such file): is vaultd running"},
		{[]string{"lease", "list", "--vault", nobody}, ExitError, "vault socket " + nobody + " does not answer"},
		{[]string{"lease", "show", "--vault", nobody, "pcl:x"}, ExitError, "vault socket " + nobody + " does not answer"},
		{[]string{"lease", "revoke", "--vault", nobody, "pcl:x"}, ExitError, "vault socket " + nobody + " does not answer"},
		{[]string{"vault", "rotate", "--vault", nobody}, ExitError, "vault socket " + nobody + " does not answer"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, out, errb := e.run(t, tc.args...)
			if code != tc.code || !strings.Contains(string(errb), tc.want) {
				t.Errorf("exit %d, want %d with %q: %s", code, tc.code, tc.want, errb)
			}
			if len(out) != 0 {
				t.Errorf("stdout: %s", out)
			}
		})
	}
}

// TestVaultRefusedSocket: a socket file nothing listens on (ECONNREFUSED)
// is named with its cause.
func TestVaultRefusedSocket(t *testing.T) {
	e := newTestEnv(t)
	sock := filepath.Join(e.dir, "dead.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	code, _, errb := e.run(t, "vault", "status", "--vault", sock)
	want := "vault socket " + sock + " does not answer (connection refused: nothing listens on it): is vaultd running"
	if code != ExitError || !strings.Contains(string(errb), want) {
		t.Fatalf("exit %d: %s", code, errb)
	}
	if !strings.Contains(string(errb), "cut: hint: start it with: vaultd --state-dir DIR --key-dir DIR --socket "+sock) {
		t.Fatalf("no hint: %s", errb)
	}
}

// TestBackupRestoreRotateProve runs the operator's erasure workflow through
// the commands: backup, prove-erasure as a negative control (exit 4),
// revoke, prove-erasure (exit 0), rotate, restore.
func TestBackupRestoreRotateProve(t *testing.T) {
	f := newVaultFixture(t)
	a := f.grant(t)
	b := f.grant(t)
	bk := filepath.Join(f.dir, "vault.backup")
	code, out, errb := f.cut(t, "vault", "backup", "-o", bk, "--json")
	if code != ExitOK {
		t.Fatalf("backup: exit %d: %s", code, errb)
	}
	fi, err := os.Stat(bk)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("backup file: %v %v", fi, err)
	}
	raw, _ := os.ReadFile(bk)
	for _, v := range f.values {
		if bytes.Contains(raw, v) {
			t.Errorf("the backup file holds a value")
		}
	}
	var bs backupOut
	decodeStrict(t, out, &bs)
	if bs.Leases != 2 || bs.Maps != 2 || bs.Bytes != fi.Size() {
		t.Errorf("backup output %+v for %d bytes", bs, fi.Size())
	}

	code, out, _ = f.cut(t, "vault", "prove-erasure", bk, a.Lease.ID, "--live", b.Lease.ID, "--json")
	var rep vaultapi.Report
	decodeStrict(t, out, &rep)
	if code != ExitVerifyNo || rep.Proven || !rep.Destroyed.Decrypts {
		t.Fatalf("negative control: exit %d %+v", code, rep)
	}
	if c, _, _ := f.cut(t, "lease", "revoke", a.Lease.ID); c != ExitOK {
		t.Fatalf("revoke: exit %d", c)
	}
	code, out, _ = f.cut(t, "vault", "prove-erasure", bk, a.Lease.ID, "--live", b.Lease.ID, "--json")
	decodeStrict(t, out, &rep)
	if code != ExitOK || !rep.Proven || rep.Destroyed.Code != receipts.LeaseUnrecoverable || !rep.Live.Decrypts {
		t.Fatalf("proof: exit %d %+v", code, rep)
	}
	code, out, _ = f.cut(t, "vault", "prove-erasure", bk, a.Lease.ID)
	if code != ExitOK || !bytes.Contains(out, []byte("erasure proven")) {
		t.Errorf("human proof: exit %d\n%s", code, out)
	}

	code, out, _ = f.cut(t, "vault", "rotate", "--json")
	var rot rotateOut
	decodeStrict(t, out, &rot)
	if code != ExitOK || rot.From != 1 || rot.To != 2 || rot.Rewrapped != 1 {
		t.Errorf("rotate: exit %d %+v", code, rot)
	}
	code, out, _ = f.cut(t, "vault", "restore", bk, "--json")
	var rs vaultapi.RestoreStats
	decodeStrict(t, out, &rs)
	if code != ExitOK || rs.Skipped != 2 || rs.Restored != 0 {
		t.Errorf("restore: exit %d %+v", code, rs)
	}
	os.WriteFile(bk, raw[:len(raw)-5], 0o600)
	code, out, _ = f.cut(t, "vault", "restore", bk, "--json")
	var ref receipts.RefusalDocument
	decodeStrict(t, out, &ref)
	if code != ExitRefused || ref.Reasons[0].Code != receipts.MalformedRecord {
		t.Errorf("restore of a truncated backup: exit %d %+v", code, ref)
	}
}

// TestReversibleRefusalExits3: with the profile not proven, a reversible
// request (rotate) exits 3 with VAULT_PROFILE_NOT_PROVEN, while status
// still answers and names the failed item.
func TestReversibleRefusalExits3(t *testing.T) {
	f := newVaultFixture(t)
	t.Setenv("GOTRACEBACK", "all")
	f.v.Prove()
	code, out, _ := f.cut(t, "vault", "rotate", "--json")
	var ref receipts.RefusalDocument
	decodeStrict(t, out, &ref)
	if code != ExitRefused || ref.Reasons[0].Code != receipts.VaultProfileNotProven {
		t.Errorf("rotate: exit %d %+v", code, ref)
	}
	code, out, _ = f.cut(t, "vault", "status", "--json")
	var st statusOut
	decodeStrict(t, out, &st)
	p := st.Profile
	if code != ExitOK || p.Profile != "not_proven" || len(p.Reasons) != 1 || p.Reasons[0] != "traceback" {
		t.Errorf("status: exit %d %+v", code, p)
	}
}

// TestVaultStorageLow: below the vault's free-space floor, status says so
// (human and --json) and a refused rotation prints LIMIT_EXCEEDED with a
// hint naming the cause and what to do.
func TestVaultStorageLow(t *testing.T) {
	const floor = 1 << 50 // more than any file system here has; canonical JSON holds it
	low := newVaultFixture(t, func(o *service.Options) { o.MinFree = floor })
	code, out, errb := low.cut(t, "vault", "rotate", "--json")
	if code != ExitRefused {
		t.Fatalf("rotate below the floor: exit %d\n%s%s", code, out, errb)
	}
	var doc receipts.RefusalDocument
	decodeStrict(t, out, &doc)
	if len(doc.Reasons) != 1 || doc.Reasons[0].Code != receipts.LimitExceeded {
		t.Errorf("refusal: %+v", doc)
	}
	for _, want := range []string{"free space below the vault's floor (LIMIT_EXCEEDED)", "cut: hint: the vault's state directory has less free space", "--min-free"} {
		if !bytes.Contains(errb, []byte(want)) {
			t.Errorf("stderr lacks %q:\n%s", want, errb)
		}
	}
	code, out, _ = low.cut(t, "vault", "status")
	if code != ExitOK || !bytes.Contains(out, []byte("free-space floor: 1125899906842624 bytes")) || !bytes.Contains(out, []byte("BELOW THE FLOOR")) {
		t.Errorf("human status below the floor (exit %d):\n%s", code, out)
	}
	code, out, _ = low.cut(t, "vault", "status", "--json")
	var st statusOut
	decodeStrict(t, out, &st)
	if code != ExitOK || !st.Storage.Low || !st.Storage.State.Low || st.Storage.Floor != floor {
		t.Errorf("status --json below the floor: %+v", st.Storage)
	}
}

// TestVaultSocketNotVaultd: a socket that accepts connections but is not
// vaultd (it hangs up at once) is exit 1 naming the socket, with no
// refusal document: the command could not ask the vault anything.
func TestVaultSocketNotVaultd(t *testing.T) {
	e := newTestEnv(t)
	sock := filepath.Join(e.dir, "other.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, args := range [][]string{{"vault", "status"}, {"lease", "list"}, {"vault", "rotate", "--json"}} {
		code, out, errb := e.run(t, append(args, "--vault", sock)...)
		want := "vault socket " + sock + " does not answer (the connection failed): is vaultd running"
		if code != ExitError || len(out) != 0 || !strings.Contains(string(errb), want) {
			t.Errorf("%v: exit %d: %q %s", args, code, out, errb)
		}
	}
}
