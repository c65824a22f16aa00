package vaulttest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Nobody is the uid (and gid) unprivileged daemons run as.
const Nobody = 65534

// ReadyLine is the log line vaultd prints once it serves: boot recovery and
// the profile are done by then.
const ReadyLine = `"msg":"vaultd: serving"`

// The environment of the exec helper (RunHelper).
const (
	envHelper  = "VAULTTEST_HELPER" // "exec"
	envArgv    = "VAULTTEST_ARGV"   // JSON array: the program and its arguments
	envMemlock = "VAULTTEST_MEMLOCK"
	envCore    = "VAULTTEST_CORE"   // "max": raise RLIMIT_CORE to its hard limit
	envCgroup  = "VAULTTEST_CGROUP" // a cgroup.procs file to join before exec
)

// RunHelper is the exec helper's entry point, for a test binary's TestMain:
// when the environment asks for it, it prepares the process — a lower
// RLIMIT_MEMLOCK, RLIMIT_CORE raised to its hard limit, membership of a
// cgroup — and execs the program, reporting ok; otherwise it returns at
// once with ok false. Go's SysProcAttr sets neither rlimits nor (v1)
// cgroups, so a daemon that must start that way goes through a copy of the
// test binary (Daemon.Helper); the uid switch is the parent's SysProcAttr.
func RunHelper() (code int, ok bool) {
	if os.Getenv(envHelper) != "exec" {
		return 0, false
	}
	fail := func(what string, err error) (int, bool) {
		fmt.Fprintln(os.Stderr, "exec helper:", what, err)
		return 120, true
	}
	var argv []string
	if err := json.Unmarshal([]byte(os.Getenv(envArgv)), &argv); err != nil || len(argv) == 0 {
		return fail("bad argv", err)
	}
	if s := os.Getenv(envMemlock); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return fail("bad memlock", err)
		}
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: n, Max: n}); err != nil {
			return fail("setrlimit RLIMIT_MEMLOCK:", err)
		}
	}
	if os.Getenv(envCore) == "max" {
		var rl unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_CORE, &rl); err != nil {
			return fail("getrlimit RLIMIT_CORE:", err)
		}
		rl.Cur = rl.Max
		if err := unix.Setrlimit(unix.RLIMIT_CORE, &rl); err != nil {
			return fail("setrlimit RLIMIT_CORE:", err)
		}
	}
	if p := os.Getenv(envCgroup); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return fail("join cgroup:", err)
		}
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "VAULTTEST_") {
			env = append(env, e)
		}
	}
	return fail("exec:", syscall.Exec(argv[0], argv, env))
}

// GoCommand returns the go command of the toolchain running the tests:
// `go test` puts its GOROOT's bin first in the PATH of the tests it runs.
func GoCommand() (string, error) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("no go command to build the binaries: %w", err)
	}
	return gobin, nil
}

// Target is one binary for Build: the package, its build tags (comma
// separated, or empty) and the output path.
type Target struct {
	Out, Pkg, Tags string
}

// Build builds the targets, two at a time (the suites' budget assumes two
// cores), with the go command of this toolchain.
func Build(targets []Target) error {
	gobin, err := GoCommand()
	if err != nil {
		return err
	}
	sem := make(chan struct{}, 2)
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := []string{"build"}
			if tg.Tags != "" {
				args = append(args, "-tags", tg.Tags)
			}
			args = append(args, "-o", tg.Out, tg.Pkg)
			if out, err := exec.Command(gobin, args...).CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// CopySelf copies the running test binary into dir (mode 0755) and returns
// its path: the exec helper a daemon running as another uid can execute.
func CopySelf(dir string) (string, error) {
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		return "", err
	}
	p := filepath.Join(dir, "helper.test")
	return p, os.WriteFile(p, self, 0o755)
}

// Daemon is one vault installation and its current vaultd process. Every
// byte the vault writes lives under Base: state, keys, socket directory,
// the log of every run (logs/vaultd-N.log), vaultd's TMPDIR (the erasure
// proof's scratch store) and the working directory where a core would land.
// Set the exported option fields before Start.
type Daemon struct {
	T                testing.TB
	Base             string
	State, Keys      string
	Sock             string
	LogDir, Tmp, Cwd string
	Bin              string
	Station          string   // --station, when not empty
	Args             []string // flags after --state-dir, --key-dir, --socket and --station
	Env              []string // environment besides PATH and TMPDIR
	AsNobody         bool     // run as uid/gid 65534 (capabilities dropped)
	Memlock          uint64   // RLIMIT_MEMLOCK for the process (0: inherited)
	CoreMax          bool     // raise RLIMIT_CORE to its hard limit
	CgroupProcs      string   // join this cgroup before exec
	Helper           string   // the exec helper (CopySelf), for the four options above

	LastStart, LastReady time.Time

	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
	runs    int
	logPath string
}

// NewDaemon prepares an installation for bin in a new directory under the
// system's temporary directory (short: unix socket paths are limited),
// removed when the test ends, as is any process still running. For a
// daemon that runs as nobody the directories it writes are given to it
// (trap: a root-owned directory would make a refusal a plain EACCES).
func NewDaemon(t testing.TB, bin string, asNobody bool) *Daemon {
	t.Helper()
	base, err := os.MkdirTemp("", "vt-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	d := &Daemon{T: t, Base: base, Bin: bin, AsNobody: asNobody,
		State: filepath.Join(base, "state"), Keys: filepath.Join(base, "keys"),
		Sock: filepath.Join(base, "run", "vault.sock"), LogDir: filepath.Join(base, "logs"),
		Tmp: filepath.Join(base, "tmp"), Cwd: filepath.Join(base, "cwd")}
	for _, dir := range []string{d.LogDir, d.Tmp, d.Cwd} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if asNobody {
		for _, dir := range []string{base, d.Tmp, d.Cwd} {
			if err := os.Chown(dir, Nobody, Nobody); err != nil {
				t.Fatalf("chown for uid %d: %v", Nobody, err)
			}
		}
	}
	os.Chmod(base, 0o711)
	t.Cleanup(d.Kill)
	return d
}

// Start launches vaultd and waits until it serves. It fails the test if
// vaultd exits first or does not serve within 30 s.
func (d *Daemon) Start() {
	d.T.Helper()
	if err := d.TryStart(); err != nil {
		d.T.Fatal(err)
	}
}

// TryStart is Start returning the failure.
func (d *Daemon) TryStart() error {
	ready, err := d.Launch()
	if err != nil {
		return err
	}
	select {
	case <-ready:
		d.LastReady = time.Now()
		return nil
	case <-d.exited:
		return fmt.Errorf("vaultd exited before serving: %v\n%s", d.waitErr, d.Log())
	case <-time.After(30 * time.Second):
		return fmt.Errorf("vaultd did not serve within 30s\n%s", d.Log())
	}
}

// Launch starts vaultd and returns a channel closed when it serves; Exited
// is closed when it has exited and been reaped. Its stderr (JSON log lines)
// is copied to logs/vaultd-N.log.
func (d *Daemon) Launch() (<-chan struct{}, error) {
	args := []string{"--state-dir", d.State, "--key-dir", d.Keys, "--socket", d.Sock}
	if d.Station != "" {
		args = append(args, "--station", d.Station)
	}
	args = append(args, d.Args...)
	env := append([]string{"PATH=/usr/bin:/bin", "TMPDIR=" + d.Tmp}, d.Env...)
	var cmd *exec.Cmd
	if d.AsNobody || d.Memlock != 0 || d.CoreMax || d.CgroupProcs != "" {
		if d.Helper == "" {
			return nil, errors.New("vaulttest: no exec helper for a daemon that needs one")
		}
		argv, _ := json.Marshal(append([]string{d.Bin}, args...))
		cmd = exec.Command(d.Helper)
		env = append(env, envHelper+"=exec", envArgv+"="+string(argv))
		if d.Memlock != 0 {
			env = append(env, envMemlock+"="+strconv.FormatUint(d.Memlock, 10))
		}
		if d.CoreMax {
			env = append(env, envCore+"=max")
		}
		if d.CgroupProcs != "" {
			env = append(env, envCgroup+"="+d.CgroupProcs)
		}
		if d.AsNobody {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
		}
	} else {
		cmd = exec.Command(d.Bin, args...)
	}
	cmd.Env = env
	cmd.Dir = d.Cwd
	d.runs++
	d.logPath = filepath.Join(d.LogDir, fmt.Sprintf("vaultd-%d.log", d.runs))
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
	d.LastStart = time.Now()
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
			if !signalled && bytes.Contains(sc.Bytes(), []byte(ReadyLine)) {
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

// Exited is closed when the current process has exited and been reaped.
func (d *Daemon) Exited() <-chan struct{} { return d.exited }

// WaitErr is what Wait returned for the last process that exited.
func (d *Daemon) WaitErr() error { return d.waitErr }

// Pid is the current process's pid.
func (d *Daemon) Pid() int { return d.cmd.Process.Pid }

// Runs is how many times vaultd was launched.
func (d *Daemon) Runs() int { return d.runs }

// Alive reports whether the current process has not exited.
func (d *Daemon) Alive() bool {
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

// Signal sends sig to the current process.
func (d *Daemon) Signal(sig syscall.Signal) error { return d.cmd.Process.Signal(sig) }

// Stop sends sig and waits up to 30 s for the process to exit; it returns
// what Wait returned.
func (d *Daemon) Stop(sig syscall.Signal) error {
	d.T.Helper()
	d.cmd.Process.Signal(sig)
	return d.Wait(30 * time.Second)
}

// Wait waits up to limit for the process to exit on its own (a crash
// point, an OOM kill); past the limit it kills it and fails the test.
func (d *Daemon) Wait(limit time.Duration) error {
	d.T.Helper()
	select {
	case <-d.exited:
	case <-time.After(limit):
		d.cmd.Process.Kill()
		<-d.exited
		d.T.Fatalf("vaultd did not exit within %v\n%s", limit, d.Log())
	}
	return d.waitErr
}

// ExitedWithin reports whether the process exits within limit.
func (d *Daemon) ExitedWithin(limit time.Duration) bool {
	select {
	case <-d.exited:
		return true
	case <-time.After(limit):
		return false
	}
}

// Kill SIGKILLs the process if it still runs and reaps it.
func (d *Daemon) Kill() {
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

// Log returns the current run's log: what a goroutine has copied from
// vaultd's stderr so far, which may trail what vaultd has written while it
// runs (after it exits, Log is complete). LogWith waits for lines.
func (d *Daemon) Log() []byte {
	b, _ := os.ReadFile(d.logPath)
	return b
}

// LogWith returns the current run's log once it contains every one of
// wants, or, when within passes first, the log as it is and false.
func (d *Daemon) LogWith(within time.Duration, wants ...string) ([]byte, bool) {
	deadline := time.Now().Add(within)
	for {
		b := d.Log()
		all := true
		for _, w := range wants {
			all = all && bytes.Contains(b, []byte(w))
		}
		if all {
			return b, true
		}
		if time.Now().After(deadline) {
			return b, false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// AllLogs returns the logs of every run.
func (d *Daemon) AllLogs() []byte {
	var out []byte
	for i := 1; i <= d.runs; i++ {
		b, _ := os.ReadFile(filepath.Join(d.LogDir, fmt.Sprintf("vaultd-%d.log", i)))
		out = append(out, b...)
	}
	return out
}

// ExitStatus describes how a process ended.
type ExitStatus struct {
	Signal syscall.Signal // 0 when it exited
	Code   int
	Core   bool // the kernel reports a core dump
}

func (e ExitStatus) String() string {
	if e.Signal != 0 {
		return fmt.Sprintf("killed by %s (core dumped: %v)", unix.SignalName(e.Signal), e.Core)
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// StatusOf reads an exec Wait error.
func StatusOf(err error) ExitStatus {
	if err == nil {
		return ExitStatus{}
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return ExitStatus{Code: -1}
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok {
		return ExitStatus{Code: ee.ExitCode()}
	}
	if ws.Signaled() {
		return ExitStatus{Signal: ws.Signal(), Core: ws.CoreDump()}
	}
	return ExitStatus{Code: ws.ExitStatus()}
}
