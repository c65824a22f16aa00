package tests

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

// loadCanaries grants a lease over fresh canary values through c, binds and
// claims it (the map has been built, sealed, decrypted and wiped in the
// arena), and grants a second lease that stays ACTIVE. The target URL is a
// marker: it travels through the Go heap in every request, so a scan that
// finds it shows that it reads the heap. It returns the claimed lease's id
// and claim, the values and the marker.
func loadCanaries(t testing.TB, c *client.Client, tag string) (string, vaultapi.ClaimRequest, [][]byte, []byte) {
	t.Helper()
	marker := "https://model.example/" + tag + "-marker-" + randHex(8)
	ps, vals := pairsFor(tag, 6)
	var first string
	claim := vaultapi.ClaimRequest{Run: "run-" + tag, Attempt: 1, Station: service.DefaultStation, ReturnDigest: "sha256:" + randHex(32)}
	for i := range 2 {
		sealed, err := c.Seal(bg, ps)
		if err != nil {
			t.Fatalf("seal: %v", err)
		}
		res, err := c.CreateLease(bg, vaultapi.CreateRequest{Run: "run-" + tag, Attempt: 1, Target: marker, Purpose: "dependency-triage",
			SourceDigest: "hmac-sha256:" + randHex(32), Lifetime: time.Hour, Values: sealed})
		if err != nil {
			t.Fatalf("grant: %v", err)
		}
		if i > 0 {
			break
		}
		first = res.Lease.ID
		ex := vaulttest.Export(res.Tokens)
		if err := c.Bind(bg, first, "evt:"+tag, "hmac-sha256:"+randHex(32), receipts.SHA256(ex), ex); err != nil {
			t.Fatalf("bind: %v", err)
		}
		if _, err := c.Claim(bg, first, claim); err != nil {
			t.Fatalf("claim: %v", err)
		}
	}
	return first, claim, vals, []byte(marker)
}

// rehydrateCanaries grants a lease over vals (the categories pairsFor
// gives them), binds it and rehydrates through c a return that names every
// token at a path the schema marks, as cut does: the output comes back
// from vaultd holding every value. It checks that the output holds them
// (the values really went through vaultd's output path), clears it, and
// returns the output's size.
func rehydrateCanaries(t testing.TB, c *client.Client, tag string, vals [][]byte) int {
	t.Helper()
	ps := make([]seal.Pair, len(vals))
	props := make([]string, len(vals))
	for i, v := range vals {
		cat := service.Categories[i%len(service.Categories)]
		ps[i] = seal.Pair{Category: cat, Value: v}
		props[i] = `"` + cat + `":{"type":"string","x-privacycut-rehydrate":{"category":"` + cat + `","purpose":"dependency-triage","max":1}}`
	}
	schema := []byte(`{"type":"object","additionalProperties":false,"properties":{` + strings.Join(props, ",") + `}}`)
	sd, err := rehydrate.ParseSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := c.Seal(bg, ps)
	if err != nil {
		t.Fatalf("seal: %v", err)
	}
	res, err := c.CreateLease(bg, vaultapi.CreateRequest{Run: "run-rh-" + tag, Attempt: 1, Target: "https://model.example/" + tag,
		Purpose: "dependency-triage", SourceDigest: "hmac-sha256:" + randHex(32), Lifetime: time.Hour, Values: sealed,
		OutputSchemaDigest: sd.Digest()})
	if err != nil {
		t.Fatalf("grant: %v", err)
	}
	ex := vaulttest.Export(res.Tokens)
	if err := c.Bind(bg, res.Lease.ID, "evt:rh-"+tag, "hmac-sha256:"+randHex(32), receipts.SHA256(ex), ex); err != nil {
		t.Fatalf("bind: %v", err)
	}
	doc := map[string]string{}
	for i, tok := range res.Tokens {
		doc[ps[i].Category] = tok
	}
	ret, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	kb := make([]byte, receipts.EvidenceKeySize)
	rand.Read(kb)
	ek, err := receipts.NewEvidenceKey(kb)
	if err != nil {
		t.Fatal(err)
	}
	defer ek.Wipe()
	sek, err := c.SealEvidenceKey(bg, ek)
	if err != nil {
		t.Fatalf("seal the evidence key: %v", err)
	}
	out, err := c.Rehydrate(bg, vaultapi.RehydrateRequest{
		Lease:  res.Lease.ID,
		Claim:  vaultapi.ClaimRequest{Run: "run-rh-" + tag, Attempt: 1, Station: service.DefaultStation, ReturnDigest: receipts.SHA256(ret)},
		Schema: schema, Return: ret, CutExpiry: time.Now().Add(time.Hour), Retention: rehydrate.RetentionSession,
		PolicyRevision: "policy/1", VerifierRevision: "verifier/1", LabelDigest: "hmac-sha256:" + randHex(32), EvidenceKey: sek,
	})
	if err != nil {
		t.Fatalf("rehydrate: %v", err)
	}
	defer clear(out.Output)
	for i, v := range vals {
		if !bytes.Contains(out.Output, v) {
			t.Fatalf("the rehydrated output lacks value %d", i)
		}
	}
	if out.Lease.State != lease.Consumed || !out.Lease.KeyDestroyed {
		t.Fatalf("lease %v after the rehydration, key destroyed %v", out.Lease.State, out.Lease.KeyDestroyed)
	}
	return len(out.Output)
}

// coreScan is M1's procedure on a dumpable build: grant and use leases over
// canary values, abort vaultd with SIGABRT under GOTRACEBACK=crash so that
// the kernel writes a core, then scan the core's loaded segments and the
// traceback on stderr.
type coreScan struct {
	status       exitStatus
	core         string
	rep          coreReport
	markerHits   int
	canaryHits   []hit // in the core
	tracebackHit []hit // in stderr
	traceback    int   // bytes of stderr
}

func runCoreScan(t *testing.T, bin string, env []string) coreScan {
	t.Helper()
	d := newDaemon(t, bin, false)
	d.CoreMax = true
	d.Env = append([]string{"GOTRACEBACK=crash"}, env...)
	d.Args = []string{"--arena-size", "262144"}
	d.Start()
	p := newCutter(t, d).status()
	if p.Profile != "accepted" || !p.Dumpable {
		t.Fatalf("diagnostic build: profile %s (reasons %v), dumpable %v: want an accepted, dumpable daemon", p.Profile, p.Reasons, p.Dumpable)
	}
	_, _, vals, marker := loadCanaries(t, clientOf(d), "m1")
	pid := d.Pid()
	var cs coreScan
	cs.status = statusOf(d.Stop(syscall.SIGABRT))
	if cs.status.Signal != syscall.SIGABRT || !cs.status.Core {
		t.Fatalf("SIGABRT under GOTRACEBACK=crash: %v, want a core dump", cs.status)
	}
	path, err := findCore(d.Cwd, pid)
	if err != nil {
		t.Fatal(err)
	}
	cs.core = path
	cs.rep, err = newScanner(append(vals, marker)).scanCore(path)
	if err != nil {
		t.Fatalf("read the core: %v", err)
	}
	for _, h := range cs.rep.hits {
		if h.needle == len(vals) {
			cs.markerHits++
		} else {
			cs.canaryHits = append(cs.canaryHits, h)
		}
	}
	logs := d.AllLogs()
	cs.traceback = len(logs)
	cs.tracebackHit = newScanner(vals).find(logs, "stderr", 0)
	os.Remove(path) // hundreds of MiB of address space
	return cs
}

// findCore finds the core file of pid under the kernel's core pattern
// (relative patterns are relative to the process's working directory).
func findCore(cwd string, pid int) (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		return "", err
	}
	pat := strings.TrimSpace(string(b))
	usesPID, _ := os.ReadFile("/proc/sys/kernel/core_uses_pid")
	var g strings.Builder
	hasPID := false
	for i := 0; i < len(pat); i++ {
		if pat[i] != '%' || i+1 == len(pat) {
			g.WriteByte(pat[i])
			continue
		}
		i++
		switch pat[i] {
		case 'p', 'P':
			g.WriteString(strconv.Itoa(pid))
			hasPID = true
		case '%':
			g.WriteByte('%')
		default:
			g.WriteByte('*')
		}
	}
	glob := g.String()
	if strings.TrimSpace(string(usesPID)) == "1" && !hasPID {
		glob += "." + strconv.Itoa(pid)
	}
	if !filepath.IsAbs(glob) {
		glob = filepath.Join(cwd, glob)
	}
	m, err := filepath.Glob(glob)
	if err != nil || len(m) == 0 {
		return "", fmt.Errorf("no core file matches %s (core_pattern %q): %v", glob, pat, err)
	}
	return m[len(m)-1], nil
}

// TestM1CoreScan is M1 in diagnostic mode: a diagdump build (dumpable,
// core limit raised by the parent, GOTRACEBACK=crash) holding two leases
// over canary values is aborted into a core. The core's loaded segments
// hold none of the values, raw, hex or base64 — the arena is excluded from
// dumps and the values never sat in the Go heap — while the marker that
// did cross the heap is found (the scan can fail). The traceback on stderr
// holds no value either.
func TestM1CoreScan(t *testing.T) {
	requireFacility(t, facCorePattern)
	requireFacility(t, facMemfdSecret)
	t.Parallel()
	cs := runCoreScan(t, bins.diag, nil)
	if cs.markerHits == 0 {
		t.Fatalf("the heap marker is not in the core: the scan cannot see the heap (%d segments, %d bytes)", cs.rep.segments, cs.rep.bytes)
	}
	if len(cs.canaryHits) > 0 {
		t.Errorf("owner values in the core (mapped to its segments):\n\t%s", hitsSummary(cs.canaryHits))
	}
	if len(cs.tracebackHit) > 0 {
		t.Errorf("owner values in the crash traceback:\n\t%s", hitsSummary(cs.tracebackHit))
	}
	t.Logf("figures: core of %d PT_LOAD segments, %d bytes scanned for 6 values in 6 forms: %d hits; heap marker found %d times; %d bytes of traceback clean",
		cs.rep.segments, cs.rep.bytes, len(cs.canaryHits), cs.markerHits, cs.traceback)
}

// TestM1NoCoreInProduction: the release build, given every chance to dump
// (RLIMIT_CORE raised by the parent, GOTRACEBACK=crash, SIGABRT), writes no
// core: it set RLIMIT_CORE to 0 0 and PR_SET_DUMPABLE to 0 before serving.
// The same procedure on the diagnostic build writes one (the control).
func TestM1NoCoreInProduction(t *testing.T) {
	requireFacility(t, facCorePattern)
	t.Parallel()
	for _, tc := range []struct {
		name string
		bin  string
		core bool
	}{{"release", bins.vaultd, false}, {"diagdump-control", bins.diag, true}} {
		t.Run(tc.name, func(t *testing.T) {
			d := newDaemon(t, tc.bin, false)
			d.CoreMax = true
			d.Env = []string{"GOTRACEBACK=crash"}
			d.Args = []string{"--arena-size", "65536"}
			d.Start()
			pid := d.Pid()
			limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
			if err != nil {
				t.Fatal(err)
			}
			zero := limitLine(limits, "Max core file size") == "0 0"
			if zero == tc.core {
				t.Errorf("core limit of the running daemon: %q", limitLine(limits, "Max core file size"))
			}
			es := statusOf(d.Stop(syscall.SIGABRT))
			_, ferr := findCore(d.Cwd, pid)
			if es.Signal != syscall.SIGABRT || es.Core != tc.core || (ferr == nil) != tc.core {
				t.Fatalf("SIGABRT: %v, core file: %v; want core %v", es, ferr, tc.core)
			}
			t.Logf("figures: %s build: %v, core limit %q", tc.name, es, limitLine(limits, "Max core file size"))
		})
	}
}

// limitLine returns the soft and hard columns of a /proc/<pid>/limits line.
func limitLine(limits []byte, name string) string {
	for _, line := range strings.Split(string(limits), "\n") {
		if rest, ok := strings.CutPrefix(line, name); ok {
			f := strings.Fields(rest)
			if len(f) >= 2 {
				return f[0] + " " + f[1]
			}
		}
	}
	return ""
}

// memScan is M2's procedure: a live read of every readable mapping of
// vaultd through /proc/<pid>/mem while a lease is claimed and another is
// active, and again after the claimed one is consumed and a third lease
// over the same values has been rehydrated through the socket (CONSUMED,
// its output returned to the client).
type memScan struct {
	arenaKind              string
	arena                  []mapping // the arena's mappings (smaps)
	during, after          memReport
	markerDuring           int
	insideArena, outside   []hit // canary hits during, by place
	afterHits              []hit
	arenaUnreadable        bool
	valuesCount, bytesSeen int64
	rehydrated             int // bytes of rehydrated output
}

func runMemScan(t *testing.T, bin string, env []string) memScan {
	t.Helper()
	d := newDaemon(t, bin, false)
	d.Env = env
	d.Args = []string{"--arena-size", "262144"}
	d.Start()
	p := newCutter(t, d).status()
	if p.Profile != "accepted" {
		t.Fatalf("profile %s %v", p.Profile, p.Reasons)
	}
	c := clientOf(d)
	id, claim, vals, marker := loadCanaries(t, c, "m2")
	ms := memScan{arenaKind: p.Arena.Kind, valuesCount: int64(len(vals))}
	maps, err := readSmaps(d.Pid())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range maps {
		if (p.Arena.Kind == "memfd_secret" && m.path == "/secretmem (deleted)") ||
			(p.Arena.Kind == "mlock" && m.path == "" && m.flags["lo"] && m.flags["dd"]) {
			ms.arena = append(ms.arena, m)
		}
	}
	if len(ms.arena) == 0 {
		t.Fatalf("no %s arena in smaps", p.Arena.Kind)
	}
	sc := newScanner(append(vals, marker))
	if ms.during, err = sc.scanMemory(d.Pid()); err != nil {
		t.Fatal(err)
	}
	for i, h := range ms.during.hits {
		switch {
		case h.needle == len(vals):
			ms.markerDuring++
		case inArena(ms.arena, ms.during.hitMaps[i]):
			ms.insideArena = append(ms.insideArena, h)
		default:
			ms.outside = append(ms.outside, h)
		}
	}
	for _, m := range ms.during.unreadableMaps {
		ms.arenaUnreadable = ms.arenaUnreadable || inArena(ms.arena, m)
	}
	ms.rehydrated = rehydrateCanaries(t, c, "m2", vals)
	if _, err := c.Consume(bg, id, claim); err != nil {
		t.Fatalf("consume: %v", err)
	}
	if ms.after, err = newScanner(vals).scanMemory(d.Pid()); err != nil {
		t.Fatal(err)
	}
	ms.afterHits = ms.after.hits
	ms.bytesSeen = ms.during.scanned + ms.after.scanned
	return ms
}

func inArena(arena []mapping, m mapping) bool {
	for _, a := range arena {
		if m.start >= a.start && m.end <= a.end {
			return true
		}
	}
	return false
}

// TestM2LiveMemoryScan is M2: as root, every readable mapping of a running
// vaultd is read through /proc/<pid>/mem while one lease over canary values
// is claimed and another is active, and again after the claimed one is
// consumed and a third lease over the same values has been rehydrated
// through the socket — the output holding every value went back to the
// client, sealed to its ephemeral key. With the memfd_secret arena the
// values are nowhere (the arena itself refuses the read); with the mlock
// arena, readable by root, they may only be inside it. After the terminal
// transitions, rehydration included, they are nowhere. The heap marker is
// found each time (the scan can fail).
func TestM2LiveMemoryScan(t *testing.T) {
	requireFacility(t, facRoot)
	t.Parallel()
	for _, tc := range []struct {
		name string
		bin  string
		env  []string
	}{
		{"memfd_secret", bins.vaultd, nil},
		{"mlock", bins.crash, []string{"VAULTD_TEST_ARENA_FALLBACK=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "memfd_secret" {
				requireFacility(t, facMemfdSecret)
			}
			ms := runMemScan(t, tc.bin, tc.env)
			if ms.arenaKind != tc.name {
				t.Fatalf("arena kind %s, want %s", ms.arenaKind, tc.name)
			}
			if ms.markerDuring == 0 {
				t.Fatalf("the heap marker was not found: the scan cannot see the heap (%d bytes read)", ms.during.scanned)
			}
			if len(ms.outside) > 0 {
				t.Errorf("owner values outside the arena while the lease is active:\n\t%s", hitsSummary(ms.outside))
			}
			if tc.name == "memfd_secret" {
				if !ms.arenaUnreadable {
					t.Errorf("root could read the memfd_secret arena through /proc/<pid>/mem")
				}
				if len(ms.insideArena) > 0 {
					t.Errorf("owner values read from the secretmem arena:\n\t%s", hitsSummary(ms.insideArena))
				}
			}
			if len(ms.afterHits) > 0 {
				t.Errorf("owner values in memory after the leases are CONSUMED (one by a rehydration):\n\t%s", hitsSummary(ms.afterHits))
			}
			t.Logf("figures: %s arena: %d bytes of memory read live (%d unreadable), %d values: %d hits outside the arena, %d inside, %d after consume and a rehydration (%d bytes of output); marker found",
				tc.name, ms.bytesSeen, ms.during.unreadable, ms.valuesCount, len(ms.outside), len(ms.insideArena), len(ms.afterHits), ms.rehydrated)
		})
	}
}

// endToEnd is M6's run: every command of the system, against one vaultd,
// then a scan of every byte under the installation.
type endToEnd struct {
	rep       treeReport
	can       canaries
	artefacts map[string]string // kind → a file of that kind that exists
	input     string            // the user's projection (not written by the system)
}

// runEndToEnd drives cut and vaultd through a whole life: check (and a
// refused check), irreversible and reversible plans and prepares, send to
// the stand-in model with rehydration, a separate rehydrate of a prepared
// cut, lease list/show/revoke, vault status/backup/restore/rotate/
// prove-erasure; then it stops vaultd and scans state (raw Badger files),
// keys, logs, TMPDIR, cut's home (evidence key, journal, lease records,
// quarantine), plans, bundles, backups, answers, everything cut printed and
// what the remote model received.
func runEndToEnd(t *testing.T, bin string, env []string) endToEnd {
	t.Helper()
	d := newDaemon(t, bin, false)
	d.Env = env
	d.Args = []string{"--arena-size", "1048576"}
	d.Start()
	c := newCutter(t, d)
	can := newCanaries("m6")
	e := &e2e{t: t, d: d, c: c, can: can, work: filepath.Join(d.Base, "work")}
	if err := os.MkdirAll(e.work, 0o700); err != nil {
		t.Fatal(err)
	}
	e.proj = writeInputs(t, can)
	e.rem = newRemote(t, d)
	out := endToEnd{can: can, artefacts: map[string]string{}}

	c.must(0, "check", "--vocab", vocabPath, "--json", e.proj)
	bad := filepath.Join(t.TempDir(), "refused.json")
	refused := bytes.Replace(can.projection(), []byte(`owner.person=\"`), []byte(`owner.person=\"\"`), 1)
	if err := os.WriteFile(bad, refused, 0o600); err != nil {
		t.Fatal(err)
	}
	if r := c.run("check", "--vocab", vocabPath, "--json", bad); r.code != 3 {
		t.Fatalf("a malformed record must be refused: %v", r)
	}
	irr := filepath.Join(e.work, "plan-irreversible.json")
	c.must(0, "plan", "init", "--vocab", vocabPath, "--consumer", "model:stand-in", "--purpose", "dependency-triage",
		"--target", e.rem.target(standin.Honest), "-o", irr, e.proj)
	c.must(0, "prepare", "--vocab", vocabPath, "--plan", irr, "--json", "-o", filepath.Join(e.work, "bundle-irreversible.json"), e.proj)

	e.plan = planFor(t, c, e.proj, e.rem.target(standin.Honest))
	b1, ref1 := e.prepare()
	r := c.must(0, "send", "--vocab", vocabPath, "--plan", e.plan, "--json", "--quarantine", filepath.Join(e.work, "answer-send.json"),
		"--schema", schemaPath, e.proj)
	c.allowed[r.outFile] = true // cut send --schema --json prints the result the user asked for
	if !bytes.Contains(r.stdout, []byte(`"rehydrated"`)) {
		t.Fatalf("cut send --schema did not rehydrate: %s", r.stdout)
	}
	var sent struct {
		Lease *string `json:"lease"`
	}
	json.Unmarshal(r.stdout, &sent)
	// The same cut sent as an OpenAI Chat Completions request, with a
	// provider credential read from a file of the user's: neither the
	// credential nor an owner value may reach a byte the system writes.
	instr := filepath.Join(e.work, "instruction.txt")
	if err := os.WriteFile(instr, []byte("Triage these findings; copy owner tokens exactly.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	credFile := filepath.Join(t.TempDir(), "provider.key") // the user's, outside what is scanned
	if err := os.WriteFile(credFile, []byte(can.credential+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wirePlan := planFor(t, c, e.proj, e.rem.srv.URL+standin.OpenAIPath,
		"--wire", "openai-chat@1", "--model", "stand-in-model", "--instruction-file", instr)
	wr := c.must(0, "send", "--vocab", vocabPath, "--plan", wirePlan, "--json", "--credential-file", credFile,
		"--quarantine", filepath.Join(e.work, "answer-wire.json"), "--schema", schemaPath, e.proj)
	c.allowed[wr.outFile] = true
	if !bytes.Contains(wr.stdout, []byte(`"rehydrated"`)) {
		t.Fatalf("cut send over openai-chat@1 did not rehydrate: %s", wr.stdout)
	}
	rr, res := e.rehydrate(b1, ref1)
	if rr.code != 0 {
		t.Fatalf("rehydrate: %v", rr)
	}
	e.checkRehydrated(res)
	_, ref2 := e.prepare()
	_, ref3 := e.prepare()
	c.must(0, "lease", "list", "--json")
	c.must(0, "lease", "list")
	c.must(0, "lease", "show", ref2)
	c.must(0, "vault", "status")
	c.status()
	bk := e.backup("vault.backup")
	c.must(0, "lease", "revoke", ref3, "--json")
	e.proveErasure(0, bk, ref3, ref2)
	c.must(0, "vault", "prove-erasure", bk, ref3, "--live", ref2)
	c.must(0, "vault", "rotate")
	c.must(0, "vault", "restore", bk, "--json")
	d.Stop(syscall.SIGTERM)

	for kind, glob := range map[string]string{
		"badger":       filepath.Join(d.State, "*"),
		"key":          filepath.Join(d.Keys, "epoch-*.key"),
		"wrapped key":  filepath.Join(d.Keys, "dek", "*"),
		"vaultd log":   filepath.Join(d.LogDir, "vaultd-*.log"),
		"journal":      filepath.Join(c.home, "journal.jsonl"),
		"evidence key": filepath.Join(c.home, "evidence.key"),
		"bundle":       filepath.Join(e.work, "bundle-*.json"),
		"plan":         filepath.Join(e.work, "plan-*.json"),
		"backup":       filepath.Join(e.work, "*.backup"),
		"quarantine":   filepath.Join(e.work, "answer-send.json"),
		"cut output":   filepath.Join(c.outDir, "*"),
		"remote":       filepath.Join(d.Base, "remote-received.log"),
	} {
		m, _ := filepath.Glob(glob)
		if len(m) == 0 {
			t.Errorf("the run wrote no %s (%s): the scan would not cover it", kind, glob)
			continue
		}
		out.artefacts[kind] = m[0]
	}
	for kind, glob := range map[string]string{
		"lease record":       filepath.Join(c.home, "state", "privacycut", "leases", "*.json"),
		"rehydrated result":  filepath.Join(e.work, "rehydrated-*.json"),
		"rehydrated receipt": r.outFile,
	} {
		if m, _ := filepath.Glob(glob); len(m) > 0 {
			out.artefacts[kind] = m[0]
		} else {
			t.Errorf("the run wrote no %s", kind)
		}
	}
	rep, err := newScanner(can.all()).scanTrees([]string{d.Base}, c.allowed)
	if err != nil {
		t.Fatal(err)
	}
	out.rep = rep
	out.input = e.proj
	return out
}

// TestM6CanaryScanEndToEnd is M6: after a complete run of the system —
// rehydration included — no byte under the installation
// holds an owner value (raw, hex or base64), except the rehydrated results
// the user asked for; those hold exactly the values the schema marks, and
// finding them shows the scan can fail.
func TestM6CanaryScanEndToEnd(t *testing.T) {
	t.Parallel()
	run := runEndToEnd(t, bins.vaultd, nil)
	if len(run.rep.hits) > 0 {
		t.Errorf("owner values in bytes the system wrote:\n\t%s", hitsSummary(run.rep.hits))
	}
	found := map[int]bool{}
	for _, h := range run.rep.allowedHits {
		if h.form == "raw" {
			found[h.needle] = true
		}
	}
	if !found[0] || !found[1] || !found[2] {
		t.Errorf("the rehydrated results lack restored values (found %v): the scan or the rehydration is broken", found)
	}
	if found[3] {
		t.Errorf("a rehydrated result holds a value the schema does not mark")
	}
	// The control: the same scan finds every value in the user's input.
	in, err := newScanner(run.can.all()).scanTrees([]string{run.input}, nil)
	if err != nil || len(in.hits) < 4 {
		t.Errorf("the scan does not find the values in the projection itself: %v %v", in.hits, err)
	}
	var kinds []string
	for k := range run.artefacts {
		kinds = append(kinds, k)
	}
	t.Logf("figures: %d files, %d bytes scanned for 4 values in 6 forms: %d hits outside the results the user asked for, %d inside; artefact kinds covered: %d",
		run.rep.files, run.rep.bytes, len(run.rep.hits), len(run.rep.allowedHits), len(kinds))
}
