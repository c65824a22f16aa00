package tests

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/vault/crash"
)

// TestFaultsAreCaught shows that each suite catches what it guards: the
// faultinject builds of vaultd carry one deliberate defect each, armed by
// VAULTD_FAULT, and the suite's own check, run against the faulty daemon,
// must report the violation. Without these, a suite that passes could be a
// suite that cannot fail.
//
//	fault                   defect                                   caught by
//	recovery-keeps-keys     boot recovery leaves terminal leases'    C3/K4/R1 checkRecovered
//	                        data keys in place
//	log-values              CreateLease logs the opened values        M6 (and R1's) canary scan
//	heap-copy               CreateLease keeps the values on the heap  M2 live scan, M1 core scan
//	profile-without-arena   the profile is accepted without an arena  R2 notProven
//	--min-free 0            the release build without its watermark:   the disk suite's traceback check
//	                        a stop on a full disk flushes Badger's
//	                        memtable into a mapped file (SIGBUS)
func TestFaultsAreCaught(t *testing.T) {
	t.Parallel()
	t.Run("watermark-disabled/disk", func(t *testing.T) {
		requireFacility(t, facRoot)
		requireFacility(t, facTmpfs)
		t.Parallel()
		rep := fullDiskStop(t, 0xd15c, 0)
		if rep.traceback == "" {
			t.Errorf("the disk suite's check saw no traceback from a stop on a full disk without the watermark (%v)", rep.exit)
		}
		t.Logf("watermark disabled: the disk suite's check reported the traceback %q (%v)", rep.traceback, rep.exit)
	})
	t.Run("recovery-keeps-keys/C3", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct {
			fault string
			want  bool
		}{{"", false}, {"recovery-keeps-keys", true}} {
			st := newStats()
			dr := newDriver(t, rand.New(rand.NewPCG(6, 6)), st, bins.fault)
			if tc.fault != "" {
				dr.env = []string{"VAULTD_FAULT=" + tc.fault}
				dr.d.Env = dr.env
			}
			dr.d.Start()
			dr.connect()
			// A claimed lease, then a crash between the committed CONSUMED
			// state and the key's destruction: boot recovery must finish it.
			for dr.pick(func(l lease.Lease, _ bool) bool { return l.State == lease.Claimed }) == "" && dr.opErr == nil {
				dr.step(focus["consume"], 0)
			}
			id := dr.pick(func(l lease.Lease, _ bool) bool { return l.State == lease.Claimed })
			dr.kill()
			dr.d.Env = append([]string{"VAULTD_CRASHPOINT=" + crash.ConsumeCommitted + ":1"}, dr.env...)
			dr.d.Start()
			dr.connect()
			dr.consume(id)
			if !dr.d.ExitedWithin(5 * time.Second) {
				t.Fatalf("the armed consume did not crash")
			}
			dr.close()
			dr.recover()
			caught := false
			for _, v := range st.violations {
				caught = caught || strings.Contains(v, "keeps its data key") || strings.Contains(v, "keeps wrapped key files")
			}
			if tc.fault == "" && len(st.violations) > 0 {
				t.Errorf("without a fault C3's check reported %q", st.violations)
			}
			if caught != tc.want {
				t.Errorf("fault %q: C3's check reported %v, want a kept key reported: %v", tc.fault, st.violations, tc.want)
			}
			t.Logf("fault %q: C3's check reported %d violations: %q", tc.fault, len(st.violations), st.violations)
		}
	})
	t.Run("log-values/M6", func(t *testing.T) {
		t.Parallel()
		run := runEndToEnd(t, bins.fault, []string{"VAULTD_FAULT=log-values"})
		inLogs := 0
		for _, h := range run.rep.hits {
			if strings.Contains(h.where, string(filepath.Separator)+"logs"+string(filepath.Separator)+"vaultd-") {
				inLogs++
			}
		}
		if inLogs == 0 {
			t.Errorf("M6's scan did not find the values vaultd logged; hits: %s", hitsSummary(run.rep.hits))
		}
		t.Logf("fault log-values: M6's scan reported %d hits, %d in vaultd's logs", len(run.rep.hits), inLogs)
	})
	t.Run("heap-copy/M2", func(t *testing.T) {
		requireFacility(t, facRoot)
		requireFacility(t, facMemfdSecret)
		t.Parallel()
		ms := runMemScan(t, bins.fault, []string{"VAULTD_FAULT=heap-copy"})
		if len(ms.outside) == 0 || len(ms.afterHits) == 0 {
			t.Errorf("M2's scan missed the heap copies: %d hits outside the arena while active, %d after consume", len(ms.outside), len(ms.afterHits))
		}
		t.Logf("fault heap-copy: M2's scan reported %d hits outside the arena, %d after the lease ended", len(ms.outside), len(ms.afterHits))
	})
	t.Run("heap-copy/M1", func(t *testing.T) {
		requireFacility(t, facCorePattern)
		requireFacility(t, facMemfdSecret)
		t.Parallel()
		cs := runCoreScan(t, bins.diagFault, []string{"VAULTD_FAULT=heap-copy"})
		if len(cs.canaryHits) == 0 {
			t.Errorf("M1's core scan missed the heap copies (%d segments, %d bytes)", cs.rep.segments, cs.rep.bytes)
		}
		t.Logf("fault heap-copy: M1's core scan reported %d hits, e.g. %s", len(cs.canaryHits), firstHit(cs.canaryHits))
	})
	t.Run("profile-without-arena/R2", func(t *testing.T) {
		requireFacility(t, facRoot)
		requireFacility(t, facMemfdSecret)
		t.Parallel()
		d := newDaemon(t, bins.fault, true)
		d.Memlock = 64 << 10
		d.Env = []string{"VAULTD_FAULT=profile-without-arena"}
		d.Args = []string{"--arena-size", strconv.Itoa(1 << 20), "--allow-uid", "0"}
		d.Start()
		v := notProven(t, d, 64<<10)
		caught := false
		for _, s := range v {
			caught = caught || strings.HasPrefix(s, "profile accepted")
		}
		if !caught {
			t.Errorf("R2's check did not report the accepted profile: %q", v)
		}
		t.Logf("fault profile-without-arena: R2's check reported %q", v)
	})
}

func firstHit(hits []hit) string {
	if len(hits) == 0 {
		return "none"
	}
	return hits[0].String()
}

// TestTestHooksOnlyInTestBuilds: the release binaries (vaultd, cut) carry
// no crash point, no test hook, no fault and no diagnostic mode; the test
// builds carry theirs (the check can fail).
func TestTestHooksOnlyInTestBuilds(t *testing.T) {
	t.Parallel()
	crashMarks := slices.Concat([]string{"VAULTD_CRASHPOINT", "VAULTD_TEST_ARENA_FALLBACK", "VAULTD_TEST_CLOCK_OFFSET"},
		transitionPoints, rotationPoints, keyFilePoints)
	faultMarks := []string{"VAULTD_FAULT", "recovery-keeps-keys", "log-values", "profile-without-arena"}
	diagMarks := []string{"diagnostic build (diagdump)"}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		bin          string
		with, absent []string
	}{
		{bins.vaultd, nil, concat(crashMarks, faultMarks, diagMarks)},
		{bins.cut, nil, concat(crashMarks, faultMarks, diagMarks)},
		{bins.crash, crashMarks, concat(faultMarks, diagMarks)},
		{bins.fault, concat(crashMarks, faultMarks), diagMarks},
		{bins.diag, diagMarks, concat(crashMarks, faultMarks)},
		{bins.diagFault, concat(diagMarks, faultMarks), crashMarks},
	} {
		b := read(tc.bin)
		for _, s := range tc.absent {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s contains %q", filepath.Base(tc.bin), s)
			}
		}
		for _, s := range tc.with {
			if !bytes.Contains(b, []byte(s)) {
				t.Errorf("%s lacks %q", filepath.Base(tc.bin), s)
			}
		}
	}
}

func concat(ss ...[]string) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s...)
	}
	return out
}
