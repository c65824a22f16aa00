//go:build linux && (amd64 || arm64 || riscv64)

package harden

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/vault/arena"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// observe builds the observed state Prove would gather, from fixture files.
func observe(t *testing.T, kind arena.Kind, smaps, status, limits string) observed {
	t.Helper()
	o := observed{
		pid: 4242, pageSize: 0x1000,
		hasArena: true, kind: kind, size: 0x2000, start: fxBase + 0x2000, end: fxBase + 0x4000,
		swap: "none",
	}
	o.smaps, o.smapsErr = parseSmaps(bytes.NewReader(fixture(t, smaps)))
	o.vmLck, o.vmLckErr = parseStatusKB(bytes.NewReader(fixture(t, status)), "VmLck")
	o.core, o.coreErr = parseLimits(bytes.NewReader(fixture(t, limits)), "Max core file size")
	return o
}

// verdict is the part of a Profile the table compares.
type verdict struct {
	Profile   string
	Reasons   []string
	Arena     ArenaState
	Dumpable  bool
	CoreLimit uint64
}

func verdictOf(p Profile) verdict {
	return verdict{p.Profile, p.Reasons, p.Arena, p.Dumpable, p.CoreLimit}
}

func TestEvaluate(t *testing.T) {
	secret := ArenaState{Kind: "memfd_secret", Bytes: 0x2000, Locked: true}
	mlock := ArenaState{Kind: "mlock", Bytes: 0x2000, Locked: true}
	unlocked := mlock
	unlocked.Locked = false
	none := ArenaState{Kind: "none"}
	const hardened = "limits-hardened.txt"
	tests := []struct {
		name string
		o    func(t *testing.T) observed
		want verdict
	}{
		{"memfd_secret accepted", func(t *testing.T) observed {
			return observe(t, arena.KindMemfdSecret, "smaps-secretmem.txt", "status.txt", hardened)
		}, verdict{Accepted, []string{}, secret, false, 0}},
		{"mlock accepted", func(t *testing.T) observed {
			return observe(t, arena.KindMlock, "smaps-mlock.txt", "status.txt", hardened)
		}, verdict{Accepted, []string{}, mlock, false, 0}},
		{"guard merged with a neighbour", func(t *testing.T) observed {
			return observe(t, arena.KindMemfdSecret, "smaps-merged-guard.txt", "status.txt", hardened)
		}, verdict{Accepted, []string{}, secret, false, 0}},
		{"memfd_secret kind on anonymous memory", func(t *testing.T) observed {
			return observe(t, arena.KindMemfdSecret, "smaps-mlock.txt", "status.txt", hardened)
		}, verdict{NotProven, []string{ItemArenaBacking}, secret, false, 0}},
		{"mlock kind on secretmem", func(t *testing.T) observed {
			return observe(t, arena.KindMlock, "smaps-secretmem.txt", "status.txt", hardened)
		}, verdict{NotProven, []string{ItemArenaBacking}, mlock, false, 0}},
		{"not locked", func(t *testing.T) observed {
			return observe(t, arena.KindMlock, "smaps-unlocked.txt", "status.txt", hardened)
		}, verdict{NotProven, []string{ItemArenaLocked}, unlocked, false, 0}},
		{"dumpable pages", func(t *testing.T) observed {
			return observe(t, arena.KindMlock, "smaps-dumpable.txt", "status.txt", hardened)
		}, verdict{NotProven, []string{ItemArenaDontDump}, mlock, false, 0}},
		{"second half unlocked", func(t *testing.T) observed {
			return observe(t, arena.KindMlock, "smaps-split.txt", "status.txt", hardened)
		}, verdict{NotProven, []string{ItemArenaLocked, ItemArenaDontDump}, unlocked, false, 0}},
		{"half the arena unmapped", func(t *testing.T) observed {
			return observe(t, arena.KindMlock, "smaps-gap.txt", "status.txt", hardened)
		}, verdict{NotProven, []string{ItemArenaLocked, ItemArenaDontDump, ItemArenaBacking}, unlocked, false, 0}},
		{"no guard before", func(t *testing.T) observed {
			return observe(t, arena.KindMlock, "smaps-noguard.txt", "status.txt", hardened)
		}, verdict{NotProven, []string{ItemArenaGuards}, mlock, false, 0}},
		{"VmLck below the arena", func(t *testing.T) observed {
			return observe(t, arena.KindMemfdSecret, "smaps-secretmem.txt", "status-low.txt", hardened)
		}, verdict{NotProven, []string{ItemVmLck}, secret, false, 0}},
		{"VmLck missing", func(t *testing.T) observed {
			return observe(t, arena.KindMemfdSecret, "smaps-secretmem.txt", "status-novmlck.txt", hardened)
		}, verdict{NotProven, []string{ItemVmLck}, secret, false, 0}},
		{"core hard limit unlimited", func(t *testing.T) observed {
			return observe(t, arena.KindMemfdSecret, "smaps-secretmem.txt", "status.txt", "limits-default.txt")
		}, verdict{NotProven, []string{ItemCoreLimit}, secret, false, unlimited}},
		{"core limits unreadable", func(t *testing.T) observed {
			return observe(t, arena.KindMemfdSecret, "smaps-secretmem.txt", "status.txt", "limits-nocore.txt")
		}, verdict{NotProven, []string{ItemCoreLimit}, secret, false, unlimited}},
		{"dumpable", func(t *testing.T) observed {
			o := observe(t, arena.KindMemfdSecret, "smaps-secretmem.txt", "status.txt", hardened)
			o.dumpable = 1
			return o
		}, verdict{NotProven, []string{ItemDumpable}, secret, true, 0}},
		{"dumpable unreadable", func(t *testing.T) observed {
			o := observe(t, arena.KindMemfdSecret, "smaps-secretmem.txt", "status.txt", hardened)
			o.dumpableErr = errors.New("prctl failed")
			return o
		}, verdict{NotProven, []string{ItemDumpable}, secret, true, 0}},
		{"GOTRACEBACK=crash", func(t *testing.T) observed {
			o := observe(t, arena.KindMemfdSecret, "smaps-secretmem.txt", "status.txt", hardened)
			o.traceback, o.tracebackSet = "crash", true
			return o
		}, verdict{NotProven, []string{ItemTraceback}, secret, false, 0}},
		{"smaps unreadable", func(t *testing.T) observed {
			o := observe(t, arena.KindMlock, "smaps-mlock.txt", "status.txt", hardened)
			o.smaps, o.smapsErr = nil, errors.New("open /proc/self/smaps: permission denied")
			return o
		}, verdict{NotProven, []string{ItemArenaLocked, ItemArenaDontDump, ItemArenaBacking, ItemArenaGuards}, unlocked, false, 0}},
		{"no arena", func(t *testing.T) observed {
			o := observe(t, arena.KindMemfdSecret, "smaps-secretmem.txt", "status.txt", hardened)
			o.hasArena = false
			return o
		}, verdict{NotProven, []string{ItemArena, ItemArenaLocked, ItemArenaDontDump, ItemArenaBacking, ItemArenaGuards, ItemVmLck}, none, false, 0}},
		{"arena of kind none", func(t *testing.T) observed {
			return observe(t, arena.KindNone, "smaps-mlock.txt", "status.txt", hardened)
		}, verdict{NotProven, []string{ItemArena}, ArenaState{Kind: "none", Bytes: 0x2000, Locked: true}, false, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := evaluate(tt.o(t))
			if diff := cmp.Diff(tt.want, verdictOf(p)); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
			var names []string
			for _, it := range p.Items {
				names = append(names, it.Name)
				if it.OK == slices.Contains(p.Reasons, it.Name) {
					t.Errorf("item %s ok=%v disagrees with reasons %v", it.Name, it.OK, p.Reasons)
				}
			}
			wantNames := []string{ItemArena, ItemArenaLocked, ItemArenaDontDump, ItemArenaBacking, ItemArenaGuards, ItemVmLck, ItemDumpable, ItemCoreLimit, ItemTraceback}
			if diff := cmp.Diff(wantNames, names); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTracebackOK(t *testing.T) {
	tests := []struct {
		v   string
		set bool
		ok  bool
	}{
		{"", false, true},
		{"", true, true},
		{"none", true, true},
		{"single", true, true},
		{"0", true, true},
		{"1", true, false}, // the runtime reads a number as a level with "all" set
		{"all", true, false},
		{"system", true, false},
		{"crash", true, false},
		{"wer", true, false},
		{"2", true, false},
		{"99", true, false},
		{"-1", true, false},
		{"ALL", true, false},
		{"single,", true, false},
	}
	for _, tt := range tests {
		if ok, detail := tracebackOK(tt.v, tt.set); ok != tt.ok || detail == "" {
			t.Errorf("tracebackOK(%q, %v) = %v, %q; want %v with a detail", tt.v, tt.set, ok, detail, tt.ok)
		}
	}
}

// TestProfileJSON pins VaultProfile@1's encoding with a golden
// file: exact key names, reasons as [] when accepted, items in order.
func TestProfileJSON(t *testing.T) {
	for _, c := range []struct {
		golden string
		o      observed
	}{
		{"profile-accepted.json", observe(t, arena.KindMemfdSecret, "smaps-secretmem.txt", "status.txt", "limits-hardened.txt")},
		{"profile-not-proven.json", func() observed {
			o := observe(t, arena.KindMlock, "smaps-unlocked.txt", "status-low.txt", "limits-default.txt")
			o.dumpable, o.traceback, o.tracebackSet, o.swap = 1, "all", true, "present"
			return o
		}()},
	} {
		got, err := json.MarshalIndent(evaluate(c.o), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, '\n')
		path := filepath.Join("testdata", c.golden)
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.golden, diff)
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(got, &keys); err != nil {
			t.Fatal(err)
		}
		var names []string
		for k := range keys {
			names = append(names, k)
		}
		slices.Sort(names)
		want2 := []string{"arena", "core_limit", "dumpable", "items", "pid", "profile", "reasons", "schema", "swap", "traceback"}
		if diff := cmp.Diff(want2, names); diff != "" {
			t.Errorf("%s: top-level keys (-want +got):\n%s", c.golden, diff)
		}
	}
}
