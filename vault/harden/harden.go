package harden

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"github.com/privacycut/privacycut/vault/arena"
)

// Schema is the value of Profile.Schema.
const Schema = "VaultProfile@1"

// Profile verdicts.
const (
	Accepted  = "accepted"
	NotProven = "not_proven"
)

// The names of the profile's items, in the order Prove reports them. A failed
// item's name appears in Profile.Reasons.
const (
	ItemArena         = "arena"          // an open arena of kind memfd_secret or mlock exists
	ItemArenaLocked   = "arena_locked"   // every arena page shows VmFlags lo in smaps
	ItemArenaDontDump = "arena_dontdump" // every arena page shows VmFlags dd in smaps
	ItemArenaBacking  = "arena_backing"  // memfd_secret: "/secretmem (deleted)", shared; mlock: anonymous, private
	ItemArenaGuards   = "arena_guards"   // the page before and after the arena is ---p
	ItemVmLck         = "vmlck"          // /proc/self/status VmLck ≥ arena bytes
	ItemDumpable      = "dumpable"       // prctl(PR_GET_DUMPABLE) == 0
	ItemCoreLimit     = "core_limit"     // /proc/self/limits "Max core file size" soft and hard 0
	ItemTraceback     = "traceback"      // GOTRACEBACK unset, none, single or 0
)

// Item is one proven (or failed) property of the process.
type Item struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// ArenaState describes the arena in VaultProfile@1.
type ArenaState struct {
	Kind   string `json:"kind"`   // "memfd_secret" | "mlock" | "none"
	Bytes  int    `json:"bytes"`  // data bytes, guards excluded
	Locked bool   `json:"locked"` // smaps shows lo on every arena page
}

// Profile is VaultProfile@1: what `cut vault status --json`
// prints. It holds no secret.
type Profile struct {
	Schema    string     `json:"schema"`     // "VaultProfile@1"
	Profile   string     `json:"profile"`    // "accepted" | "not_proven"
	Arena     ArenaState `json:"arena"`      // {"kind":…, "bytes":N, "locked":bool}
	Dumpable  bool       `json:"dumpable"`   // PR_GET_DUMPABLE != 0 (true when unreadable)
	CoreLimit uint64     `json:"core_limit"` // the larger of the soft and hard RLIMIT_CORE
	Traceback string     `json:"traceback"`  // GOTRACEBACK as seen, "" when unset
	Swap      string     `json:"swap"`       // "none" | "present" | "unknown" (informational, /proc/swaps)
	Reasons   []string   `json:"reasons"`    // names of failed items, [] when accepted
	Items     []Item     `json:"items"`
	PID       int        `json:"pid"`
}

// Accepted reports whether every item was proven.
func (p Profile) Accepted() bool { return p.Profile == Accepted }

// observed is everything Prove reads, gathered first so that the verdict is a
// pure function of it (and testable on fixture text).
type observed struct {
	pid      int
	pageSize uintptr

	hasArena   bool
	kind       arena.Kind
	size       int
	start, end uintptr

	smaps    []mapping
	smapsErr error
	vmLck    uint64
	vmLckErr error

	dumpable    int
	dumpableErr error
	core        rlimit
	coreErr     error

	traceback    string
	tracebackSet bool

	swap string
}

// Prove reads the process's kernel state and decides VaultProfile@1 for it
// and arena a (which may be nil: no arena is never accepted). It trusts no
// return code: the arena's pages are checked in /proc/self/smaps, the lock
// budget in /proc/self/status, the core limit in /proc/self/limits, the
// dumpable flag with PR_GET_DUMPABLE, and GOTRACEBACK in the environment.
func Prove(a *arena.Arena) Profile {
	o := observed{pid: os.Getpid(), pageSize: uintptr(os.Getpagesize())}
	if a != nil {
		o.kind, o.size = a.Kind(), a.Size()
		o.start, o.end = a.Range()
		o.hasArena = o.kind != arena.KindNone && o.end > o.start
	}
	if o.hasArena {
		if b, err := os.ReadFile("/proc/self/smaps"); err != nil {
			o.smapsErr = err
		} else {
			o.smaps, o.smapsErr = parseSmaps(bytes.NewReader(b))
		}
		if b, err := os.ReadFile("/proc/self/status"); err != nil {
			o.vmLckErr = err
		} else {
			o.vmLck, o.vmLckErr = parseStatusKB(bytes.NewReader(b), "VmLck")
		}
	}
	o.dumpable, o.dumpableErr = getDumpable()
	if b, err := os.ReadFile("/proc/self/limits"); err != nil {
		o.coreErr = err
	} else {
		o.core, o.coreErr = parseLimits(bytes.NewReader(b), "Max core file size")
	}
	o.traceback, o.tracebackSet = os.LookupEnv("GOTRACEBACK")
	o.swap = "unknown"
	if b, err := os.ReadFile("/proc/swaps"); err == nil {
		if present, err := parseSwaps(bytes.NewReader(b)); err == nil {
			o.swap = map[bool]string{true: "present", false: "none"}[present]
		}
	}
	return inject(diagnose(evaluate(o)))
}

// evaluate decides the profile from observed state.
func evaluate(o observed) Profile {
	p := Profile{
		Schema:    Schema,
		Arena:     ArenaState{Kind: string(arena.KindNone)},
		Dumpable:  o.dumpable != 0 || o.dumpableErr != nil,
		CoreLimit: max(o.core.Soft, o.core.Hard),
		Traceback: o.traceback,
		Swap:      o.swap,
		Reasons:   []string{},
		PID:       o.pid,
	}
	if o.coreErr != nil {
		p.CoreLimit = unlimited
	}
	add := func(name string, ok bool, detail string) {
		p.Items = append(p.Items, Item{Name: name, OK: ok, Detail: detail})
		if !ok {
			p.Reasons = append(p.Reasons, name)
		}
	}

	arenaItems(o, &p, add)

	switch {
	case o.dumpableErr != nil:
		add(ItemDumpable, false, "PR_GET_DUMPABLE failed: "+o.dumpableErr.Error())
	case o.dumpable != 0:
		add(ItemDumpable, false, "PR_GET_DUMPABLE is "+strconv.Itoa(o.dumpable)+", want 0")
	default:
		add(ItemDumpable, true, "PR_GET_DUMPABLE is 0")
	}

	switch {
	case o.coreErr != nil:
		add(ItemCoreLimit, false, "cannot read the core limit: "+o.coreErr.Error())
	case o.core.Soft != 0 || o.core.Hard != 0:
		add(ItemCoreLimit, false, "Max core file size is "+limitString(o.core.Soft)+" "+limitString(o.core.Hard)+", want 0 0")
	default:
		add(ItemCoreLimit, true, "Max core file size 0 0")
	}

	ok, detail := tracebackOK(o.traceback, o.tracebackSet)
	add(ItemTraceback, ok, detail)

	p.Profile = Accepted
	if len(p.Reasons) > 0 {
		p.Profile = NotProven
	}
	return p
}

// arenaItems adds the arena items: existence, smaps flags, backing, guards
// and VmLck.
func arenaItems(o observed, p *Profile, add func(string, bool, string)) {
	names := []string{ItemArenaLocked, ItemArenaDontDump, ItemArenaBacking, ItemArenaGuards, ItemVmLck}
	if !o.hasArena {
		add(ItemArena, false, "no arena")
		for _, n := range names {
			add(n, false, "no arena")
		}
		return
	}
	p.Arena = ArenaState{Kind: string(o.kind), Bytes: o.size}
	if o.kind != arena.KindMemfdSecret && o.kind != arena.KindMlock {
		add(ItemArena, false, "arena kind "+string(o.kind)+" is not protected memory")
	} else {
		add(ItemArena, true, fmt.Sprintf("%s, %d bytes", o.kind, o.size))
	}
	if o.smapsErr != nil {
		for _, n := range names[:4] {
			add(n, false, "cannot read /proc/self/smaps: "+o.smapsErr.Error())
		}
	} else {
		locked, detail := cover(o.smaps, o.start, o.end, func(m mapping) bool { return m.has("lo") }, "VmFlags lo")
		add(ItemArenaLocked, locked, detail)
		p.Arena.Locked = locked
		ok, detail := cover(o.smaps, o.start, o.end, func(m mapping) bool { return m.has("dd") }, "VmFlags dd")
		add(ItemArenaDontDump, ok, detail)
		backing := func(m mapping) bool { return m.Path == "/secretmem (deleted)" && m.Perms == "rw-s" }
		what := `"/secretmem (deleted)" rw-s`
		if o.kind != arena.KindMemfdSecret {
			backing = func(m mapping) bool { return m.Path == "" && m.Perms == "rw-p" }
			what = "anonymous rw-p"
		}
		ok, detail = cover(o.smaps, o.start, o.end, backing, what)
		add(ItemArenaBacking, ok, detail)
		isGuard := func(m mapping) bool { return m.Perms == "---p" }
		okBefore, dBefore := cover(o.smaps, o.start-o.pageSize, o.start, isGuard, "guard ---p before")
		okAfter, dAfter := cover(o.smaps, o.end, o.end+o.pageSize, isGuard, "guard ---p after")
		switch {
		case !okBefore:
			add(ItemArenaGuards, false, dBefore)
		case !okAfter:
			add(ItemArenaGuards, false, dAfter)
		default:
			add(ItemArenaGuards, true, "guard pages ---p on both sides")
		}
	}
	switch {
	case o.vmLckErr != nil:
		add(ItemVmLck, false, "cannot read VmLck: "+o.vmLckErr.Error())
	case o.vmLck < uint64(o.size):
		add(ItemVmLck, false, fmt.Sprintf("VmLck %d kB is below the arena's %d kB", o.vmLck/1024, o.size/1024))
	default:
		add(ItemVmLck, true, fmt.Sprintf("VmLck %d kB covers the arena's %d kB", o.vmLck/1024, o.size/1024))
	}
}

// cover checks that the entries of maps cover [start, end) without a gap and
// that every covering entry satisfies pred. The detail names the first
// failing address range (addresses are not secret).
func cover(maps []mapping, start, end uintptr, pred func(mapping) bool, what string) (bool, string) {
	if end <= start {
		return false, "empty range"
	}
	addr := start
	for addr < end {
		i := -1
		for j, m := range maps {
			if m.Start <= addr && addr < m.End {
				i = j
				break
			}
		}
		if i < 0 {
			return false, fmt.Sprintf("%#x: not mapped in smaps", addr)
		}
		if !pred(maps[i]) {
			return false, fmt.Sprintf("%#x-%#x: not %s", maps[i].Start, maps[i].End, what)
		}
		addr = maps[i].End
	}
	return true, fmt.Sprintf("%#x-%#x: %s", start, end, what)
}

func limitString(v uint64) string {
	if v == unlimited {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

// tracebackOK decides the GOTRACEBACK item. The runtime prints by-value
// arguments of every goroutine at "all" and above, and debug.SetTraceback
// cannot lower a level set in the environment. A number is a level with
// "all" set: 1 is "all", 2 "system"; only 0 prints nothing. So only unset,
// "", "none", "single" and "0" are accepted. Anything else fails closed,
// including values the runtime would ignore.
func tracebackOK(v string, set bool) (bool, string) {
	if !set {
		return true, "GOTRACEBACK unset (single)"
	}
	switch v {
	case "", "none", "single", "0":
		return true, "GOTRACEBACK=" + v
	case "all", "system", "crash", "wer":
		return false, "GOTRACEBACK=" + v + " prints other goroutines' frames; the process cannot lower it"
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 {
		return false, "GOTRACEBACK=" + v + " (a level of 1 or more is \"all\" or above) prints other goroutines' frames; the process cannot lower it"
	}
	return false, "GOTRACEBACK has an unrecognised value; refusing to guess its level"
}
