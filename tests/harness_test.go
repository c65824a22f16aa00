package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

// daemon is one vault installation and its current vaultd process
// (vaulttest.Daemon).
type daemon = vaulttest.Daemon

// newDaemon prepares an installation for bin, with this test binary as its
// exec helper.
func newDaemon(t testing.TB, bin string, asNobody bool) *daemon {
	t.Helper()
	d := vaulttest.NewDaemon(t, bin, asNobody)
	d.Helper = bins.helper
	return d
}

// clientOf dials the daemon's current socket; it is closed when the test
// ends.
func clientOf(d *daemon) *client.Client {
	d.T.Helper()
	c, err := client.DialWith(d.Sock, client.DialOptions{ServerUIDs: []uint32{vaulttest.Nobody}})
	if err != nil {
		d.T.Fatal(err)
	}
	d.T.Cleanup(func() { c.Close() })
	return c
}

// exitStatus describes how a process ended.
type exitStatus = vaulttest.ExitStatus

var statusOf = vaulttest.StatusOf

// cutter runs the built cut binary with an environment of its own under
// the installation's base: HOME, XDG directories, evidence key, journal.
// It keeps a copy of every stdout and stderr under base/cut-output, where
// the canary scan reads them too.
type cutter struct {
	t       testing.TB
	d       *daemon
	home    string
	outDir  string
	n       int
	allowed map[string]bool // files that may hold restored values: the rehydrated result
}

func newCutter(t testing.TB, d *daemon) *cutter {
	t.Helper()
	c := &cutter{t: t, d: d, home: filepath.Join(d.Base, "home"), outDir: filepath.Join(d.Base, "cut-output"), allowed: map[string]bool{}}
	for _, dir := range []string{c.home, c.outDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

func (c *cutter) env() []string {
	return []string{
		"PATH=/usr/bin:/bin",
		"HOME=" + c.home,
		"XDG_STATE_HOME=" + filepath.Join(c.home, "state"),
		"XDG_DATA_HOME=" + filepath.Join(c.home, "data"),
		"TMPDIR=" + c.d.Tmp,
		"PRIVACYCUT_VAULT=" + c.d.Sock,
		// Some daemons run as nobody: cut must trust that uid.
		"PRIVACYCUT_VAULT_UID=" + strconv.Itoa(vaulttest.Nobody),
		"PRIVACYCUT_EVIDENCE_KEY=" + filepath.Join(c.home, "evidence.key"),
		"PRIVACYCUT_JOURNAL=" + filepath.Join(c.home, "journal.jsonl"),
	}
}

// cutResult is one run of cut.
type cutResult struct {
	args           []string
	code           int
	stdout, stderr []byte
	outFile        string // the copy of stdout
}

func (r cutResult) String() string {
	return fmt.Sprintf("cut %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// run runs cut with args.
func (c *cutter) run(args ...string) cutResult {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bins.cut, args...)
	cmd.Env = c.env()
	cmd.Dir = c.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := cutResult{args: args, stdout: out.Bytes(), stderr: errb.Bytes()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		c.t.Fatalf("run cut %v: %v", args, err)
	}
	c.n++
	name := fmt.Sprintf("%03d-%s", c.n, args[0])
	if len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		name += "-" + args[1]
	}
	r.outFile = filepath.Join(c.outDir, name+".stdout")
	if err := os.WriteFile(r.outFile, r.stdout, 0o600); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.outDir, name+".stderr"), r.stderr, 0o600); err != nil {
		c.t.Fatal(err)
	}
	return r
}

// must runs cut and fails the test unless it exits with want.
func (c *cutter) must(want int, args ...string) cutResult {
	c.t.Helper()
	r := c.run(args...)
	if r.code != want {
		c.t.Fatalf("want exit %d: %v", want, r)
	}
	return r
}

// status is `cut vault status --json`.
func (c *cutter) status() harden.Profile {
	c.t.Helper()
	r := c.must(0, "vault", "status", "--json")
	var p harden.Profile
	// The profile of an unhardened daemon may carry a core limit of 2^64-1,
	// beyond the strict decoder's I-JSON integers.
	if err := json.Unmarshal(r.stdout, &p); err != nil {
		c.t.Fatalf("status output: %v\n%s", err, r.stdout)
	}
	return p
}

// list is `cut lease list --json`.
func (c *cutter) list() ([]vaultapi.Info, error) {
	r := c.run("lease", "list", "--json")
	if r.code != 0 {
		return nil, fmt.Errorf("%v", r)
	}
	var l struct {
		Leases []vaultapi.Info `json:"leases"`
	}
	if err := canon.Unmarshal(bytes.TrimSpace(r.stdout), &l, canon.Options{}); err != nil {
		return nil, fmt.Errorf("lease list output: %v", err)
	}
	return l.Leases, nil
}

// show is `cut lease show REF --json`.
func (c *cutter) show(ref string) vaultapi.Info {
	c.t.Helper()
	r := c.must(0, "lease", "show", ref, "--json")
	var in vaultapi.Info
	if err := canon.Unmarshal(bytes.TrimSpace(r.stdout), &in, canon.Options{}); err != nil {
		c.t.Fatalf("lease show output: %v\n%s", err, r.stdout)
	}
	return in
}

// refusalCodes returns the codes of a refusal document printed with --json.
func refusalCodes(out []byte) []receipts.Code {
	var doc struct {
		Refused bool               `json:"refused"`
		Reasons []receipts.Refusal `json:"reasons"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(out), &doc); err != nil || !doc.Refused {
		return nil
	}
	var codes []receipts.Code
	for _, r := range doc.Reasons {
		codes = append(codes, r.Code)
	}
	return codes
}

func hasCode(codes []receipts.Code, c receipts.Code) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

var bg = context.Background()
