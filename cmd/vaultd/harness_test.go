package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/internal/cli"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/api"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
	"golang.org/x/sys/unix"
)

// Helper modes of the test binary, selected by environment.
const (
	envHelper  = "VAULTD_TEST_HELPER" // "exec" or "peek"
	envMemlock = "VAULTD_TEST_MEMLOCK"
	envArgv    = "VAULTD_TEST_ARGV" // JSON array: the program and its arguments
	envPID     = "VAULTD_TEST_PID"
	envAddr    = "VAULTD_TEST_ADDR"
	envSock    = "VAULTD_TEST_SOCK"
	nobody     = 65534
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
	switch os.Getenv(envHelper) {
	case "exec":
		os.Exit(execHelper())
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
	vaultd, vaultdCP, helper = filepath.Join(dir, "vaultd"), filepath.Join(dir, "vaultd-crash"), filepath.Join(dir, "helper.test")
	gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			return 0, fmt.Errorf("no go command to build vaultd: %w", err)
		}
	}
	for _, b := range []struct {
		out  string
		tags []string
	}{{vaultd, nil}, {vaultdCP, []string{"-tags", "crashpoints"}}} {
		args := append([]string{"build"}, b.tags...)
		args = append(args, "-o", b.out, ".")
		cmd := exec.Command(gobin, args...)
		if out, err := cmd.CombinedOutput(); err != nil {
			return 0, fmt.Errorf("go build %v: %v\n%s", b.tags, err, out)
		}
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(helper, self, 0o755); err != nil {
		return 0, err
	}
	return m.Run(), nil
}

// execHelper lowers RLIMIT_MEMLOCK (as requested) and execs the program:
// Go's SysProcAttr has no rlimit field, so a child that must start with a
// lower limit goes through this helper.
func execHelper() int {
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv(envArgv)), &argv); err != nil || len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "exec helper: bad argv")
		return 120
	}
	if s := os.Getenv(envMemlock); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "exec helper: bad memlock")
			return 120
		}
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			fmt.Fprintln(os.Stderr, "exec helper: setrlimit:", err)
			return 120
		}
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "VAULTD_TEST_HELPER=") && !strings.HasPrefix(e, envArgv+"=") && !strings.HasPrefix(e, envMemlock+"=") {
			env = append(env, e)
		}
	}
	err := syscall.Exec(argv[0], argv, env)
	fmt.Fprintln(os.Stderr, "exec helper: exec:", err)
	return 120
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
	c, err := api.Dial(os.Getenv(envSock))
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

// syncBuffer collects a daemon's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// daemon is one vaultd process over a base directory that survives
// restarts.
type daemon struct {
	t                 *testing.T
	base              string
	state, keys, sock string
	bin               string
	args              []string // extra flags
	env               []string // extra environment
	asNobody          bool
	memlock           uint64
	cmd               *exec.Cmd
	log               *syncBuffer
	exited            chan struct{}
	waitErr           error
	logs              [][]byte // stderr of earlier runs
	journal           string
}

// newDaemon prepares a base directory. For a daemon that runs as nobody
// the directory is opened to it (trap: t.TempDir is root's, so a refusal
// could otherwise be a plain EACCES).
func newDaemon(t *testing.T, asNobody bool) *daemon {
	t.Helper()
	base, err := os.MkdirTemp("", "vaultd-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if asNobody {
		if err := os.Chown(base, nobody, nobody); err != nil {
			t.Fatalf("chown for uid %d: %v", nobody, err)
		}
	}
	os.Chmod(base, 0o711)
	d := &daemon{t: t, base: base, state: filepath.Join(base, "state"), keys: filepath.Join(base, "keys"),
		sock: filepath.Join(base, "run", "vault.sock"), bin: vaultd, asNobody: asNobody,
		journal: filepath.Join(t.TempDir(), "journal.jsonl")}
	t.Cleanup(d.kill)
	return d
}

// start launches vaultd and waits until it serves (or exits).
func (d *daemon) start() {
	d.t.Helper()
	args := []string{"--state-dir", d.state, "--key-dir", d.keys, "--socket", d.sock, "--station", "station-a"}
	args = append(args, d.args...)
	env := append([]string{"PATH=/usr/bin:/bin"}, d.env...)
	var cmd *exec.Cmd
	if d.asNobody || d.memlock != 0 {
		argv, _ := json.Marshal(append([]string{d.bin}, args...))
		cmd = exec.Command(helper)
		env = append(env, envHelper+"=exec", envArgv+"="+string(argv))
		if d.memlock != 0 {
			env = append(env, envMemlock+"="+strconv.FormatUint(d.memlock, 10))
		}
		if d.asNobody {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
		}
	} else {
		cmd = exec.Command(d.bin, args...)
	}
	cmd.Env = env
	pr, pw, err := os.Pipe()
	if err != nil {
		d.t.Fatal(err)
	}
	cmd.Stderr = pw
	d.log = &syncBuffer{}
	if err := cmd.Start(); err != nil {
		d.t.Fatalf("start vaultd: %v", err)
	}
	pw.Close()
	d.cmd = cmd
	d.exited = make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		signalled := false
		for sc.Scan() {
			d.log.Write(append(sc.Bytes(), '\n'))
			if !signalled && strings.Contains(sc.Text(), `"msg":"vaultd: serving"`) {
				close(ready)
				signalled = true
			}
		}
		d.waitErr = cmd.Wait()
		close(d.exited)
	}()
	select {
	case <-ready:
	case <-d.exited:
		d.t.Fatalf("vaultd exited before serving: %v\n%s", d.waitErr, d.log.Bytes())
	case <-time.After(30 * time.Second):
		d.t.Fatalf("vaultd did not start within 30s\n%s", d.log.Bytes())
	}
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// stop sends sig and waits for the process to exit; it returns the exit
// status as Wait reports it.
func (d *daemon) stop(sig syscall.Signal) error {
	d.t.Helper()
	d.cmd.Process.Signal(sig)
	return d.wait()
}

// wait waits for the process to exit on its own (a crash point).
func (d *daemon) wait() error {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		d.cmd.Process.Kill()
		<-d.exited
		d.t.Fatalf("vaultd did not exit within 30s\n%s", d.log.Bytes())
	}
	d.logs = append(d.logs, d.log.Bytes())
	return d.waitErr
}

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

// allLogs is the stderr of every run so far, the current one included.
func (d *daemon) allLogs() []byte {
	var b []byte
	for _, l := range d.logs {
		b = append(b, l...)
	}
	if d.log != nil {
		b = append(b, d.log.Bytes()...)
	}
	return b
}

func (d *daemon) client() *api.Client {
	d.t.Helper()
	c, err := api.Dial(d.sock)
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { c.Close() })
	return c
}

// cut runs the cut command in process against this daemon.
func (d *daemon) cut(args ...string) (int, []byte, []byte) {
	var out, errb bytes.Buffer
	env := cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string {
		switch k {
		case "PRIVACYCUT_VAULT":
			return d.sock
		case "PRIVACYCUT_JOURNAL":
			return d.journal
		}
		return ""
	}}
	code := cli.Run(context.Background(), args, env)
	return code, out.Bytes(), errb.Bytes()
}

// status runs `cut vault status --json`.
func (d *daemon) status() harden.Profile {
	d.t.Helper()
	code, out, errb := d.cut("vault", "status", "--json")
	if code != cli.ExitOK {
		d.t.Fatalf("cut vault status: exit %d: %s", code, errb)
	}
	var p harden.Profile
	if err := receipts.Unmarshal(bytes.TrimSpace(out), &p, receipts.Options{}); err != nil {
		d.t.Fatalf("status output: %v\n%s", err, out)
	}
	return p
}

// list runs `cut lease list --json`.
func (d *daemon) list() []service.Info {
	d.t.Helper()
	code, out, errb := d.cut("lease", "list", "--json")
	if code != cli.ExitOK {
		d.t.Fatalf("cut lease list: exit %d: %s", code, errb)
	}
	var l struct {
		Leases []service.Info `json:"leases"`
	}
	if err := receipts.Unmarshal(bytes.TrimSpace(out), &l, receipts.Options{}); err != nil {
		d.t.Fatalf("list output: %v\n%s", err, out)
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

func createReq(sealed seal.Request, lifetime time.Duration) service.CreateRequest {
	return service.CreateRequest{Run: "run-1", Attempt: 1, Target: "https://model.example/v1/answer",
		Purpose: "dependency-triage", SourceDigest: "hmac-sha256:" + randHex(32),
		RemoteDeadlineS: 1, ReturnWindowS: 1, Lifetime: lifetime, Values: sealed}
}

// grant creates a lease over pairs through the client (and binds it when
// bind is set).
func grant(t *testing.T, c *api.Client, ps []seal.Pair, bind bool) service.CreateResult {
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
	return []byte(`{"parts":[{"kind":"block","text":"` + strings.Join(tokens, " ") + `"}],"profile":"closed-diagnostic@1"}`)
}

func bindLease(t *testing.T, c *api.Client, res service.CreateResult) {
	t.Helper()
	ex := exportOf(res.Tokens)
	if err := c.Bind(bg, res.Lease.ID, "evt:seal", "hmac-sha256:"+randHex(32), receipts.SHA256(ex), ex); err != nil {
		t.Fatalf("Bind: %v", err)
	}
}

func claimReq(ret string) service.ClaimRequest {
	return service.ClaimRequest{Run: "run-1", Attempt: 1, Station: "station-a", ReturnDigest: ret}
}
