package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/cmd/internal/cli"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/crash"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
	"golang.org/x/sys/unix"
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (uid switch to 65534, /proc/<pid>/mem, CAP_IPC_LOCK bypass): not running as root")
	}
}

func needMemfdSecret(t *testing.T) {
	t.Helper()
	fd, err := unix.MemfdSecret(unix.O_CLOEXEC)
	if err != nil {
		t.Skipf("needs memfd_secret(2): %v", err)
	}
	unix.Close(fd)
}

// TestP1MemfdSecretArena: on a kernel with memfd_secret the arena is
// secretmem, every arena page is "/secretmem (deleted)" with VmFlags lo and
// dd, and the pages on either side are ---p guards.
func TestP1MemfdSecretArena(t *testing.T) {
	needMemfdSecret(t)
	d := newDaemon(t, false)
	d.Args = []string{"--arena-size", "1048576"}
	d.Start()
	p := d.status()
	if p.Profile != "accepted" || p.Arena.Kind != "memfd_secret" || p.Arena.Bytes != 1<<20 || !p.Arena.Locked {
		t.Fatalf("status: %+v", p)
	}
	run, before, after := arenaRun(t, readSmaps(t, d.Pid()), func(m mapping) bool { return m.path == "/secretmem (deleted)" })
	var total uint64
	for _, m := range run {
		total += m.size()
		if !m.flags["lo"] || !m.flags["dd"] || m.perms != "rw-s" {
			t.Errorf("arena mapping %#x: perms %s flags %v", m.start, m.perms, m.flags)
		}
	}
	if total != 1<<20 {
		t.Errorf("secretmem mappings cover %d bytes, want %d", total, 1<<20)
	}
	for _, g := range []mapping{before, after} {
		if g.perms != "---p" || g.size() < uint64(os.Getpagesize()) {
			t.Errorf("guard %#x-%#x is %q, want ---p", g.start, g.end, g.perms)
		}
	}
}

// TestP2MlockFallback: with memfd_secret forced unavailable, the arena is
// anonymous, locked and not dumped, between ---p guards, and VmLck covers
// it.
func TestP2MlockFallback(t *testing.T) {
	d := newDaemon(t, false)
	d.Bin = vaultdCP
	d.Env = []string{"VAULTD_TEST_ARENA_FALLBACK=1"}
	d.Args = []string{"--arena-size", "1048576"}
	d.Start()
	p := d.status()
	if p.Profile != "accepted" || p.Arena.Kind != "mlock" || !p.Arena.Locked {
		t.Fatalf("status: %+v", p)
	}
	run, before, after := arenaRun(t, readSmaps(t, d.Pid()), func(m mapping) bool {
		return m.path == "" && m.flags["lo"] && m.flags["dd"]
	})
	var total uint64
	for _, m := range run {
		total += m.size()
		if m.perms != "rw-p" {
			t.Errorf("arena mapping perms %s, want rw-p", m.perms)
		}
	}
	if total != 1<<20 {
		t.Errorf("locked undumpable anonymous memory is %d bytes, want %d", total, 1<<20)
	}
	if before.perms != "---p" || after.perms != "---p" {
		t.Errorf("guards %q %q, want ---p", before.perms, after.perms)
	}
	if lck := kB(t, statusField(t, d.Pid(), "VmLck")); lck < 1<<20 {
		t.Errorf("VmLck %d below the arena", lck)
	}
}

// TestP3Hardened: vaultd running as an ordinary uid is not dumpable (its
// /proc files belong to root and a same-uid process_vm_readv gets EPERM)
// and its core limit is 0 0.
func TestP3Hardened(t *testing.T) {
	needRoot(t)
	d := newDaemon(t, true)
	d.Args = []string{"--arena-size", "262144", "--allow-uid", "0"}
	d.Start()
	pid := d.Pid()
	if uid := strings.Fields(statusField(t, pid, "Uid"))[0]; uid != strconv.Itoa(nobody) {
		t.Fatalf("vaultd runs as uid %s, want %d", uid, nobody)
	}
	if p := d.status(); p.Profile != "accepted" || p.Dumpable || p.CoreLimit != 0 {
		t.Fatalf("status: %+v", p)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(fmt.Sprintf("/proc/%d/status", pid), &st); err != nil || st.Uid != 0 {
		t.Errorf("/proc/%d/status owned by uid %d (%v), want 0 (not dumpable)", pid, st.Uid, err)
	}
	limits, _ := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	found := false
	for _, line := range strings.Split(string(limits), "\n") {
		if f, ok := strings.CutPrefix(line, "Max core file size"); ok {
			found = true
			if ff := strings.Fields(f); len(ff) < 2 || ff[0] != "0" || ff[1] != "0" {
				t.Errorf("core limit line %q, want 0 0", line)
			}
		}
	}
	if !found {
		t.Errorf("no core limit line in /proc/%d/limits", pid)
	}
	// A process of the same uid cannot read the daemon's memory.
	addr := readSmaps(t, pid)[0].start
	cmd := exec.Command(helper)
	cmd.Env = []string{envHelper + "=peek", envPID + "=" + strconv.Itoa(pid), envAddr + "=" + strconv.FormatUint(addr, 10)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "EPERM" {
		t.Errorf("same-uid process_vm_readv: %q %v, want EPERM", out, err)
	}
}

// TestP4MemlockBelowArena: as an ordinary uid with RLIMIT_MEMLOCK below the
// arena, vaultd starts, reports not_proven naming the lock item, refuses
// every reversible request with VAULT_PROFILE_NOT_PROVEN (cut exits 3),
// answers the rest, and does not panic.
func TestP4MemlockBelowArena(t *testing.T) {
	needRoot(t)
	d := newDaemon(t, true)
	d.Memlock = 64 << 10
	d.Args = []string{"--arena-size", "1048576", "--allow-uid", "0"}
	d.Start()
	p := d.status()
	if p.Profile != "not_proven" || !contains(p.Reasons, "arena_locked") || !contains(p.Reasons, "arena") || p.Arena.Kind != "none" {
		t.Fatalf("status: %s reasons %v arena %+v", p.Profile, p.Reasons, p.Arena)
	}
	code, out, _ := d.cut("vault", "status")
	if code != cli.ExitOK || !bytes.Contains(out, []byte("memory lock limit reached")) {
		t.Errorf("human status does not say why (exit %d):\n%s", code, out)
	}
	c := d.client()
	// No sealing key without an arena; a request sealed to any key is
	// refused by the profile gate first.
	if _, err := c.Seal(bg, []seal.Pair{{Category: "module", Value: []byte("x")}}); vaultapi.CodeOf(err) != receipts.VaultProfileNotProven {
		t.Errorf("Seal against a vault without an arena: %v", err)
	}
	var key [32]byte
	key[0] = 9
	sealed, _ := seal.Seal(key, []seal.Pair{{Category: "module", Value: []byte("x")}})
	if _, err := c.CreateLease(bg, createReq(sealed, 0)); vaultapi.CodeOf(err) != receipts.VaultProfileNotProven {
		t.Errorf("CreateLease: %v", err)
	}
	code, out, _ = d.cut("vault", "rotate", "--json")
	if code != cli.ExitRefused || !bytes.Contains(out, []byte(`"code":"VAULT_PROFILE_NOT_PROVEN"`)) {
		t.Errorf("cut vault rotate: exit %d %s", code, out)
	}
	if code, _, errb := d.cut("lease", "list"); code != cli.ExitOK {
		t.Errorf("cut lease list: exit %d %s", code, errb)
	}
	if err := d.Stop(syscall.SIGTERM); err != nil {
		t.Errorf("vaultd exit: %v", err)
	}
	if bytes.Contains(d.AllLogs(), []byte("panic")) || bytes.Contains(d.AllLogs(), []byte("goroutine ")) {
		t.Errorf("vaultd log holds a panic:\n%s", d.AllLogs())
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestP5Traceback: a raised GOTRACEBACK makes the profile unproven.
func TestP5Traceback(t *testing.T) {
	for _, level := range []string{"all", "system", "crash", "1"} {
		t.Run(level, func(t *testing.T) {
			d := newDaemon(t, false)
			d.Env = []string{"GOTRACEBACK=" + level}
			d.Args = []string{"--arena-size", "65536"}
			d.Start()
			p := d.status()
			if p.Profile != "not_proven" || len(p.Reasons) != 1 || p.Reasons[0] != "traceback" || p.Traceback != level {
				t.Fatalf("status: %s reasons %v traceback %q", p.Profile, p.Reasons, p.Traceback)
			}
			if code, _, _ := d.cut("vault", "rotate"); code != cli.ExitRefused {
				t.Errorf("rotate: exit %d, want 3", code)
			}
		})
	}
}

// TestP6NoMlockall: nothing in the vault calls mlockall, and the daemon's
// locked memory is its arena, not Badger's mappings.
func TestP6NoMlockall(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, dir := range []string{filepath.Join(root, "vault"), "."} {
		err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if bytes.Contains(b, []byte("Mlockall")) || bytes.Contains(b, []byte("MCL_FUTURE")) {
				t.Errorf("%s calls mlockall", p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, bad := range []string{"net/http/pprof", "github.com/privacycut/privacycut/vault/vaulttest"} {
		if bytes.Contains(out, []byte(bad+"\n")) {
			t.Errorf("vaultd depends on %s", bad)
		}
	}
	d := newDaemon(t, false)
	d.Args = []string{"--arena-size", "1048576"}
	d.Start()
	c := d.client()
	ps, _ := canaryPairs("p6", 3)
	for range 20 {
		grant(t, c, ps, true)
	}
	lck := kB(t, statusField(t, d.Pid(), "VmLck"))
	if lck < 1<<20 || lck > 1<<20+256<<10 {
		t.Errorf("VmLck %d kB with a 1024 kB arena: something else is locked", lck/1024)
	}
}

// TestP7ExhaustionAndMemoryScan: a grant larger than the arena is refused
// with LIMIT_EXCEEDED, the daemon keeps serving, and no canary appears in
// any readable mapping of the daemon, neither after the refusal nor while
// a lease over other canaries is active, nor after it is consumed.
func TestP7ExhaustionAndMemoryScan(t *testing.T) {
	needRoot(t)
	d := newDaemon(t, false)
	d.Args = []string{"--arena-size", "65536"}
	d.Start()
	c := d.client()
	var big []seal.Pair
	var bigVals [][]byte
	for i := range 4 {
		v := append([]byte(fmt.Sprintf("VAULTD-CANARY-p7big-%d-%s-", i, randHex(6))), bytes.Repeat([]byte{'q'}, 20<<10)...)
		big = append(big, seal.Pair{Category: "module", Value: v})
		bigVals = append(bigVals, v[:40])
	}
	sealed, err := c.Seal(bg, big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateLease(bg, createReq(sealed, 0)); vaultapi.CodeOf(err) != receipts.LimitExceeded {
		t.Fatalf("grant past the arena: %v, want LIMIT_EXCEEDED", err)
	}
	hits, scanned, _ := scanMemory(t, d.Pid(), bigVals)
	if len(hits) > 0 {
		t.Errorf("refused values in the daemon's memory: %v", hits)
	}
	if scanned < 1<<20 {
		t.Fatalf("scanned only %d bytes of the daemon", scanned)
	}
	ps, vals := canaryPairs("p7", 4)
	res := grant(t, c, ps, true)
	if hits, _, _ := scanMemory(t, d.Pid(), vals); len(hits) > 0 {
		t.Errorf("values of an active lease readable in the daemon's memory: %v", hits)
	}
	ret := "sha256:" + randHex(32)
	if _, err := c.Claim(bg, res.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Consume(bg, res.Lease.ID, claimReq(ret)); err != nil {
		t.Fatal(err)
	}
	if hits, _, _ := scanMemory(t, d.Pid(), vals); len(hits) > 0 {
		t.Errorf("values in the daemon's memory after consume: %v", hits)
	}
	// The scan can find what is there: the test process's own copy.
	if hits, _, _ := scanMemory(t, os.Getpid(), vals[:1]); len(hits) == 0 {
		t.Errorf("the memory scan cannot find a canary in the test process (the check cannot fail)")
	}
}

// TestM5PanicTraceback: a panic inside a handler holding the map in the
// arena prints a traceback without any value: secrets are passed by
// handle. Under GOTRACEBACK=single (set by the operator) the traceback has
// the panicking goroutine's stack; with GOTRACEBACK unset vaultd runs
// under "none" and prints the panic's message and no stack at all.
func TestM5PanicTraceback(t *testing.T) {
	for _, tc := range []struct {
		env    []string
		stacks bool
	}{{[]string{"GOTRACEBACK=single"}, true}, {nil, false}} {
		d := newDaemon(t, false)
		d.Bin = vaultdCP
		d.Env = append([]string{"VAULTD_CRASHPOINT=" + crash.GrantMapBuilt + ":1:panic"}, tc.env...)
		d.Start()
		c := d.client()
		ps, vals := canaryPairs("m5", 4)
		sealed, err := c.Seal(bg, ps)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CreateLease(bg, createReq(sealed, 0)); err == nil {
			t.Fatalf("CreateLease succeeded through an armed panic")
		}
		werr := d.Wait(30 * time.Second)
		var ee *exec.ExitError
		if !errors.As(werr, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("vaultd exit: %v, want a panic (exit 2)", werr)
		}
		logs := d.AllLogs()
		if !bytes.Contains(logs, []byte("panic: crash: armed panic point")) || bytes.Contains(logs, []byte("goroutine ")) != tc.stacks {
			t.Fatalf("env %q: want the panic with stacks %v on stderr:\n%s", tc.env, tc.stacks, logs)
		}
		if hits := vaulttest.Find(logs, vals); len(hits) > 0 {
			t.Errorf("the traceback holds values %v:\n%s", hits, logs)
		}
	}
}
