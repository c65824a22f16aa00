//go:build linux && (amd64 || arm64 || riscv64)

package harden

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
)

// The test binary re-executes itself as a helper process (possibly as uid
// 65534) when helperEnv names a mode.
const (
	helperEnv   = "PRIVACYCUT_HARDEN_TEST_HELPER"
	applyEnv    = "PRIVACYCUT_HARDEN_TEST_APPLY"    // "1": call Apply first
	fallbackEnv = "PRIVACYCUT_HARDEN_TEST_FALLBACK" // "1": Options.ForceFallback
	waitEnv     = "PRIVACYCUT_HARDEN_TEST_WAIT"     // "1": after reporting, wait for stdin EOF
	memlockEnv  = "PRIVACYCUT_HARDEN_TEST_MEMLOCK"  // RLIMIT_MEMLOCK to set, bytes
	targetEnv   = "PRIVACYCUT_HARDEN_TEST_TARGET"   // "pid addr len" for the vmread helper

	nobody     = 65534
	childArena = 256 << 10
)

var (
	helperDir  string
	helperOnce sync.Once
	helperPath string
	helperErr  error
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	code := m.Run()
	if helperDir != "" {
		os.RemoveAll(helperDir)
	}
	os.Exit(code)
}

// report is what a helper prints, one JSON line on stdout.
type report struct {
	UID      int         `json:"uid"`
	PID      int         `json:"pid"`
	Profile  *Profile    `json:"profile,omitempty"`
	ApplyErr string      `json:"apply_err,omitempty"`
	NewErr   string      `json:"new_err,omitempty"`
	Probe    uintptr     `json:"probe,omitempty"`
	ProbeLen int         `json:"probe_len,omitempty"`
	Attempts []attempt   `json:"attempts,omitempty"`
	Read     *readResult `json:"read,omitempty"`
}

// attempt is one arena.New under a lowered RLIMIT_MEMLOCK.
type attempt struct {
	Fallback  bool          `json:"fallback"`
	Size      int           `json:"size"`
	Kind      arena.Kind    `json:"kind"`
	Code      receipts.Code `json:"code"`
	LockLimit bool          `json:"lock_limit"`
	Err       string        `json:"err"`
}

type readResult struct {
	Errno string `json:"errno"`
	Data  string `json:"data"` // hex
}

// probeText is planted in the helper's heap so the vmread helper can show it
// reads real memory when it is allowed to. It is not secret.
const probeText = "P3-PROBE-harden-readable-heap-bytes"

func runHelper(mode string) int {
	out := json.NewEncoder(os.Stdout)
	r := report{UID: os.Getuid(), PID: os.Getpid()}
	switch mode {
	case "profile":
		if os.Getenv(applyEnv) == "1" {
			if err := Apply(); err != nil {
				r.ApplyErr = err.Error()
			}
		}
		a, err := arena.New(childArena, arena.Options{ForceFallback: os.Getenv(fallbackEnv) == "1"})
		if err != nil {
			r.NewErr = err.Error()
		}
		p := Prove(a)
		r.Profile = &p
		probe := []byte(probeText)
		r.Probe, r.ProbeLen = uintptr(unsafe.Pointer(&probe[0])), len(probe)
		if err := out.Encode(r); err != nil {
			return 1
		}
		if os.Getenv(waitEnv) == "1" {
			_, _ = io.Copy(io.Discard, os.Stdin)
		}
		runtimeKeep(probe)
		if a != nil {
			_ = a.Close()
		}
		return 0
	case "memlock":
		limit, err := strconv.ParseUint(os.Getenv(memlockEnv), 10, 64)
		if err != nil {
			return 2
		}
		if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: limit, Max: limit}); err != nil {
			fmt.Fprintln(os.Stderr, "helper: setrlimit:", err)
			return 1
		}
		for _, size := range []int{1 << 20, 16 << 10} {
			for _, fb := range []bool{false, true} {
				at := attempt{Fallback: fb, Size: size}
				a, err := arena.New(size, arena.Options{ForceFallback: fb})
				if err != nil {
					var e *arena.Error
					if errors.As(err, &e) {
						at.Code = e.Code
					}
					at.LockLimit = errors.Is(err, arena.ErrLockLimit)
					at.Err = err.Error()
				} else {
					at.Kind = a.Kind()
					if err := a.Close(); err != nil {
						at.Err = err.Error()
					}
				}
				r.Attempts = append(r.Attempts, at)
			}
		}
		p := Prove(nil)
		r.Profile = &p
		if err := out.Encode(r); err != nil {
			return 1
		}
		return 0
	case "vmread":
		f := strings.Fields(os.Getenv(targetEnv))
		if len(f) != 3 {
			return 2
		}
		pid, _ := strconv.Atoi(f[0])
		addr, _ := strconv.ParseUint(f[1], 10, 64)
		n, _ := strconv.Atoi(f[2])
		buf := make([]byte, n)
		_, err := unix.ProcessVMReadv(pid,
			[]unix.Iovec{{Base: &buf[0], Len: uint64(n)}},
			[]unix.RemoteIovec{{Base: uintptr(addr), Len: n}}, 0)
		rr := &readResult{}
		if err != nil {
			var errno unix.Errno
			if errors.As(err, &errno) {
				rr.Errno = unix.ErrnoName(errno)
			} else {
				rr.Errno = err.Error()
			}
		} else {
			rr.Data = hex.EncodeToString(buf)
		}
		r.Read = rr
		if err := out.Encode(r); err != nil {
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode")
	return 2
}

//go:noinline
func runtimeKeep(b []byte) { _ = b[0] }

// helperBinary returns a copy of the test binary that uid 65534 can execute:
// go test's build directory is 0700 root (trap 22), so the copy lives in a
// directory owned by 65534.
func helperBinary(t *testing.T) string {
	t.Helper()
	helperOnce.Do(func() {
		self, err := os.Executable()
		if err != nil {
			helperErr = err
			return
		}
		helperDir, err = os.MkdirTemp("", "harden-helper-")
		if err != nil {
			helperErr = err
			return
		}
		if err := os.Chown(helperDir, nobody, nobody); err != nil {
			helperErr = err
			return
		}
		b, err := os.ReadFile(self)
		if err != nil {
			helperErr = err
			return
		}
		helperPath = filepath.Join(helperDir, "harden.test")
		helperErr = os.WriteFile(helperPath, b, 0o755)
	})
	if helperErr != nil {
		t.Fatalf("preparing the helper binary: %v", helperErr)
	}
	return helperPath
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test switches to uid 65534 (SysProcAttr.Credential) to drop CAP_IPC_LOCK and CAP_SYS_PTRACE")
	}
}

// helperCmd builds a helper process. uid < 0 keeps the test's own uid.
func helperCmd(t *testing.T, mode string, uid int, env ...string) *exec.Cmd {
	t.Helper()
	bin := os.Args[0]
	if uid >= 0 {
		bin = helperBinary(t)
	}
	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(childEnv(), append([]string{helperEnv + "=" + mode}, env...)...)
	if uid >= 0 {
		cmd.Dir = helperDir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}}
	}
	return cmd
}

// childEnv is this process's environment for a helper: without GOTRACEBACK
// (each test sets its own), and with the race runtime's one-second exit
// delay turned off (a no-op in builds without -race).
func childEnv() []string {
	env := withoutEnv(withoutEnv(os.Environ(), "GOTRACEBACK"), "GORACE")
	return append(env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

// runReport runs a helper to completion and decodes its report.
func runReport(t *testing.T, cmd *exec.Cmd) report {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper: %v\nstderr:\n%s", err, stderr.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("helper wrote to stderr (a panic?):\n%s", stderr.String())
	}
	var r report
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("helper report: %v\n%s", err, stdout.String())
	}
	return r
}

// startReport starts a helper that reports and then waits for stdin EOF.
// The returned function ends it.
func startReport(t *testing.T, cmd *exec.Cmd) (report, func()) {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %d: %v\nstderr:\n%s", cmd.Process.Pid, err, stderr.String())
		}
	}
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err != nil {
		stop()
		t.Fatalf("helper report: %v", err)
	}
	var r report
	if err := json.Unmarshal(line, &r); err != nil {
		stop()
		t.Fatalf("helper report: %v\n%s", err, line)
	}
	return r, stop
}

// ownCoreLimit is this process's RLIMIT_CORE, which helpers inherit.
func ownCoreLimit(t *testing.T) rlimit {
	t.Helper()
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &rl); err != nil {
		t.Fatal(err)
	}
	return rlimit{rl.Cur, rl.Max}
}

func itemOK(p Profile, name string) (bool, string) {
	for _, it := range p.Items {
		if it.Name == name {
			return it.OK, it.Detail
		}
	}
	return false, "item missing"
}

// TestProveArena is P1 and P2 in process: the arena's smaps entries carry lo
// and dd, the right backing, guard pages ---p, and VmLck covers it. The test
// re-reads smaps itself rather than trusting Prove's items alone.
func TestProveArena(t *testing.T) {
	for _, k := range []struct {
		name    string
		force   bool
		kind    arena.Kind
		path    string
		perms   string
		flags   []string
		skipMsg string
	}{
		{"P1 memfd_secret", false, arena.KindMemfdSecret, "/secretmem (deleted)", "rw-s", []string{"lo", "dd"}, "memfd_secret(2) not available on this kernel"},
		{"P2 mlock", true, arena.KindMlock, "", "rw-p", []string{"lo", "dd", "wf"}, ""},
	} {
		t.Run(k.name, func(t *testing.T) {
			if !k.force {
				fd, err := unix.MemfdSecret(unix.O_CLOEXEC)
				if err != nil {
					t.Skip(k.skipMsg + ": " + err.Error())
				}
				unix.Close(fd)
			}
			a, err := arena.New(childArena, arena.Options{ForceFallback: k.force})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			if a.Kind() != k.kind {
				t.Fatalf("Kind = %s, want %s", a.Kind(), k.kind)
			}
			p := Prove(a)
			for _, name := range []string{ItemArena, ItemArenaLocked, ItemArenaDontDump, ItemArenaBacking, ItemArenaGuards, ItemVmLck} {
				if ok, detail := itemOK(p, name); !ok {
					t.Errorf("item %s failed: %s", name, detail)
				}
			}
			want := ArenaState{Kind: string(k.kind), Bytes: childArena, Locked: true}
			if diff := cmp.Diff(want, p.Arena); diff != "" {
				t.Errorf("arena state (-want +got):\n%s", diff)
			}

			// Independent re-read of the kernel state.
			b, err := os.ReadFile("/proc/self/smaps")
			if err != nil {
				t.Fatal(err)
			}
			maps, err := parseSmaps(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			start, end := a.Range()
			pg := uintptr(os.Getpagesize())
			var data, before, after *mapping
			for i := range maps {
				m := &maps[i]
				switch {
				case m.Start <= start && end <= m.End:
					data = m
				case m.Start <= start-pg && start <= m.End:
					before = m
				case m.Start <= end && end+pg <= m.End:
					after = m
				}
			}
			if data == nil || before == nil || after == nil {
				t.Fatalf("smaps: data %v, guard before %v, guard after %v", data, before, after)
			}
			if data.Path != k.path || data.Perms != k.perms {
				t.Errorf("data entry %q %s, want %q %s", data.Path, data.Perms, k.path, k.perms)
			}
			for _, f := range k.flags {
				if !data.has(f) {
					t.Errorf("data entry VmFlags %v lack %s", data.Flags, f)
				}
			}
			if before.Perms != "---p" || after.Perms != "---p" {
				t.Errorf("guards %s and %s, want ---p", before.Perms, after.Perms)
			}
			st, err := os.ReadFile("/proc/self/status")
			if err != nil {
				t.Fatal(err)
			}
			lck, err := parseStatusKB(bytes.NewReader(st), "VmLck")
			if err != nil || lck < childArena {
				t.Errorf("VmLck = %d (%v), want ≥ %d", lck, err, childArena)
			}
			t.Logf("%s arena %#x-%#x: %s %q VmFlags %v; VmLck %d kB", k.kind, start, end, data.Perms, data.Path, data.Flags, lck/1024)

			// Negative: once closed, the same arena proves nothing.
			if err := a.Close(); err != nil {
				t.Fatal(err)
			}
			if p := Prove(a); p.Accepted() || !slices.Contains(p.Reasons, ItemArena) {
				t.Errorf("closed arena: profile %s, reasons %v; want not_proven naming %s", p.Profile, p.Reasons, ItemArena)
			}
		})
	}
}

// TestProveNil: no arena is never accepted, and names the arena.
func TestProveNil(t *testing.T) {
	p := Prove(nil)
	if p.Accepted() || !slices.Contains(p.Reasons, ItemArena) || p.Arena.Kind != "none" || p.Schema != Schema || p.PID != os.Getpid() {
		t.Errorf("Prove(nil) = %+v", p)
	}
}

// TestHardenedChild: a child that calls Apply and creates an arena proves an
// accepted profile, for both kinds; the same child without Apply is not
// proven, naming exactly the dumpable flag and the core limit.
func TestHardenedChild(t *testing.T) {
	// The unhardened control inherits this process's core limit.
	controlReasons := []string{ItemDumpable}
	if inherited := ownCoreLimit(t); inherited != (rlimit{0, 0}) {
		controlReasons = append(controlReasons, ItemCoreLimit)
	}
	for _, k := range []struct {
		name  string
		force string
		kind  string
	}{{"memfd_secret", "0", "memfd_secret"}, {"mlock", "1", "mlock"}} {
		t.Run(k.name, func(t *testing.T) {
			if k.force == "0" {
				fd, err := unix.MemfdSecret(unix.O_CLOEXEC)
				if err != nil {
					t.Skip("memfd_secret(2) not available on this kernel: " + err.Error())
				}
				unix.Close(fd)
			}
			r := runReport(t, helperCmd(t, "profile", -1, applyEnv+"=1", fallbackEnv+"="+k.force))
			if r.ApplyErr != "" || r.NewErr != "" {
				t.Fatalf("helper: apply %q, new %q", r.ApplyErr, r.NewErr)
			}
			p := *r.Profile
			got := verdictOf(p)
			want := verdict{Accepted, []string{}, ArenaState{Kind: k.kind, Bytes: childArena, Locked: true}, false, 0}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("hardened child (-want +got):\n%s\nitems: %+v", diff, p.Items)
			}
			if p.PID != r.PID || p.PID == os.Getpid() {
				t.Errorf("profile pid %d, helper pid %d", p.PID, r.PID)
			}

			r = runReport(t, helperCmd(t, "profile", -1, applyEnv+"=0", fallbackEnv+"="+k.force))
			if diff := cmp.Diff(controlReasons, r.Profile.Reasons); diff != "" || r.Profile.Accepted() {
				t.Errorf("unhardened child: %s, reasons (-want +got):\n%s", r.Profile.Profile, diff)
			}
		})
	}
}

// TestTracebackChild is P5: GOTRACEBACK=all, system, crash or a numeric level
// ≥ 1 (1 is "all" to the runtime) leaves the profile not proven with exactly that reason; unset, none and
// single and 0 are accepted.
func TestTracebackChild(t *testing.T) {
	tests := []struct {
		value string // "-" leaves it unset
		ok    bool
	}{
		{"-", true}, {"none", true}, {"single", true},
		{"all", false}, {"system", false}, {"crash", false}, {"1", false}, {"2", false}, {"0", true},
	}
	for _, tt := range tests {
		t.Run("GOTRACEBACK="+tt.value, func(t *testing.T) {
			cmd := helperCmd(t, "profile", -1, applyEnv+"=1")
			if tt.value != "-" {
				cmd.Env = append(cmd.Env, "GOTRACEBACK="+tt.value)
			}
			r := runReport(t, cmd)
			want := verdict{Accepted, []string{}, r.Profile.Arena, false, 0}
			if !tt.ok {
				want.Profile, want.Reasons = NotProven, []string{ItemTraceback}
			}
			if diff := cmp.Diff(want, verdictOf(*r.Profile)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			seen := tt.value
			if seen == "-" {
				seen = ""
			}
			if r.Profile.Traceback != seen {
				t.Errorf("traceback reported %q, want %q", r.Profile.Traceback, seen)
			}
		})
	}
}

// TestExternalView is P3: a hardened child running as uid 65534, checked
// from outside. Its /proc files are owned by root, its limits show a core
// size of 0 0, and another uid-65534 process cannot read its memory
// (process_vm_readv → EPERM). The unhardened control child, same uid, is
// readable, so the EPERM is the hardening's doing.
func TestExternalView(t *testing.T) {
	requireRoot(t)
	for _, c := range []struct {
		name     string
		apply    string
		owner    uint32
		core     rlimit
		errno    string
		readable bool
		accepted bool
	}{
		{"hardened", "1", 0, rlimit{0, 0}, "EPERM", false, true},
		{"control", "0", nobody, ownCoreLimit(t), "", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, stop := startReport(t, helperCmd(t, "profile", nobody, applyEnv+"="+c.apply, waitEnv+"=1"))
			defer stop()
			if r.UID != nobody {
				t.Fatalf("helper runs as uid %d, want %d", r.UID, nobody)
			}
			if r.ApplyErr != "" || r.NewErr != "" {
				t.Fatalf("helper: apply %q, new %q", r.ApplyErr, r.NewErr)
			}
			if r.Profile.Accepted() != c.accepted {
				t.Errorf("helper profile %s, reasons %v", r.Profile.Profile, r.Profile.Reasons)
			}
			fi, err := os.Stat(fmt.Sprintf("/proc/%d/status", r.PID))
			if err != nil {
				t.Fatal(err)
			}
			if uid := fi.Sys().(*syscall.Stat_t).Uid; uid != c.owner {
				t.Errorf("/proc/%d/status owned by uid %d, want %d", r.PID, uid, c.owner)
			}
			lim, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", r.PID))
			if err != nil {
				t.Fatal(err)
			}
			core, err := parseLimits(bytes.NewReader(lim), "Max core file size")
			if err != nil || core != c.core {
				t.Errorf("/proc/%d/limits core = %+v (%v), want %+v", r.PID, core, err, c.core)
			}

			rd := runReport(t, helperCmd(t, "vmread", nobody,
				targetEnv+"="+fmt.Sprintf("%d %d %d", r.PID, r.Probe, r.ProbeLen)))
			if rd.UID != nobody {
				t.Fatalf("reader runs as uid %d", rd.UID)
			}
			got := readResult{Errno: rd.Read.Errno}
			want := readResult{Errno: c.errno}
			if c.readable {
				got.Data, want.Data = rd.Read.Data, hex.EncodeToString([]byte(probeText))
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("same-uid process_vm_readv (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMemlockLimit is P4 at arena level: as uid 65534 with RLIMIT_MEMLOCK
// lowered to 64 KiB, a 1 MiB arena fails with LIMIT_EXCEEDED for both kinds,
// without a panic, while a 16 KiB arena still works (so the refusal is the
// limit, not a permission problem), and Prove(nil) is not proven naming the
// arena.
func TestMemlockLimit(t *testing.T) {
	requireRoot(t)
	const limit = 64 << 10
	r := runReport(t, helperCmd(t, "memlock", nobody, memlockEnv+"="+strconv.Itoa(limit)))
	if r.UID != nobody {
		t.Fatalf("helper runs as uid %d", r.UID)
	}
	secret := arena.KindMemfdSecret
	if fd, err := unix.MemfdSecret(unix.O_CLOEXEC); err != nil {
		secret = arena.KindMlock // the kernel lacks memfd_secret: both attempts use mlock
	} else {
		unix.Close(fd)
	}
	type outcome struct {
		Fallback  bool
		Size      int
		Kind      arena.Kind
		Code      receipts.Code
		LockLimit bool
	}
	var got []outcome
	for _, a := range r.Attempts {
		got = append(got, outcome{a.Fallback, a.Size, a.Kind, a.Code, a.LockLimit})
	}
	want := []outcome{
		{false, 1 << 20, "", receipts.LimitExceeded, true},
		{true, 1 << 20, "", receipts.LimitExceeded, true},
		{false, 16 << 10, secret, "", false},
		{true, 16 << 10, arena.KindMlock, "", false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("arena.New under RLIMIT_MEMLOCK=%d as uid %d (-want +got):\n%s", limit, nobody, diff)
	}
	for _, a := range r.Attempts {
		t.Logf("fallback=%v size=%d: kind %q err %q", a.Fallback, a.Size, a.Kind, a.Err)
	}
	p := r.Profile
	if p.Accepted() || !slices.Contains(p.Reasons, ItemArena) || p.Arena.Kind != "none" {
		t.Errorf("Prove(nil) in the helper: %s, reasons %v, arena %+v", p.Profile, p.Reasons, p.Arena)
	}
}
