package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/cmd/internal/cli"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
	"golang.org/x/sys/unix"
)

// Helper modes of the test binary, selected by environment (the exec
// helper is vaulttest.RunHelper's).
const (
	envHelper = "VAULTD_TEST_HELPER" // "peek" or "dial"
	envPID    = "VAULTD_TEST_PID"
	envAddr   = "VAULTD_TEST_ADDR"
	envSock   = "VAULTD_TEST_SOCK"
	nobody    = vaulttest.Nobody
)

// The binaries TestMain builds, in a directory every uid can read.
var (
	binDir   string
	vaultd   string // release build
	vaultdCP string // -tags crashpoints
	helper   string // a copy of this test binary, for helpers that run as nobody
	gobin    string // the go command
)

func TestMain(m *testing.M) {
	if code, ok := vaulttest.RunHelper(); ok {
		os.Exit(code)
	}
	switch os.Getenv(envHelper) {
	case "peek":
		os.Exit(peekHelper())
	case "dial":
		os.Exit(dialHelper())
	}
	code, err := buildAndRun(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vaultd tests:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func buildAndRun(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "vaultd-test-bin-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return 0, err
	}
	binDir = dir
	vaultd, vaultdCP = filepath.Join(dir, "vaultd"), filepath.Join(dir, "vaultd-crash")
	if gobin, err = vaulttest.GoCommand(); err != nil {
		return 0, err
	}
	if err := vaulttest.Build([]vaulttest.Target{{Out: vaultd, Pkg: "."}, {Out: vaultdCP, Pkg: ".", Tags: "crashpoints"}}); err != nil {
		return 0, err
	}
	if helper, err = vaulttest.CopySelf(dir); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// peekHelper tries process_vm_readv on another process and prints the
// errno name ("ok" if it read).
func peekHelper() int {
	pid, _ := strconv.Atoi(os.Getenv(envPID))
	addr, _ := strconv.ParseUint(os.Getenv(envAddr), 0, 64)
	buf := make([]byte, 16)
	_, err := unix.ProcessVMReadv(pid, []unix.Iovec{{Base: &buf[0], Len: 16}},
		[]unix.RemoteIovec{{Base: uintptr(addr), Len: 16}}, 0)
	if err == nil {
		fmt.Println("ok")
		return 0
	}
	if errno, ok := err.(syscall.Errno); ok {
		fmt.Println(unix.ErrnoName(errno))
		return 0
	}
	fmt.Println(err)
	return 0
}

// dialHelper calls Status on the socket in VAULTD_TEST_SOCK and prints
// "ok" or "refused".
func dialHelper() int {
	c, err := client.Dial(os.Getenv(envSock))
	if err != nil {
		fmt.Println("dial error")
		return 0
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Status(ctx); err != nil {
		fmt.Println("refused")
		return 0
	}
	fmt.Println("ok")
	return 0
}

// daemon is one vaultd installation (vaulttest.Daemon) running as station
// "station-a", with a journal for the cut commands run against it.
type daemon struct {
	*vaulttest.Daemon
	journal string
}

// newDaemon prepares an installation of the release vaultd.
func newDaemon(t *testing.T, asNobody bool) *daemon {
	t.Helper()
	vd := vaulttest.NewDaemon(t, vaultd, asNobody)
	vd.Helper, vd.Station = helper, "station-a"
	return &daemon{Daemon: vd, journal: filepath.Join(t.TempDir(), "journal.jsonl")}
}

func (d *daemon) client() *client.Client {
	d.T.Helper()
	c, err := client.DialWith(d.Sock, client.DialOptions{ServerUIDs: []uint32{vaulttest.Nobody}})
	if err != nil {
		d.T.Fatal(err)
	}
	d.T.Cleanup(func() { c.Close() })
	return c
}

// cut runs the cut command in process against this daemon.
func (d *daemon) cut(args ...string) (int, []byte, []byte) {
	var out, errb bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		switch k {
		case "PRIVACYCUT_VAULT":
			return d.Sock
		case "PRIVACYCUT_JOURNAL":
			return d.journal
		case "PRIVACYCUT_VAULT_UID":
			// Some daemons run as nobody: cut must trust that uid.
			return strconv.Itoa(vaulttest.Nobody)
		}
		return ""
	}}
	code := cli.Run(context.Background(), args, env)
	return code, out.Bytes(), errb.Bytes()
}

// status runs `cut vault status --json`.
func (d *daemon) status() harden.Profile {
	d.T.Helper()
	code, out, errb := d.cut("vault", "status", "--json")
	if code != cli.ExitOK {
		d.T.Fatalf("cut vault status: exit %d: %s", code, errb)
	}
	var st struct {
		harden.Profile
		Storage vaultapi.Storage `json:"storage"`
	}
	if err := canon.Unmarshal(bytes.TrimSpace(out), &st, canon.Options{}); err != nil {
		d.T.Fatalf("status output: %v\n%s", err, out)
	}
	return st.Profile
}

// list runs `cut lease list --json`.
func (d *daemon) list() []vaultapi.Info {
	d.T.Helper()
	code, out, errb := d.cut("lease", "list", "--json")
	if code != cli.ExitOK {
		d.T.Fatalf("cut lease list: exit %d: %s", code, errb)
	}
	var l struct {
		Leases []vaultapi.Info `json:"leases"`
	}
	if err := canon.Unmarshal(bytes.TrimSpace(out), &l, canon.Options{}); err != nil {
		d.T.Fatalf("list output: %v\n%s", err, out)
	}
	return l.Leases
}

var bg = context.Background()

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// canaryPairs returns n owner values that must never appear in anything
// the daemon writes or prints.
func canaryPairs(tag string, n int) ([]seal.Pair, [][]byte) {
	var ps []seal.Pair
	var vs [][]byte
	for i := range n {
		v := []byte(fmt.Sprintf("VAULTD-CANARY-%s-%d-%s", tag, i, randHex(6)))
		ps = append(ps, seal.Pair{Category: service.Categories[i%len(service.Categories)], Value: v})
		vs = append(vs, v)
	}
	return ps, vs
}

func createReq(sealed seal.Request, lifetime time.Duration) vaultapi.CreateRequest {
	return vaultapi.CreateRequest{Run: "run-1", Attempt: 1, Target: "https://model.example/v1/answer",
		Purpose: "dependency-triage", SourceDigest: "hmac-sha256:" + randHex(32),
		RemoteDeadlineS: 1, ReturnWindowS: 1, Lifetime: lifetime, Values: sealed}
}

// grant creates a lease over pairs through the client (and binds it when
// bind is set).
func grant(t *testing.T, c *client.Client, ps []seal.Pair, bind bool) vaultapi.CreateResult {
	t.Helper()
	sealed, err := c.Seal(bg, ps)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	res, err := c.CreateLease(bg, createReq(sealed, time.Hour))
	if err != nil {
		t.Fatalf("CreateLease: %v", err)
	}
	if bind {
		bindLease(t, c, res)
	}
	return res
}

func exportOf(tokens []string) []byte {
	return vaulttest.Export(tokens)
}

func bindLease(t *testing.T, c *client.Client, res vaultapi.CreateResult) {
	t.Helper()
	ex := exportOf(res.Tokens)
	if err := c.Bind(bg, res.Lease.ID, "evt:seal", "hmac-sha256:"+randHex(32), receipts.SHA256(ex), ex); err != nil {
		t.Fatalf("Bind: %v", err)
	}
}

func claimReq(ret string) vaultapi.ClaimRequest {
	return vaultapi.ClaimRequest{Run: "run-1", Attempt: 1, Station: "station-a", ReturnDigest: ret}
}
