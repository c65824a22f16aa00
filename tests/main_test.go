package tests

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/privacycut/privacycut/vault/vaulttest"
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

// nobody is the uid (and gid) the unprivileged suites run vaultd as.
const nobody = vaulttest.Nobody

func TestMain(m *testing.M) {
	if code, ok := vaulttest.RunHelper(); ok {
		os.Exit(code)
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
	var build []vaulttest.Target
	for _, tg := range targets {
		*tg.out = filepath.Join(dir, tg.name)
		build = append(build, vaulttest.Target{Out: *tg.out, Pkg: tg.pkg, Tags: tg.tags})
	}
	if err := vaulttest.Build(build); err != nil {
		return 0, err
	}
	if bins.helper, err = vaulttest.CopySelf(dir); err != nil {
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
