package service

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

// TestMain hardens the test process (RLIMIT_CORE 0, PR_SET_DUMPABLE 0) so
// that the vaults it opens can prove their profile, as vaultd does.
func TestMain(m *testing.M) {
	if err := harden.Apply(); err != nil {
		fmt.Fprintln(os.Stderr, "service tests: cannot harden the test process:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

var ctx = context.Background()

const principal = "uid:0"

var t0 = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *clock) Add(d time.Duration) { c.Set(c.Now().Add(d)) }

// env is one vault's directories and clock, reopenable.
type env struct {
	state, keys string
	clock       *clock
	opt         Options
}

func newEnv(t testing.TB) *env {
	t.Helper()
	d := t.TempDir()
	e := &env{state: filepath.Join(d, "state"), keys: filepath.Join(d, "keys"), clock: newClock()}
	e.opt = Options{StateDir: e.state, KeyDir: e.keys, Station: "station-a", MaxLease: 2 * time.Hour,
		ArenaSize: 1 << 20, Now: e.clock.Now, SweepInterval: -1}
	return e
}

// open opens the vault and requires an accepted profile.
func (e *env) open(t *testing.T) *Vault {
	t.Helper()
	v := e.openAny(t)
	if p := v.Prove(); !p.Accepted() {
		t.Fatalf("profile not accepted in the hardened test process: %v", p.Reasons)
	}
	return v
}

// openAny opens the vault without requiring the profile.
func (e *env) openAny(t *testing.T) *Vault {
	t.Helper()
	v, err := Open(e.opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func digest(prefix string) string {
	b := make([]byte, 32)
	rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// canary returns a unique owner value that tests look for in every byte
// the vault writes.
func canary(tag string) []byte {
	b := make([]byte, 6)
	rand.Read(b)
	return []byte("VAULTD-CANARY-" + tag + "-" + hex.EncodeToString(b))
}

func request(t testing.TB, v *Vault, pairs []seal.Pair) CreateRequest {
	t.Helper()
	st, err := v.Status()
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	sealed, err := seal.Seal(st.SealKey, pairs)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	return CreateRequest{
		Run: "run-1", Attempt: 1, Target: "https://model.example/v1/answer", Purpose: "dependency-triage",
		SourceDigest: digest("hmac-sha256:"), RemoteDeadlineS: 600, ReturnWindowS: 600,
		Lifetime: time.Hour, Values: sealed, OutputSchemaDigest: rhSchemaDigest(t),
	}
}

// rhSchemaDigest is the digest of rhSchema, which the test leases bind.
func rhSchemaDigest(t testing.TB) string {
	t.Helper()
	s, err := rehydrate.ParseSchema([]byte(rhSchema))
	if err != nil {
		t.Fatalf("rhSchema: %v", err)
	}
	return s.Digest()
}

func grant(t *testing.T, v *Vault, pairs []seal.Pair) CreateResult {
	t.Helper()
	res, err := v.CreateLease(ctx, principal, request(t, v, pairs))
	if err != nil {
		t.Fatalf("CreateLease: %v", err)
	}
	return res
}

// export builds an export document carrying the tokens, each in an owner
// slot of its category, in the order given.
func export(tokens []string) []byte { return vaulttest.Export(tokens) }

func bind(t *testing.T, v *Vault, res CreateResult) {
	t.Helper()
	ex := export(res.Tokens)
	if err := v.Bind(ctx, principal, res.Lease.ID, "evt:seal1", digest("hmac-sha256:"), receipts.SHA256(ex), ex); err != nil {
		t.Fatalf("Bind: %v", err)
	}
}

func claimReq(ret string) ClaimRequest {
	return ClaimRequest{Run: "run-1", Attempt: 1, Station: "station-a", ReturnDigest: ret}
}

func pairsOf(tag string, n int) ([]seal.Pair, [][]byte) {
	var ps []seal.Pair
	var vals [][]byte
	for i := range n {
		c := canary(fmt.Sprintf("%s%d", tag, i))
		vals = append(vals, c)
		ps = append(ps, seal.Pair{Category: Categories[i%len(Categories)], Value: c})
	}
	return ps, vals
}

func wantCode(t *testing.T, err error, code receipts.Code) {
	t.Helper()
	if CodeOf(err) != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
}

func wantErr(t *testing.T, err, sentinel error) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("error %v, want %v", err, sentinel)
	}
}

func state(t *testing.T, v *Vault, id string) (lease.State, KeyState) {
	t.Helper()
	in, err := v.Show(ctx, id)
	if err != nil {
		t.Fatalf("Show: %v", err)
	}
	return in.Lease.State, in.Key
}
