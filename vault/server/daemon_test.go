package server

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/crash"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

// The daemon tests drive the real vaultd binary, built from cmd/vaultd
// (release and -tags crashpoints), as cmd/vaultd's own acceptance tests do.

// buildVaultd builds cmd/vaultd into a test directory, with the
// crashpoints tag when crashpoints is set. The build cache makes repeated
// builds a link step.
func buildVaultd(t *testing.T, crashpoints bool) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "vaultd")
	tg := vaulttest.Target{Out: out, Pkg: "github.com/privacycut/privacycut/cmd/vaultd"}
	if crashpoints {
		tg.Tags = "crashpoints"
	}
	if err := vaulttest.Build([]vaulttest.Target{tg}); err != nil {
		t.Fatal(err)
	}
	return out
}

// newVaultd prepares an installation of bin as station "station-a" with
// leases of up to two hours.
func newVaultd(t *testing.T, bin string) *vaulttest.Daemon {
	t.Helper()
	d := vaulttest.NewDaemon(t, bin, false)
	d.Station, d.Args = "station-a", []string{"--max-lease", "2h"}
	return d
}

// clientOf dials the daemon's socket; the client is closed when the test
// ends.
func clientOf(d *vaulttest.Daemon) *client.Client {
	d.T.Helper()
	c, err := client.Dial(d.Sock)
	if err != nil {
		d.T.Fatal(err)
	}
	d.T.Cleanup(func() { c.Close() })
	return c
}

// wrapsOf lists the key directory's wrapped keys of a lease.
func wrapsOf(d *vaulttest.Daemon, id string) []string {
	d.T.Helper()
	ents, err := os.ReadDir(filepath.Join(d.Keys, "dek"))
	if err != nil {
		d.T.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), strings.TrimPrefix(id, "pcl:")+".") {
			out = append(out, e.Name())
		}
	}
	return out
}

// daemonGrant grants and binds a lease over ps through c, with the
// purpose the test schemas mark, bound to the daemon tests' schema,
// rhSchema("dependency-triage", 3).
func daemonGrant(t *testing.T, c *client.Client, ps []seal.Pair) service.CreateResult {
	t.Helper()
	schema, err := rehydrate.ParseSchema(rhSchema("dependency-triage", 3))
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := c.Seal(ctx, ps)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	res, err := c.CreateLease(ctx, service.CreateRequest{Run: "run-1", Attempt: 1, Target: "https://model.example/v1",
		Purpose: "dependency-triage", SourceDigest: hexDigest("hmac-sha256:"), RemoteDeadlineS: 60, ReturnWindowS: 60,
		Lifetime: time.Hour, Values: sealed, OutputSchemaDigest: schema.Digest()})
	if err != nil {
		t.Fatalf("CreateLease: %v", err)
	}
	ex := exportOf(res.Tokens)
	if err := c.Bind(ctx, res.Lease.ID, "evt:seal", hexDigest("hmac-sha256:"), receipts.SHA256(ex), ex); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	return res
}

// TestDaemonRehydrate drives the real vaultd: an honest return over canary
// values comes back substituted with a keyed receipt holding no value and
// no token, the lease CONSUMED and its wrapped key gone; a replay is
// LEASE_NOT_ACTIVE; near misses refuse with their code and path and leave
// their lease CLAIMED (the same tuple retries); and no canary reaches the
// daemon's logs, state directory or key directory.
func TestDaemonRehydrate(t *testing.T) {
	rel := buildVaultd(t, false)
	d := newVaultd(t, rel)
	d.Start()
	c := clientOf(d)
	ek := newEvidenceKey(t)
	schema := rhSchema("dependency-triage", 3)
	ps := rhPairs()
	canaries := [][]byte{ps[0].Value, ps[1].Value}

	a := daemonGrant(t, c, ps)
	ret := rhDoc{Items: []rhItem{{Owner: a.Tokens[0], Team: a.Tokens[1], Note: "upgrade golang.org/x/net"}, {Owner: a.Tokens[0]}}}.bytes(t)
	want := rhDoc{Items: []rhItem{{Owner: string(ps[0].Value), Team: string(ps[1].Value), Note: "upgrade golang.org/x/net"}, {Owner: string(ps[0].Value)}}}.bytes(t)
	out, err := c.Rehydrate(ctx, rhRequest(t, c, a.Lease.ID, schema, ret, ek))
	if err != nil {
		t.Fatalf("Rehydrate: %v", err)
	}
	if !bytes.Equal(out.Output, want) {
		t.Errorf("output:\n%s\nwant:\n%s", out.Output, want)
	}
	rc, err := canon.Marshal(out.Receipt)
	if err != nil {
		t.Fatal(err)
	}
	if hits := vaulttest.Find(rc, append(canaries, []byte(a.Tokens[0]), []byte(a.Tokens[1]))); len(hits) > 0 {
		t.Errorf("the receipt holds values or tokens %v:\n%s", hits, rc)
	}
	if out.Receipt.FinalDigest != ek.HMAC(want) || out.Receipt.CutEvent != "evt:seal" ||
		out.Receipt.Substitutions["module"] != 2 || out.Receipt.Substitutions["team"] != 1 {
		t.Errorf("receipt %s", rc)
	}
	if out.Lease.State != lease.Consumed || !out.Lease.KeyDestroyed {
		t.Errorf("lease %v, key destroyed %v", out.Lease.State, out.Lease.KeyDestroyed)
	}
	if in, err := c.Show(ctx, a.Lease.ID); err != nil || in.Key != service.KeyDestroyed {
		t.Errorf("Show: %+v %v", in, err)
	}
	if w := wrapsOf(d, a.Lease.ID); len(w) > 0 {
		t.Errorf("the consumed lease keeps wrapped keys %v", w)
	}
	_, err = c.Rehydrate(ctx, rhRequest(t, c, a.Lease.ID, schema, ret, ek))
	if vaultapi.CodeOf(err) != receipts.LeaseNotActive {
		t.Errorf("replay after consume: %v", err)
	}

	// Near misses, each on its own lease over the same values.
	near := []struct {
		name string
		doc  func(own, other service.CreateResult) rhDoc
		code receipts.Code
		path string
	}{
		{"token at an unmarked path", func(own, _ service.CreateResult) rhDoc {
			return rhDoc{Items: []rhItem{{Owner: own.Tokens[0], Note: own.Tokens[1]}}}
		}, receipts.TokenWrongPath, "$.items[0].note"},
		{"another lease's token", func(own, other service.CreateResult) rhDoc {
			return rhDoc{Items: []rhItem{{Owner: own.Tokens[0]}, {Owner: other.Tokens[0]}}}
		}, receipts.TokenOtherNamespace, "$.items[1].owner"},
		{"case flipped", func(own, _ service.CreateResult) rhDoc {
			return rhDoc{Items: []rhItem{{Team: strings.ToUpper(own.Tokens[1])}}}
		}, receipts.TokenNotIssued, "$.items[0].team"},
		{"over cardinality", func(own, _ service.CreateResult) rhDoc {
			var d rhDoc
			for range 4 {
				d.Items = append(d.Items, rhItem{Owner: own.Tokens[0]})
			}
			return d
		}, receipts.TokenOverCardinality, "$.items[3].owner"},
	}
	for _, tc := range near {
		own, other := daemonGrant(t, c, ps), daemonGrant(t, c, ps)
		bad := tc.doc(own, other).bytes(t)
		for try := range 2 {
			_, err := c.Rehydrate(ctx, rhRequest(t, c, own.Lease.ID, schema, bad, ek))
			var r *receipts.Refusal
			if vaultapi.CodeOf(err) != tc.code || !errors.As(err, &r) || r.Path != tc.path {
				t.Errorf("%s, try %d: %v, want %s at %s", tc.name, try, err, tc.code, tc.path)
			}
			if hits := vaulttest.FindRaw([]byte(err.Error()), append(canaries, []byte(own.Tokens[0]), []byte(own.Tokens[1]), []byte(other.Tokens[0]))); len(hits) > 0 {
				t.Errorf("%s: the error names values or tokens %v", tc.name, hits)
			}
			in, err := c.Show(ctx, own.Lease.ID)
			if err != nil || in.Lease.State != lease.Claimed || in.Key != service.KeyPresent {
				t.Errorf("%s, try %d: lease %v key %v, want CLAIMED with its key", tc.name, try, in.Lease.State, in.Key)
			}
		}
	}

	wantExit0(t, d.Stop(syscall.SIGTERM))
	for _, dir := range []string{d.State, d.Keys} {
		hits, err := vaulttest.ScanDir(dir, canaries)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) > 0 {
			t.Errorf("canaries in %s: %v", dir, hits)
		}
	}
	if hits := vaulttest.Find(d.AllLogs(), canaries); len(hits) > 0 {
		t.Errorf("canaries in the daemon's log: %v", hits)
	}
	if !bytes.Contains(d.AllLogs(), []byte(`"msg":"vault: lease rehydrated"`)) {
		t.Errorf("the rehydration was not logged")
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

// TestDaemonRehydrateCrashPoints kills vaultd at every boundary of a
// rehydration and restarts it: the lease is in a legal state (the client
// checks every record it reads), a CLAIMED lease keeps its key and the
// same tuple completes the rehydration, and a CONSUMED lease has no
// wrapped key left and refuses a replay.
func TestDaemonRehydrateCrashPoints(t *testing.T) {
	cp := buildVaultd(t, true)
	tests := []struct {
		point string
		state lease.State
	}{
		{service.CrashRehydrateClaimed, lease.Claimed},
		{service.CrashRehydrateApplied, lease.Claimed},
		{service.CrashRehydrateConsumed, lease.Consumed},
		{crash.ConsumeCommitted, lease.Consumed},
		{crash.ConsumeKeyDestroyed, lease.Consumed},
		{service.CrashRehydrateFinished, lease.Consumed},
	}
	for _, tc := range tests {
		t.Run(tc.point, func(t *testing.T) {
			d := newVaultd(t, cp)
			d.Env = []string{"VAULTD_CRASHPOINT=" + tc.point + ":1"}
			d.Start()
			c := clientOf(d)
			ek := newEvidenceKey(t)
			schema := rhSchema("dependency-triage", 3)
			ps := rhPairs()
			res := daemonGrant(t, c, ps)
			ret := rhDoc{Items: []rhItem{{Owner: res.Tokens[0], Team: res.Tokens[1]}}}.bytes(t)
			if _, err := c.Rehydrate(ctx, rhRequest(t, c, res.Lease.ID, schema, ret, ek)); err == nil {
				t.Fatalf("the rehydration returned although vaultd was to crash at %s", tc.point)
			}
			wantKilled(t, d.Wait(30*time.Second))

			d.Env = nil
			d.Start()
			c = clientOf(d)
			infos, err := c.List(ctx)
			if err != nil {
				t.Fatalf("List after restart: %v", err)
			}
			if len(infos) != 1 {
				t.Fatalf("%d leases after restart, want 1", len(infos))
			}
			in := infos[0]
			if err := in.Lease.Check(); err != nil {
				t.Fatalf("lease after restart: %v", err)
			}
			if in.Lease.State != tc.state {
				t.Fatalf("lease %v after the crash, want %v", in.Lease.State, tc.state)
			}
			retry := rhRequest(t, c, res.Lease.ID, schema, ret, ek) // resealed to the new boot's key
			if tc.state == lease.Consumed {
				if in.Key != service.KeyDestroyed || !in.Lease.KeyDestroyed || len(wrapsOf(d, in.Lease.ID)) > 0 {
					t.Errorf("terminal lease keeps its key: key %v, recorded %v, wraps %v", in.Key, in.Lease.KeyDestroyed, wrapsOf(d, in.Lease.ID))
				}
				if _, err := c.Rehydrate(ctx, retry); vaultapi.CodeOf(err) != receipts.LeaseNotActive {
					t.Errorf("retry after a crash past the consume: %v, want LEASE_NOT_ACTIVE", err)
				}
				return
			}
			if in.Key != service.KeyPresent || in.Lease.ClaimedBy == nil || in.Lease.ClaimedBy.ReturnDigest != receipts.SHA256(ret) {
				t.Fatalf("claimed lease after restart: key %v claim %+v", in.Key, in.Lease.ClaimedBy)
			}
			out, err := c.Rehydrate(ctx, retry)
			if err != nil {
				t.Fatalf("retry with the claimed tuple: %v", err)
			}
			want := rhDoc{Items: []rhItem{{Owner: string(ps[0].Value), Team: string(ps[1].Value)}}}.bytes(t)
			if !bytes.Equal(out.Output, want) || out.Lease.State != lease.Consumed || !out.Lease.KeyDestroyed {
				t.Errorf("retry: output %q, lease %v", out.Output, out.Lease.State)
			}
		})
	}
}

// TestDaemonRehydrateCrashPointNames: the rehydration's crash point names
// are absent from a release build and present in a crashpoints build.
func TestDaemonRehydrateCrashPointNames(t *testing.T) {
	rel, cp := buildVaultd(t, false), buildVaultd(t, true)
	rb, err := os.ReadFile(rel)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := os.ReadFile(cp)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{service.CrashRehydrateClaimed, service.CrashRehydrateApplied,
		service.CrashRehydrateConsumed, service.CrashRehydrateFinished} {
		if bytes.Contains(rb, []byte(p)) {
			t.Errorf("release build contains %q", p)
		}
		if !bytes.Contains(cb, []byte(p)) {
			t.Errorf("crashpoints build lacks %q", p)
		}
	}
}
