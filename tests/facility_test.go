package tests

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// The facilities a suite may need from the machine. Every skip goes through
// requireFacility, which records it, so that the R3 meta-test can tell a
// skip from a pass.
const (
	facRoot        = "root"          // euid 0: uid switches, /proc/<pid>/mem, cgroup writes
	facCgroupMem   = "cgroup-memory" // a writable memory controller (v1 memory.limit_in_bytes or v2 memory.max)
	facMemfdSecret = "memfd_secret"  // memfd_secret(2)
	facCorePattern = "core-pattern"  // kernel core files: core_pattern not a pipe, RLIMIT_CORE hard limit ≥ 64 MiB
	facTmpfs       = "tmpfs"         // mounting a size-limited tmpfs (root, mount(2))
	facLoopExt4    = "loop-ext4"     // an ext4 image on a loop device (mkfs.ext4, mount -o loop) that FS_IOC_SHUTDOWN fails with EIO
)

// suiteFacilities is the statement of which suite needs what. A suite that
// asks requireFacility for a facility not listed here fails: the table is
// what R3 checks, so it must not drift from the suites.
var suiteFacilities = map[string][]string{
	"TestR1CgroupMemoryPressure":    {facRoot, facCgroupMem},
	"TestR2MemlockBelowArena":       {facRoot, facMemfdSecret},
	"TestM1CoreScan":                {facCorePattern, facMemfdSecret},
	"TestM1NoCoreInProduction":      {facCorePattern},
	"TestM2LiveMemoryScan":          {facRoot, facMemfdSecret},
	"TestFaultsAreCaught":           {facRoot, facCorePattern, facMemfdSecret, facTmpfs},
	"TestDiskFaults":                {facRoot, facTmpfs, facLoopExt4},
	"TestC3CrashLoop":               nil,
	"TestK4RotationCrashPoints":     nil,
	"TestM6CanaryScanEndToEnd":      nil,
	"TestC1TwoBootSIGTERM":          nil,
	"TestC2TwoBootSIGKILL":          nil,
	"TestC4ExpiryAcrossRestart":     nil,
	"TestK2VerifiedPurge":           nil,
	"TestK5KeyStoreLoss":            nil,
	"TestTestHooksOnlyInTestBuilds": nil,
	"TestR3NoVacuousSkips":          nil,
	"TestEmptyLogAfterCrash":        nil,
}

// probe is the outcome of checking one facility.
type probe struct {
	ok     bool
	reason string // why it is missing ("" when ok)
}

var (
	probeOnce sync.Once
	probes    map[string]probe
	cgroupEnv cgroupInfo // where the memory controller is, when facCgroupMem is ok
)

func probeAll() map[string]probe {
	probeOnce.Do(func() {
		probes = map[string]probe{}
		if os.Geteuid() == 0 {
			probes[facRoot] = probe{ok: true}
		} else {
			probes[facRoot] = probe{reason: fmt.Sprintf("running as uid %d, not root", os.Geteuid())}
		}
		if fd, err := unix.MemfdSecret(unix.O_CLOEXEC); err != nil {
			probes[facMemfdSecret] = probe{reason: "memfd_secret(2): " + err.Error()}
		} else {
			unix.Close(fd)
			probes[facMemfdSecret] = probe{ok: true}
		}
		probes[facCorePattern] = probeCorePattern()
		probes[facTmpfs] = probeTmpfs()
		probes[facLoopExt4] = probeLoopExt4()
		cg, err := findCgroup()
		if err != nil {
			probes[facCgroupMem] = probe{reason: err.Error()}
		} else {
			cgroupEnv = cg
			probes[facCgroupMem] = probe{ok: true}
		}
	})
	return probes
}

// probeCorePattern checks that the kernel writes core files a test can
// find: not a pipe, and a hard RLIMIT_CORE the helper can raise the soft
// limit to.
func probeCorePattern() probe {
	b, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		return probe{reason: "cannot read /proc/sys/kernel/core_pattern: " + err.Error()}
	}
	pat := strings.TrimSpace(string(b))
	if strings.HasPrefix(pat, "|") {
		return probe{reason: fmt.Sprintf("core_pattern %q pipes cores to a program", pat)}
	}
	if pat == "" {
		return probe{reason: "core_pattern is empty"}
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_CORE, &rl); err != nil {
		return probe{reason: "getrlimit RLIMIT_CORE: " + err.Error()}
	}
	if rl.Max != unix.RLIM_INFINITY && rl.Max < 64<<20 {
		return probe{reason: fmt.Sprintf("RLIMIT_CORE hard limit %d is below 64 MiB", rl.Max)}
	}
	return probe{ok: true}
}

// skipRecord is one requireFacility call.
type skipRecord struct {
	test, facility, reason string
	skipped                bool
}

var (
	recMu   sync.Mutex
	records []skipRecord
)

// requireFacility skips t, naming the facility and why it is missing, unless
// the machine has it. Every call is recorded for R3.
func requireFacility(t *testing.T, name string) {
	t.Helper()
	top, _, _ := strings.Cut(t.Name(), "/")
	listed := false
	for _, f := range suiteFacilities[top] {
		listed = listed || f == name
	}
	if !listed {
		t.Fatalf("%s asks for facility %q, which suiteFacilities does not list for it", top, name)
	}
	p, known := probeAll()[name]
	if !known {
		t.Fatalf("unknown facility %q", name)
	}
	recMu.Lock()
	records = append(records, skipRecord{test: t.Name(), facility: name, reason: p.reason, skipped: !p.ok})
	recMu.Unlock()
	if !p.ok {
		t.Skip(skipMessage(name, p.reason))
	}
}

// skipMessage is the message of every facility skip.
func skipMessage(facility, reason string) string {
	return fmt.Sprintf("acceptance: missing facility %q: %s", facility, reason)
}

// r3Verdict is TestMain's last check: on the reference machine, any suite
// that skipped is a failure. It returns the message, or "".
func r3Verdict() string {
	recMu.Lock()
	defer recMu.Unlock()
	if ref, _ := referenceKind(); !ref {
		return ""
	}
	var bad []string
	for _, r := range records {
		if r.skipped {
			bad = append(bad, fmt.Sprintf("%s skipped for %s: %s", r.test, r.facility, r.reason))
		}
	}
	if len(bad) == 0 {
		return ""
	}
	sort.Strings(bad)
	return "--- FAIL: R3: on the reference machine no acceptance suite may skip:\n\t" + strings.Join(bad, "\n\t")
}
