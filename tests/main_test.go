package tests

import (
	"encoding/json"
	"errors"
	"flag"
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

	"golang.org/x/sys/unix"
)

// Flags of the acceptance suites.
var (
	crashIterations = flag.Int("crash.iterations", 300, "C3: SIGKILL iterations (random delays and named crash points)")
	crashSeed       = flag.Int64("crash.seed", 0, "C3/K4: seed of the crash schedule (0: from the clock; the seed is logged)")
	crashRotations  = flag.Int("crash.rotations", 20, "K4: kills at each named rotation crash point")
)

// The binaries TestMain builds into a directory every uid can read.
var bins struct {
	dir       string
	vaultd    string // release build
	crash     string // -tags crashpoints
	fault     string // -tags crashpoints,faultinject
	diag      string // -tags diagdump
	diagFault string // -tags diagdump,faultinject
	cut       string
	helper    string // a copy of this test binary, for helpers that run as another uid
}

// Helper modes of the test binary, selected by the environment.
const (
	envHelper  = "ACCEPT_HELPER" // "exec"
	envArgv    = "ACCEPT_ARGV"   // JSON array: the program and its arguments
	envMemlock = "ACCEPT_MEMLOCK"
	envCore    = "ACCEPT_CORE"   // "max": raise RLIMIT_CORE to its hard limit
	envCgroup  = "ACCEPT_CGROUP" // a cgroup.procs file to join before exec
)

// nobody is the uid (and gid) the unprivileged suites run vaultd as.
const nobody = 65534

func TestMain(m *testing.M) {
	if os.Getenv(envHelper) == "exec" {
		os.Exit(execHelper())
	}
	flag.Parse()
	code, err := buildAndRun(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "acceptance:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func buildAndRun(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "privacycut-accept-bin-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		return 0, err
	}
	bins.dir = dir
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gobin); err != nil {
		if gobin, err = exec.LookPath("go"); err != nil {
			return 0, fmt.Errorf("no go command to build the binaries: %w", err)
		}
	}
	targets := []struct {
		out  *string
		name string
		pkg  string
		tags string
	}{
		{&bins.vaultd, "vaultd", "../cmd/vaultd", ""},
		{&bins.crash, "vaultd-crash", "../cmd/vaultd", "crashpoints"},
		{&bins.fault, "vaultd-fault", "../cmd/vaultd", "crashpoints,faultinject"},
		{&bins.diag, "vaultd-diag", "../cmd/vaultd", "diagdump"},
		{&bins.diagFault, "vaultd-diag-fault", "../cmd/vaultd", "diagdump,faultinject"},
		{&bins.cut, "cut", "../cmd/cut", ""},
	}
	// Two builds at a time: the suites' budget assumes two cores.
	sem := make(chan struct{}, 2)
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, tg := range targets {
		*tg.out = filepath.Join(dir, tg.name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			args := []string{"build"}
			if tg.tags != "" {
				args = append(args, "-tags", tg.tags)
			}
			args = append(args, "-o", *tg.out, tg.pkg)
			cmd := exec.Command(gobin, args...)
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		return 0, err
	}
	bins.helper = filepath.Join(dir, "helper.test")
	if err := os.WriteFile(bins.helper, self, 0o755); err != nil {
		return 0, err
	}
	code := m.Run()
	if r3 := r3Verdict(); r3 != "" {
		fmt.Fprintln(os.Stderr, r3)
		if code == 0 {
			code = 1
		}
	}
	return code, nil
}

// execHelper prepares the process as the environment asks — a lower
// RLIMIT_MEMLOCK, RLIMIT_CORE raised to its hard limit, membership of a
// cgroup — and then execs the program. Go's SysProcAttr sets neither
// rlimits nor cgroups (v1), so a child that must start that way goes
// through this helper; the uid switch is the parent's SysProcAttr.
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
			fmt.Fprintln(os.Stderr, "exec helper: setrlimit RLIMIT_MEMLOCK:", err)
			return 120
		}
	}
	if os.Getenv(envCore) == "max" {
		var rl unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_CORE, &rl); err != nil {
			fmt.Fprintln(os.Stderr, "exec helper: getrlimit RLIMIT_CORE:", err)
			return 120
		}
		rl.Cur = rl.Max
		if err := unix.Setrlimit(unix.RLIMIT_CORE, &rl); err != nil {
			fmt.Fprintln(os.Stderr, "exec helper: setrlimit RLIMIT_CORE:", err)
			return 120
		}
	}
	if p := os.Getenv(envCgroup); p != "" {
		if err := os.WriteFile(p, []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			fmt.Fprintln(os.Stderr, "exec helper: join cgroup:", err)
			return 120
		}
	}
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "ACCEPT_") {
			env = append(env, e)
		}
	}
	err := syscall.Exec(argv[0], argv, env)
	fmt.Fprintln(os.Stderr, "exec helper: exec:", err)
	return 120
}
