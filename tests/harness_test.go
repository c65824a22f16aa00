package tests

import (
	"bufio"
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
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/api"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/service"
	"golang.org/x/sys/unix"
)

// readyLine is the log line vaultd prints once it serves: boot recovery and
// the profile are done by then.
const readyLine = `"msg":"vaultd: serving"`

// daemon is one vault installation and its current vaultd process. Every
// byte the vault writes lives under base: state, keys, socket directory,
// the log of every run (logs/vaultd-N.log), vaultd's TMPDIR (the erasure
// proof's scratch store) and the working directory where a core would land.
type daemon struct {
	t                    testing.TB
	base                 string
	state, keys, sock    string
	logDir, tmp, cwd     string
	bin                  string
	args                 []string // extra flags
	env                  []string // extra environment
	asNobody             bool     // run as uid/gid 65534 (capabilities dropped)
	memlock              uint64   // RLIMIT_MEMLOCK for the process (0: inherited)
	coreMax              bool     // raise RLIMIT_CORE to its hard limit
	cgroupProcs          string   // join this cgroup before exec
	cmd                  *exec.Cmd
	exited               chan struct{}
	waitErr              error
	runs                 int
	logPath              string // the current run's log
	lastStart, lastReady time.Time
}

// newDaemon prepares an installation for bin. For a daemon that runs as
// nobody the base directory is given to it (trap: a root-owned directory
// would make a refusal a plain EACCES).
func newDaemon(t testing.TB, bin string, asNobody bool) *daemon {
	t.Helper()
	base, err := os.MkdirTemp("", "privacycut-accept-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	d := &daemon{t: t, base: base, bin: bin, asNobody: asNobody,
		state: filepath.Join(base, "state"), keys: filepath.Join(base, "keys"),
		sock: filepath.Join(base, "run", "vault.sock"), logDir: filepath.Join(base, "logs"),
		tmp: filepath.Join(base, "tmp"), cwd: filepath.Join(base, "cwd")}
	for _, dir := range []string{d.logDir, d.tmp, d.cwd} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if asNobody {
		for _, dir := range []string{base, d.tmp, d.cwd} {
			if err := os.Chown(dir, nobody, nobody); err != nil {
				t.Fatalf("chown for uid %d: %v", nobody, err)
			}
		}
	}
	t.Cleanup(d.kill)
	return d
}

// start launches vaultd and waits until it serves. It fails the test if
// vaultd exits first or does not serve within 30 s.
func (d *daemon) start() {
	d.t.Helper()
	if err := d.tryStart(); err != nil {
		d.t.Fatal(err)
	}
}

// tryStart is start returning the failure.
func (d *daemon) tryStart() error {
	ready, err := d.launch()
	if err != nil {
		return err
	}
	select {
	case <-ready:
		d.lastReady = time.Now()
		return nil
	case <-d.exited:
		return fmt.Errorf("vaultd exited before serving: %v\n%s", d.waitErr, d.log())
	case <-time.After(30 * time.Second):
		return fmt.Errorf("vaultd did not serve within 30s\n%s", d.log())
	}
}

// launch starts vaultd and returns a channel closed when it serves; d.exited
// is closed when it has exited and been reaped. Its stderr (JSON log lines)
// is copied to logs/vaultd-N.log.
func (d *daemon) launch() (<-chan struct{}, error) {
	args := []string{"--state-dir", d.state, "--key-dir", d.keys, "--socket", d.sock}
	args = append(args, d.args...)
	env := append([]string{"PATH=/usr/bin:/bin", "TMPDIR=" + d.tmp}, d.env...)
	var cmd *exec.Cmd
	if d.asNobody || d.memlock != 0 || d.coreMax || d.cgroupProcs != "" {
		argv, _ := json.Marshal(append([]string{d.bin}, args...))
		cmd = exec.Command(bins.helper)
		env = append(env, envHelper+"=exec", envArgv+"="+string(argv))
		if d.memlock != 0 {
			env = append(env, envMemlock+"="+strconv.FormatUint(d.memlock, 10))
		}
		if d.coreMax {
			env = append(env, envCore+"=max")
		}
		if d.cgroupProcs != "" {
			env = append(env, envCgroup+"="+d.cgroupProcs)
		}
		if d.asNobody {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		}
	} else {
		cmd = exec.Command(d.bin, args...)
	}
	cmd.Env = env
	cmd.Dir = d.cwd
	d.runs++
	d.logPath = filepath.Join(d.logDir, fmt.Sprintf("vaultd-%d.log", d.runs))
	logf, err := os.OpenFile(d.logPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, pw
	d.lastStart = time.Now()
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		logf.Close()
		return nil, fmt.Errorf("start vaultd: %v", err)
	}
	pw.Close()
	d.cmd, d.exited, d.waitErr = cmd, make(chan struct{}), nil
	ready := make(chan struct{})
	exited := d.exited
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		signalled := false
		for sc.Scan() {
			logf.Write(append(sc.Bytes(), '\n'))
			if !signalled && bytes.Contains(sc.Bytes(), []byte(readyLine)) {
				close(ready)
				signalled = true
			}
		}
		d.waitErr = cmd.Wait()
		logf.Close()
		pr.Close()
		close(exited)
	}()
	return ready, nil
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// alive reports whether the current process has not exited.
func (d *daemon) alive() bool {
	if d.cmd == nil {
		return false
	}
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// stop sends sig and waits for the process to exit; it returns what Wait
// returned.
func (d *daemon) stop(sig syscall.Signal) error {
	d.t.Helper()
	d.cmd.Process.Signal(sig)
	return d.wait(30 * time.Second)
}

// wait waits up to limit for the process to exit on its own (a crash
// point, an OOM kill); past the limit it kills it and fails the test.
func (d *daemon) wait(limit time.Duration) error {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(limit):
		d.cmd.Process.Kill()
		<-d.exited
		d.t.Fatalf("vaultd did not exit within %v\n%s", limit, d.log())
	}
	return d.waitErr
}

// exitedWithin reports whether the process exits within limit.
func (d *daemon) exitedWithin(limit time.Duration) bool {
	select {
	case <-d.exited:
		return true
	case <-time.After(limit):
		return false
	}
}

// kill SIGKILLs the process if it still runs and reaps it.
func (d *daemon) kill() {
	if d.cmd == nil {
		return
	}
	select {
	case <-d.exited:
	default:
		d.cmd.Process.Kill()
		<-d.exited
	}
}

// log returns the current run's log.
func (d *daemon) log() []byte {
	b, _ := os.ReadFile(d.logPath)
	return b
}

// allLogs returns the logs of every run.
func (d *daemon) allLogs() []byte {
	var out []byte
	for i := 1; i <= d.runs; i++ {
		b, _ := os.ReadFile(filepath.Join(d.logDir, fmt.Sprintf("vaultd-%d.log", i)))
		out = append(out, b...)
	}
	return out
}

// client dials the current socket; it is closed when the test ends.
func (d *daemon) client() *api.Client {
	d.t.Helper()
	c, err := api.Dial(d.sock)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { c.Close() })
	return c
}

// exitStatus describes how a process ended.
type exitStatus struct {
	signal syscall.Signal // 0 when it exited
	code   int
	core   bool // the kernel reports a core dump
}

func (e exitStatus) String() string {
	if e.signal != 0 {
		return fmt.Sprintf("killed by %s (core dumped: %v)", unix.SignalName(e.signal), e.core)
	}
	return fmt.Sprintf("exit status %d", e.code)
}

func statusOf(err error) exitStatus {
	if err == nil {
		return exitStatus{}
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return exitStatus{code: -1}
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok {
		return exitStatus{code: ee.ExitCode()}
	}
	if ws.Signaled() {
		return exitStatus{signal: ws.Signal(), core: ws.CoreDump()}
	}
	return exitStatus{code: ws.ExitStatus()}
}

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
	c := &cutter{t: t, d: d, home: filepath.Join(d.base, "home"), outDir: filepath.Join(d.base, "cut-output"), allowed: map[string]bool{}}
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
		"TMPDIR=" + c.d.tmp,
		"PRIVACYCUT_VAULT=" + c.d.sock,
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
func (c *cutter) list() ([]service.Info, error) {
	r := c.run("lease", "list", "--json")
	if r.code != 0 {
		return nil, fmt.Errorf("%v", r)
	}
	var l struct {
		Leases []service.Info `json:"leases"`
	}
	if err := receipts.Unmarshal(bytes.TrimSpace(r.stdout), &l, receipts.Options{}); err != nil {
		return nil, fmt.Errorf("lease list output: %v", err)
	}
	return l.Leases, nil
}

// show is `cut lease show REF --json`.
func (c *cutter) show(ref string) service.Info {
	c.t.Helper()
	r := c.must(0, "lease", "show", ref, "--json")
	var in service.Info
	if err := receipts.Unmarshal(bytes.TrimSpace(r.stdout), &in, receipts.Options{}); err != nil {
		c.t.Fatalf("lease show output: %v\n%s", err, r.stdout)
	}
	return in
}

// refusalCodes returns the codes of a refusal document printed with --json.
func refusalCodes(out []byte) []receipts.Code {
	var doc struct {
		Refused bool              `json:"refused"`
		Reasons []receipts.Reason `json:"reasons"`
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

// execOutput runs a program with an empty environment and returns its
// combined output.
func execOutput(name string, args ...string) ([]byte, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	return cmd.CombinedOutput()
}
