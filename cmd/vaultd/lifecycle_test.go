package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/cmd/internal/cli"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/crash"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

// allPoints are the crash points, for the build test.
var allPoints = []string{
	crash.KeyTempSynced, crash.KeyRenamed, crash.KeyOverwritten,
	crash.RotateKEKWritten, crash.RotateRewrapped, crash.RotateAllRewrapped, crash.RotateSwitched, crash.RotateOldKEKDestroyed,
	crash.GrantMapBuilt, crash.GrantWrapped, crash.GrantCommitted, crash.BindCommitted, crash.ClaimCommitted,
	crash.ConsumeCommitted, crash.RevokeCommitted, crash.ExpireCommitted,
	crash.ConsumeKeyDestroyed, crash.RevokeKeyDestroyed, crash.ExpireKeyDestroyed,
}

// TestCrashPointsOnlyInCrashBuild: a release build contains no crash point
// name and reads none of the test environment variables; the crashpoints
// build contains them all (the check can fail).
func TestCrashPointsOnlyInCrashBuild(t *testing.T) {
	rel, err := os.ReadFile(vaultd)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := os.ReadFile(vaultdCP)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(allPoints, "VAULTD_CRASHPOINT", "VAULTD_TEST_ARENA_FALLBACK", "VAULTD_TEST_CLOCK_OFFSET") {
		if bytes.Contains(rel, []byte(s)) {
			t.Errorf("release build contains %q", s)
		}
		if !bytes.Contains(cp, []byte(s)) {
			t.Errorf("crashpoints build lacks %q", s)
		}
	}
}

func wantExit0(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("vaultd exit: %v", err)
	}
}

func wantKilled(t *testing.T, err error) {
	t.Helper()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("vaultd exit: %v, want SIGKILL", err)
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("vaultd exit: %v, want SIGKILL", err)
	}
}

// checkNoCanary scans everything the daemon wrote: state dir, key dir,
// its logs.
func checkNoCanary(t *testing.T, d *daemon, vals [][]byte) {
	t.Helper()
	for _, dir := range []string{d.State, d.Keys} {
		hits, err := vaulttest.ScanDir(dir, vals)
		if err != nil || len(hits) > 0 {
			t.Errorf("values in %s: %v %v", dir, hits, err)
		}
	}
	if hits := vaulttest.Find(d.AllLogs(), vals); len(hits) > 0 {
		t.Errorf("values in the daemon's logs: %v", hits)
	}
	checkJSONLog(t, d.AllLogs())
}

// checkJSONLog checks that every stderr line of the daemon is a JSON
// object (slog's handler, gRPC's lines routed through it).
func checkJSONLog(t *testing.T, logs []byte) {
	t.Helper()
	for i, line := range bytes.Split(bytes.TrimSpace(logs), []byte("\n")) {
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil || m["msg"] == nil {
			t.Errorf("log line %d is not a JSON log record: %q", i+1, line)
		}
	}
}

// TestSIGQUITStopsWithoutDump: SIGQUIT, which any process of vaultd's uid
// can send, stops vaultd like SIGTERM (exit 0, arena wiped, "stopped"
// logged) instead of the runtime's default: a dump of every goroutine's
// stack and arguments, the "all" traceback the profile refuses.
func TestSIGQUITStopsWithoutDump(t *testing.T) {
	d := newDaemon(t, false)
	d.Start()
	d.status() // serving
	wantExit0(t, d.Stop(syscall.SIGQUIT))
	logs := d.AllLogs()
	if bytes.Contains(logs, []byte("goroutine ")) || bytes.Contains(logs, []byte("SIGQUIT")) {
		t.Errorf("vaultd dumped its goroutines on SIGQUIT:\n%s", logs)
	}
	if !bytes.Contains(logs, []byte(`"msg":"vaultd: stopped"`)) {
		t.Errorf("vaultd did not stop cleanly on SIGQUIT:\n%s", logs)
	}
}

// TestAllowListDaemon: a uid not on vaultd's allow-list is refused in the
// transport handshake (the socket is opened to it for the test, so that
// only SO_PEERCRED can refuse it); the refusal is logged as JSON; the same
// uid on the allow-list gets through.
func TestAllowListDaemon(t *testing.T) {
	needRoot(t)
	for _, tc := range []struct {
		allow []string
		want  string
	}{
		{nil, "refused"},
		{[]string{"--allow-uid", "0", "--allow-uid", "65534"}, "ok"},
	} {
		d := newDaemon(t, false)
		d.Args = tc.allow
		d.Start()
		os.Chmod(filepath.Dir(d.Sock), 0o711)
		os.Chmod(d.Sock, 0o666)
		cmd := exec.Command(helper)
		cmd.Env = []string{envHelper + "=dial", envSock + "=" + d.Sock}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != tc.want {
			t.Fatalf("uid %d with %v: %q %v, want %s", nobody, tc.allow, out, err, tc.want)
		}
		if tc.want == "refused" {
			if !bytes.Contains(d.Log(), []byte("peer uid not on the allow-list")) {
				t.Errorf("the refusal is not logged:\n%s", d.Log())
			}
			if p := d.status(); p.Profile != "accepted" {
				t.Errorf("status after the refusal: %s", p.Profile)
			}
		}
		wantExit0(t, d.Stop(syscall.SIGTERM))
		checkJSONLog(t, d.AllLogs())
	}
}

// TestC5ClockSetBack: a vault that has seen time T keeps it across a
// restart with the clock set back: a lease whose deadline is before T is
// expired although the wall clock is before its deadline, and it stays
// expired.
func TestC5ClockSetBack(t *testing.T) {
	d := newDaemon(t, false)
	d.Bin = vaultdCP
	d.Args = []string{"--max-lease", "2h"}
	d.Start()
	c := d.client()
	ps, _ := canaryPairs("c5", 1)
	res := grant(t, c, ps, true)
	wantExit0(t, d.Stop(syscall.SIGTERM))

	// Boot with the clock 90 minutes ahead, touching nothing: the vault
	// sees that time.
	d.Env = []string{"VAULTD_TEST_CLOCK_OFFSET=90m"}
	d.Start()
	wantExit0(t, d.Stop(syscall.SIGTERM))

	// Boot with the clock set back three hours.
	d.Env = []string{"VAULTD_TEST_CLOCK_OFFSET=-3h"}
	d.Start()
	in := showLease(t, d, res.Lease.ID)
	if in.Lease.State != lease.Expired || in.Key != vaultapi.KeyDestroyed {
		t.Fatalf("clock set back: %v key %v", in.Lease.State, in.Key)
	}
	n := grant(t, d.client(), ps, false)
	if n.Lease.CreatedAt.Before(res.Lease.CreatedAt.Add(90 * time.Minute)) {
		t.Errorf("a lease granted with the clock set back starts at %v, before the mark", n.Lease.CreatedAt)
	}
}

func showLease(t *testing.T, d *daemon, id string) vaultapi.Info {
	t.Helper()
	code, out, errb := d.cut("lease", "show", id, "--json")
	if code != cli.ExitOK {
		t.Fatalf("cut lease show: exit %d %s", code, errb)
	}
	var in vaultapi.Info
	if err := canon.Unmarshal(bytes.TrimSpace(out), &in, canon.Options{}); err != nil {
		t.Fatalf("show output: %v", err)
	}
	return in
}

func wrapPath(d *daemon, id string) string {
	m, _ := vaulttest.ReadMaterial(d.Keys)
	e := m.Epoch
	if e == 0 {
		e = 1
	}
	return filepath.Join(d.Keys, "dek", strings.TrimPrefix(id, "pcl:")+"."+itoa(e))
}

func itoa(n uint64) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

// TestKeysAndErasure runs K1, K2, K3 and K5 against the daemon through the
// cut commands: a backup holds no key and no value; after a revocation,
// prove-erasure shows the revoked lease undecryptable and the live one
// decryptable (and, before it, the negative control fails); a rotation
// leaves one epoch and live leases usable; a lost key directory makes the
// leases LEASE_UNRECOVERABLE.
func TestKeysAndErasure(t *testing.T) {
	d := newDaemon(t, false)
	d.Start()
	c := d.client()
	psA, valsA := canaryPairs("ka", 3)
	psB, valsB := canaryPairs("kb", 3)
	a := grant(t, c, psA, true)
	b := grant(t, c, psB, true)
	vals := append(valsA, valsB...)

	bk := filepath.Join(t.TempDir(), "pre.backup")
	if code, _, errb := d.cut("vault", "backup", "-o", bk); code != cli.ExitOK {
		t.Fatalf("backup: exit %d %s", code, errb)
	}
	raw, _ := os.ReadFile(bk)
	mat, err := vaulttest.ReadMaterial(d.Keys)
	if err != nil || len(mat.DEKs) != 2 {
		t.Fatalf("key material: %d data keys, %v", len(mat.DEKs), err)
	}
	for _, k := range mat.All() {
		if bytes.Contains(raw, k) {
			t.Errorf("K1: the backup holds a key")
		}
	}
	keyFiles, _ := vaulttest.Files(d.Keys)
	for p, content := range keyFiles {
		// Every key and wrap file; the pointer ("1\n") is public.
		if len(content) >= 32 && bytes.Contains(raw, content) {
			t.Errorf("K1: the backup holds the key file %s", p)
		}
	}
	if hits := vaulttest.Find(raw, vals); len(hits) > 0 {
		t.Errorf("the backup holds values %v", hits)
	}

	// K2: negative control, then the proof.
	if code, out, _ := d.cut("vault", "prove-erasure", bk, a.Lease.ID, "--live", b.Lease.ID); code != cli.ExitVerifyNo {
		t.Fatalf("prove-erasure before any erasure: exit %d\n%s", code, out)
	}
	if code, _, errb := d.cut("lease", "revoke", a.Lease.ID); code != cli.ExitOK {
		t.Fatalf("revoke: exit %d %s", code, errb)
	}
	code, out, _ := d.cut("vault", "prove-erasure", bk, a.Lease.ID, "--live", b.Lease.ID, "--json")
	var rep vaultapi.Report
	if err := canon.Unmarshal(bytes.TrimSpace(out), &rep, canon.Options{}); err != nil {
		t.Fatal(err)
	}
	if code != cli.ExitOK || !rep.Proven || rep.Destroyed.Code != receipts.LeaseUnrecoverable || !rep.Live.Decrypts {
		t.Fatalf("K2: exit %d %+v", code, rep)
	}

	// K3: rotation.
	if code, _, errb := d.cut("vault", "rotate"); code != cli.ExitOK {
		t.Fatalf("rotate: exit %d %s", code, errb)
	}
	if _, err := os.Stat(filepath.Join(d.Keys, "epoch-1.key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("K3: the old epoch key survived")
	}
	oldWrap := filepath.Join(d.Keys, "dek", strings.TrimPrefix(b.Lease.ID, "pcl:")+".1")
	if _, err := os.Stat(oldWrap); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("K3: the old wrap survived")
	}
	newMat, err := vaulttest.ReadMaterial(d.Keys)
	if err != nil || newMat.Epoch != 2 || len(newMat.EpochKeys) != 1 {
		t.Fatalf("after rotation: epoch %d, %d epoch keys, %v", newMat.Epoch, len(newMat.EpochKeys), err)
	}
	code, out, _ = d.cut("vault", "prove-erasure", bk, a.Lease.ID, "--live", b.Lease.ID, "--json")
	if err := canon.Unmarshal(bytes.TrimSpace(out), &rep, canon.Options{}); err != nil || code != cli.ExitOK || !rep.Live.Decrypts {
		t.Fatalf("after rotation the live lease must still decrypt: exit %d %+v", code, rep)
	}

	// K5: the key directory is lost.
	wantExit0(t, d.Stop(syscall.SIGTERM))
	if err := os.RemoveAll(d.Keys); err != nil {
		t.Fatal(err)
	}
	d.Start()
	c = d.client()
	_, err = c.Claim(bg, b.Lease.ID, claimReq("sha256:"+randHex(32)))
	if vaultapi.CodeOf(err) != receipts.LeaseUnrecoverable {
		t.Errorf("K5: claim after key loss: %v", err)
	}
	if in := showLease(t, d, b.Lease.ID); in.Key != vaultapi.KeyMissing || in.Lease.State != lease.Active {
		t.Errorf("K5: show: %v key %v", in.Lease.State, in.Key)
	}
	checkNoCanary(t, d, vals)
}

// TestK3CapturedKeyStore: a copy of the key directory taken before a
// rotation does not unwrap anything under the keys that remain after it.
func TestK3CapturedKeyStore(t *testing.T) {
	d := newDaemon(t, false)
	d.Start()
	c := d.client()
	ps, _ := canaryPairs("k3", 2)
	res := grant(t, c, ps, true)
	capture := filepath.Join(t.TempDir(), "captured")
	if err := os.CopyFS(capture, os.DirFS(d.Keys)); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := d.cut("vault", "rotate"); code != cli.ExitOK {
		t.Fatalf("rotate: %d %s", code, errb)
	}
	wantExit0(t, d.Stop(syscall.SIGTERM))
	// Plant the captured wrap under the current epoch's name.
	old, err := os.ReadFile(filepath.Join(capture, "dek", strings.TrimPrefix(res.Lease.ID, "pcl:")+".1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d.Keys, "dek", strings.TrimPrefix(res.Lease.ID, "pcl:")+".2"), old, 0o600); err != nil {
		t.Fatal(err)
	}
	d.Start()
	_, err = d.client().Claim(bg, res.Lease.ID, claimReq("sha256:"+randHex(32)))
	if vaultapi.CodeOf(err) != receipts.LeaseUnrecoverable {
		t.Errorf("captured wrap under the current key: %v, want LEASE_UNRECOVERABLE", err)
	}
}

// TestK4RotationCrashPoints kills vaultd at each named point of a rotation
// (once each; the randomized loop is the crash suite's) and checks that
// after restart exactly one epoch is current, no other epoch key or wrap
// remains, and every live lease still opens.
func TestK4RotationCrashPoints(t *testing.T) {
	tests := []struct {
		point string
		epoch uint64
	}{
		{crash.RotateKEKWritten + ":1", 1},
		{crash.RotateRewrapped + ":1", 1},
		{crash.RotateRewrapped + ":2", 1},
		{crash.RotateAllRewrapped + ":1", 1},
		{crash.RotateSwitched + ":1", 2},
		{crash.RotateOldKEKDestroyed + ":1", 2},
		{crash.KeyTempSynced + ":1", 1},  // the new epoch key, not yet renamed
		{crash.KeyTempSynced + ":5", 1},  // the new pointer, not yet renamed
		{crash.KeyRenamed + ":5", 2},     // the new pointer renamed, directory not synced
		{crash.KeyOverwritten + ":1", 2}, // the old epoch key overwritten, not unlinked
	}
	for _, tc := range tests {
		t.Run(tc.point, func(t *testing.T) {
			d := newDaemon(t, false)
			d.Bin = vaultdCP
			d.Start()
			c := d.client()
			var ids []string
			for range 3 {
				ps, _ := canaryPairs("k4", 2)
				ids = append(ids, grant(t, c, ps, true).Lease.ID)
			}
			wantExit0(t, d.Stop(syscall.SIGTERM))

			d.Env = []string{"VAULTD_CRASHPOINT=" + tc.point}
			d.Start()
			if code, _, _ := d.cut("vault", "rotate"); code == cli.ExitOK {
				t.Fatalf("rotate succeeded through the crash point")
			}
			wantKilled(t, d.Wait(30*time.Second))

			d.Env = nil
			d.Start()
			checkOneEpoch(t, d, tc.epoch, len(ids))
			c = d.client()
			for _, id := range ids {
				if _, err := c.Claim(bg, id, claimReq("sha256:"+randHex(32))); err != nil {
					t.Errorf("live lease after recovery: %v", err)
				}
			}
			// A rotation after recovery completes.
			if code, _, errb := d.cut("vault", "rotate"); code != cli.ExitOK {
				t.Errorf("rotate after recovery: exit %d %s", code, errb)
			}
		})
	}
}

// checkOneEpoch checks the key directory after recovery.
func checkOneEpoch(t *testing.T, d *daemon, epoch uint64, wraps int) {
	t.Helper()
	m, err := vaulttest.ReadMaterial(d.Keys)
	if err != nil {
		t.Fatalf("key directory: %v", err)
	}
	if m.Epoch != epoch || len(m.EpochKeys) != 1 {
		t.Errorf("epoch %d with %d epoch keys, want only %d", m.Epoch, len(m.EpochKeys), epoch)
	}
	if len(m.DEKs) != wraps {
		t.Errorf("%d wrapped keys under the current epoch, want %d", len(m.DEKs), wraps)
	}
	ents, _ := os.ReadDir(filepath.Join(d.Keys, "dek"))
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), "."+itoa(epoch)) {
			t.Errorf("stray file dek/%s after recovery", e.Name())
		}
	}
	top, _ := os.ReadDir(d.Keys)
	for _, e := range top {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temporary file %s after recovery", e.Name())
		}
	}
}

// TestTransitionCrashPoints kills vaultd at the boundaries of lease
// transitions and checks the state after restart: every acknowledged step
// persisted, the interrupted one either absent or complete, and no
// terminal lease with a wrapped key.
func TestTransitionCrashPoints(t *testing.T) {
	type step func(t *testing.T, c *client.Client, res *vaultapi.CreateResult, ret string) error
	grantStep := func(t *testing.T, c *client.Client, res *vaultapi.CreateResult, _ string) error {
		ps, _ := canaryPairs("tx", 2)
		sealed, err := c.Seal(bg, ps)
		if err != nil {
			t.Fatal(err)
		}
		*res, err = c.CreateLease(bg, createReq(sealed, time.Hour))
		return err
	}
	bindStep := func(t *testing.T, c *client.Client, res *vaultapi.CreateResult, _ string) error {
		ex := exportOf(res.Tokens)
		return c.Bind(bg, res.Lease.ID, "evt:seal", "hmac-sha256:"+randHex(32), receipts.SHA256(ex), ex)
	}
	claimStep := func(t *testing.T, c *client.Client, res *vaultapi.CreateResult, ret string) error {
		_, err := c.Claim(bg, res.Lease.ID, claimReq(ret))
		return err
	}
	consumeStep := func(t *testing.T, c *client.Client, res *vaultapi.CreateResult, ret string) error {
		_, err := c.Consume(bg, res.Lease.ID, claimReq(ret))
		return err
	}
	revokeStep := func(t *testing.T, c *client.Client, res *vaultapi.CreateResult, _ string) error {
		_, err := c.Revoke(bg, res.Lease.ID)
		return err
	}
	tests := []struct {
		point string
		steps []step // the last one crashes
		state lease.State
		key   vaultapi.KeyState
	}{
		{crash.GrantWrapped, []step{grantStep}, 0, ""},
		{crash.GrantCommitted, []step{grantStep}, lease.Active, vaultapi.KeyPresent},
		{crash.BindCommitted, []step{grantStep, bindStep}, lease.Active, vaultapi.KeyPresent},
		{crash.ClaimCommitted, []step{grantStep, bindStep, claimStep}, lease.Claimed, vaultapi.KeyPresent},
		{crash.ConsumeCommitted, []step{grantStep, bindStep, claimStep, consumeStep}, lease.Consumed, vaultapi.KeyDestroyed},
		{crash.ConsumeKeyDestroyed, []step{grantStep, bindStep, claimStep, consumeStep}, lease.Consumed, vaultapi.KeyDestroyed},
		{crash.RevokeCommitted, []step{grantStep, bindStep, revokeStep}, lease.Revoked, vaultapi.KeyDestroyed},
		{crash.RevokeKeyDestroyed, []step{grantStep, revokeStep}, lease.Revoked, vaultapi.KeyDestroyed},
	}
	for _, tc := range tests {
		t.Run(tc.point, func(t *testing.T) {
			d := newDaemon(t, false)
			d.Bin = vaultdCP
			d.Env = []string{"VAULTD_CRASHPOINT=" + tc.point + ":1"}
			d.Start()
			c := d.client()
			var res vaultapi.CreateResult
			ret := "sha256:" + randHex(32)
			for i, s := range tc.steps {
				err := s(t, c, &res, ret)
				if last := i == len(tc.steps)-1; last != (err != nil) {
					t.Fatalf("step %d: %v (only the last step may fail, and it must)", i, err)
				}
			}
			wantKilled(t, d.Wait(30*time.Second))
			d.Env = nil
			d.Start()
			leases := d.list()
			if tc.state == 0 {
				if len(leases) != 0 {
					t.Fatalf("an unacknowledged grant left %d leases", len(leases))
				}
				return
			}
			if len(leases) != 1 {
				t.Fatalf("%d leases after restart, want 1", len(leases))
			}
			in := leases[0]
			if in.Lease.State != tc.state || in.Key != tc.key || in.Lease.KeyDestroyed != (tc.key == vaultapi.KeyDestroyed) {
				t.Errorf("after restart: %v key %v (recorded destroyed %v), want %v %v", in.Lease.State, in.Key, in.Lease.KeyDestroyed, tc.state, tc.key)
			}
			if tc.key == vaultapi.KeyDestroyed {
				if _, err := os.Stat(wrapPath(d, in.Lease.ID)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("terminal lease still has a wrapped key")
				}
			}
			if tc.state == lease.Claimed {
				r, err := d.client().Claim(bg, in.Lease.ID, claimReq(ret))
				if err != nil || !r.Repeated {
					t.Errorf("repeat of the acknowledged-at-crash claim: %+v %v", r, err)
				}
			}
		})
	}
}
