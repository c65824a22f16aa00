package tests

import (
	"bytes"
	"encoding/base32"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/internal/standin"
	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

// e2e is one installation driven only through the built binaries: vaultd
// and cut (plan init, prepare, lease, vault, rehydrate).
type e2e struct {
	t    *testing.T
	d    *daemon
	c    *cutter
	can  canaries
	proj string
	rem  *remote
	plan string
	work string
}

func newE2E(t *testing.T, bin, tag string) *e2e {
	t.Helper()
	d := newDaemon(t, bin, false)
	d.Args = []string{"--arena-size", "1048576"}
	d.Start()
	e := &e2e{t: t, d: d, c: newCutter(t, d), can: newCanaries(tag), work: filepath.Join(d.Base, "work")}
	e.proj = writeInputs(t, e.can)
	e.rem = newRemote(t, d)
	e.plan = planFor(t, e.c, e.proj, e.rem.target(standin.Honest))
	return e
}

// prepare runs a reversible `cut prepare` and returns the bundle and lease.
func (e *e2e) prepare() (bundle, string) {
	e.t.Helper()
	b := prepare(e.t, e.c, e.plan, e.proj)
	return b, *b.Lease
}

// rehydrate writes the stand-in model's honest answer to b's export into
// quarantine and runs `cut rehydrate -o RESULT --json` on it. The result
// file is the one output allowed to hold owner values.
func (e *e2e) rehydrate(b bundle, ref string) (cutResult, string) {
	e.t.Helper()
	q := filepath.Join(e.work, "quarantine-"+strings.TrimPrefix(ref, "pcl:")+".json")
	if err := os.WriteFile(q, answer(e.t, b.Export), 0o600); err != nil {
		e.t.Fatal(err)
	}
	res := filepath.Join(e.work, "rehydrated-"+strings.TrimPrefix(ref, "pcl:")+".json")
	e.c.allowed[res] = true
	return e.c.run("rehydrate", "--lease", ref, "--schema", schemaPath, "-o", res, "--json", q), res
}

// checkRehydrated checks a rehydrated result: every value the schema marks
// is restored, and the one it does not mark (person) is not.
func (e *e2e) checkRehydrated(path string) {
	e.t.Helper()
	out, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatalf("rehydrated result: %v", err)
	}
	for _, v := range e.can.rehydratable() {
		if !bytes.Contains(out, v) {
			e.t.Errorf("the rehydrated result lacks a restored value; result:\n%s", out)
		}
	}
	if bytes.Contains(out, []byte(e.can.person)) {
		e.t.Errorf("the rehydrated result holds a value of a category the schema does not mark")
	}
}

// scanClean scans everything the installation wrote for the canaries;
// only the allowed result files may hold them.
func (e *e2e) scanClean() treeReport {
	e.t.Helper()
	rep, err := newScanner(e.can.all()).scanTrees([]string{e.d.Base}, e.c.allowed)
	if err != nil {
		e.t.Fatal(err)
	}
	if len(rep.hits) > 0 {
		e.t.Errorf("owner values in bytes the system wrote:\n\t%s", hitsSummary(rep.hits))
	}
	return rep
}

// proveErasure runs `cut vault prove-erasure --json` and decodes the report.
func (e *e2e) proveErasure(want int, backup, destroyed, live string) vaultapi.Report {
	e.t.Helper()
	args := []string{"vault", "prove-erasure", backup, destroyed, "--json"}
	if live != "" {
		args = append(args, "--live", live)
	}
	r := e.c.must(want, args...)
	var rep vaultapi.Report
	if err := canon.Unmarshal(bytes.TrimSpace(r.stdout), &rep, canon.Options{}); err != nil {
		e.t.Fatalf("erasure report: %v\n%s", err, r.stdout)
	}
	return rep
}

func (e *e2e) backup(name string) string {
	e.t.Helper()
	p := filepath.Join(e.work, name)
	e.c.must(0, "vault", "backup", "-o", p, "--json")
	return p
}

// twoBoot is C1 and C2: a reversible cut is prepared through cut (grant and
// bind acknowledged), vaultd is stopped with sig, started again, and the
// lease is used: rehydrated through `cut rehydrate` (claim, consume, key
// destroyed) when cut has it, and in any case shown to hold the same map
// through the erasure proof's live probe.
func twoBoot(t *testing.T, sig syscall.Signal) {
	e := newE2E(t, bins.vaultd, "boot")
	bA, refA := e.prepare()
	bB, refB := e.prepare()
	before := e.c.show(refB)
	if before.Lease.State != lease.Active || !before.Lease.Bound() || before.Key != vaultapi.KeyPresent {
		t.Fatalf("after prepare: %v bound %v key %v", before.Lease.State, before.Lease.Bound(), before.Key)
	}
	es := statusOf(e.d.Stop(sig))
	if sig == syscall.SIGTERM && (es.Signal != 0 || es.Code != 0) {
		t.Fatalf("SIGTERM: vaultd %v, want exit status 0", es)
	}
	if sig == syscall.SIGKILL && es.Signal != syscall.SIGKILL {
		t.Fatalf("SIGKILL: vaultd %v", es)
	}
	e.d.Start()
	after := e.c.show(refB)
	if err := lease.Forward(before.Lease, after.Lease); err != nil || after.Lease.Seq != before.Lease.Seq {
		t.Fatalf("the lease changed across the restart: %v (seq %d → %d)", err, before.Lease.Seq, after.Lease.Seq)
	}
	if after.Key != vaultapi.KeyPresent {
		t.Fatalf("key %v after the restart", after.Key)
	}
	// The map that survived is the one granted: B decrypts with one entry
	// per distinct value (module, module2, team, person).
	// The backup is taken before A ends: a later one holds no map of A and
	// proves nothing.
	bk := e.backup("after-restart.backup")
	e.c.must(0, "lease", "revoke", refA, "--json")
	rep := e.proveErasure(0, bk, refA, refB)
	if !rep.Proven || rep.Live == nil || !rep.Live.Decrypts || rep.Live.Entries != 4 {
		t.Fatalf("live probe of the lease after the restart: %+v", rep.Live)
	}
	r, res := e.rehydrate(bB, refB)
	if r.code != 0 {
		t.Fatalf("rehydrate after the restart: %v", r)
	}
	e.checkRehydrated(res)
	if in := e.c.show(refB); in.Lease.State != lease.Consumed || in.Key != vaultapi.KeyDestroyed {
		t.Errorf("after rehydration: %v key %v, want CONSUMED destroyed", in.Lease.State, in.Key)
	}
	if r, _ := e.rehydrate(bA, refA); r.code != 3 || !hasCode(refusalCodes(r.stdout), receipts.LeaseNotActive) {
		t.Errorf("rehydrating the revoked lease: %v", r)
	}
	rep2 := e.scanClean()
	t.Logf("figures: %s two-boot: lease seq %d kept, map of %d entries decrypts after the restart, %d files / %d bytes scanned clean",
		sig, after.Lease.Seq, rep.Live.Entries, rep2.files, rep2.bytes)
}

// TestC1TwoBootSIGTERM is C1 through the binaries.
func TestC1TwoBootSIGTERM(t *testing.T) { t.Parallel(); twoBoot(t, syscall.SIGTERM) }

// TestC2TwoBootSIGKILL is C2: SIGKILL right after `cut prepare` returned,
// that is, right after the grant and the bind were acknowledged.
func TestC2TwoBootSIGKILL(t *testing.T) { t.Parallel(); twoBoot(t, syscall.SIGKILL) }

// TestC4ExpiryAcrossRestart: a lease whose deadline passes while vaultd is
// down is EXPIRED when vaultd starts again, its key destroyed and its
// deadline unchanged; a restart with the clock set back does not revive it.
// The crashpoints build's clock hook moves the daemon's clock past the
// plan's 70-minute lease instead of waiting.
func TestC4ExpiryAcrossRestart(t *testing.T) {
	t.Parallel()
	e := newE2E(t, bins.crash, "c4")
	b, ref := e.prepare()
	before := e.c.show(ref)
	if es := statusOf(e.d.Stop(syscall.SIGTERM)); es.Code != 0 || es.Signal != 0 {
		t.Fatalf("stop: %v", es)
	}
	if len(wrapFiles(e.d.Keys, ref)) != 1 {
		t.Fatalf("the lease has no wrapped key before the restart")
	}
	e.d.Env = []string{"VAULTD_TEST_CLOCK_OFFSET=2h"}
	e.d.Start()
	after := e.c.show(ref)
	if after.Lease.State != lease.Expired || after.Key != vaultapi.KeyDestroyed || !after.Lease.KeyDestroyed {
		t.Fatalf("after the deadline passed while down: %v key %v", after.Lease.State, after.Key)
	}
	if !after.Lease.Deadline.Equal(before.Lease.Deadline) || !after.Lease.CreatedAt.Equal(before.Lease.CreatedAt) {
		t.Errorf("deadline %v → %v: a restart changed it", before.Lease.Deadline, after.Lease.Deadline)
	}
	if err := lease.Forward(before.Lease, after.Lease); err != nil {
		t.Errorf("expiry is not a forward move: %v", err)
	}
	if w := wrapFiles(e.d.Keys, ref); len(w) != 0 {
		t.Errorf("the expired lease keeps wrapped keys %v", w)
	}
	if r, _ := e.rehydrate(b, ref); r.code != 3 || !hasCode(refusalCodes(r.stdout), receipts.LeaseNotActive) {
		t.Errorf("rehydrating the expired lease: %v", r)
	}
	// The clock set back: nothing revives.
	e.d.Stop(syscall.SIGTERM)
	e.d.Env = []string{"VAULTD_TEST_CLOCK_OFFSET=-1h"}
	e.d.Start()
	if in := e.c.show(ref); in.Lease.State != lease.Expired || in.Key != vaultapi.KeyDestroyed {
		t.Errorf("with the clock set back: %v key %v", in.Lease.State, in.Key)
	}
	e.scanClean()
	t.Logf("figures: deadline %v kept across 3 boots; EXPIRED with its key destroyed at the first boot past it",
		before.Lease.Deadline.Sub(before.Lease.CreatedAt))
}

// TestK2VerifiedPurge: `cut vault prove-erasure` on a backup taken while
// two leases were live fails before anything is destroyed (the negative
// control), proves erasure once one lease is revoked (its map
// undecryptable, LEASE_UNRECOVERABLE, the other's decrypting), and still
// does after a rotation. The backup holds no key and no owner value.
func TestK2VerifiedPurge(t *testing.T) {
	t.Parallel()
	e := newE2E(t, bins.vaultd, "k2")
	bA, refA := e.prepare()
	bB, refB := e.prepare()
	if bytes.Equal(bA.Export, bB.Export) {
		t.Fatalf("two cuts of the same projection got the same tokens: no fresh namespace")
	}
	bk := e.backup("pre-purge.backup")
	raw, err := os.ReadFile(bk)
	if err != nil {
		t.Fatal(err)
	}
	mat, err := vaulttest.ReadMaterial(e.d.Keys)
	if err != nil || len(mat.DEKs) != 2 {
		t.Fatalf("key material: %d data keys, %v", len(mat.DEKs), err)
	}
	for _, k := range mat.All() {
		if bytes.Contains(raw, k) {
			t.Errorf("the backup holds key bytes")
		}
	}
	control := e.proveErasure(4, bk, refA, refB)
	if control.Proven || !control.Destroyed.Decrypts {
		t.Fatalf("negative control: before the revocation the map must decrypt: %+v", control)
	}
	e.c.must(0, "lease", "revoke", refA, "--json")
	// The forgery that proved erasure of a live lease: one byte of B's map
	// flipped and the trailer recomputed as a plain SHA-256. The keyed
	// check refuses it (exit 4, not proven), for B and for A alike.
	forged := filepath.Join(e.work, "forged.backup")
	if err := os.WriteFile(forged, vaulttest.Resum(flipMap(t, raw, refB)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{refB, refA} {
		if f := e.proveErasure(4, forged, ref, ""); f.Proven || f.BackupVerified || f.Reason != vaultapi.ReasonBackupCorrupt {
			t.Errorf("edited backup: %+v", f)
		}
	}
	rep := e.proveErasure(0, bk, refA, refB)
	if !rep.Proven || rep.Destroyed.Decrypts || rep.Destroyed.Code != receipts.LeaseUnrecoverable || !rep.Destroyed.MapInBackup ||
		rep.Live == nil || !rep.Live.Decrypts {
		t.Fatalf("erasure proof: %+v live %+v", rep.Destroyed, rep.Live)
	}
	e.c.must(0, "vault", "rotate", "--json")
	rot := e.proveErasure(0, bk, refA, refB)
	if !rot.Proven || rot.Epoch != rep.Epoch+1 {
		t.Errorf("after rotation: proven %v epoch %d → %d", rot.Proven, rep.Epoch, rot.Epoch)
	}
	if r, res := e.rehydrate(bB, refB); r.code != 0 {
		t.Errorf("rehydrating the live lease after the purge and the rotation: %v", r)
	} else {
		e.checkRehydrated(res)
	}
	if r, _ := e.rehydrate(bA, refA); r.code != 3 || !hasCode(refusalCodes(r.stdout), receipts.LeaseNotActive) {
		t.Errorf("rehydrating the purged lease: %v", r)
	}
	// A live lease whose wrapped key is deleted by hand is not erased.
	_, refC := e.prepare()
	bkC := e.backup("with-c.backup")
	if err := os.Remove(filepath.Join(e.d.Keys, "dek", strings.TrimPrefix(refC, "pcl:")+"."+strconv.FormatUint(rot.Epoch, 10))); err != nil {
		t.Fatal(err)
	}
	if r := e.proveErasure(4, bkC, refC, ""); r.Proven || r.Reason != vaultapi.ReasonNotTerminal || r.Destroyed.WrappedKey {
		t.Errorf("deleted key, lease ACTIVE: %+v", r)
	}
	e.c.must(0, "lease", "revoke", refC, "--json")
	scan := e.scanClean()
	t.Logf("figures: backup of %d bytes holds no key (%d keys compared); control exit 4, edited backup exit 4 (%s), proof exit 0 (%s: %s), after rotation to epoch %d still proven; %d bytes scanned clean",
		len(raw), len(mat.All()), vaultapi.ReasonBackupCorrupt, rep.Destroyed.Code, rep.Destroyed.Reason, rot.Epoch, scan.bytes)
}

// flipMap returns a copy of a backup stream with one byte of the sealed map
// of lease ref flipped, found by the documented format: an 'M' record is
// the kind byte, the 16 bytes of the lease id, a 4-byte length, the map.
func flipMap(t *testing.T, backup []byte, ref string) []byte {
	t.Helper()
	id, err := base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding).DecodeString(strings.TrimPrefix(ref, "pcl:"))
	if err != nil || len(id) != 16 {
		t.Fatalf("lease id %s: %v", ref, err)
	}
	at := bytes.Index(backup, append([]byte{'M'}, id...))
	if at < 0 {
		t.Fatalf("no map of %s in the backup", ref)
	}
	out := bytes.Clone(backup)
	out[at+21+30] ^= 1
	return out
}

// TestK5KeyStoreLoss: with the key directory deleted, or one wrapped key
// flipped, vaultd starts, reports the leases' keys missing, and every map
// operation answers LEASE_UNRECOVERABLE; nothing is re-derived: a new cut
// gets a new namespace and the lost lease stays lost across another
// restart.
func TestK5KeyStoreLoss(t *testing.T) {
	t.Parallel()
	for _, damage := range []string{"deleted", "flipped"} {
		t.Run(damage, func(t *testing.T) {
			e := newE2E(t, bins.vaultd, "k5")
			bA, refA := e.prepare()
			bB, refB := e.prepare()
			e.d.Stop(syscall.SIGTERM)
			switch damage {
			case "deleted":
				if err := os.RemoveAll(e.d.Keys); err != nil {
					t.Fatal(err)
				}
			case "flipped":
				w := wrapFiles(e.d.Keys, refA)
				if len(w) != 1 {
					t.Fatalf("wrap files of A: %v", w)
				}
				b, err := os.ReadFile(w[0])
				if err != nil {
					t.Fatal(err)
				}
				b[len(b)/2] ^= 0x01
				if err := os.WriteFile(w[0], b, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			e.d.Start()
			if p := e.c.status(); p.Profile != "accepted" {
				t.Fatalf("profile after key loss: %s %v", p.Profile, p.Reasons)
			}
			wantKey := map[string]vaultapi.KeyState{refA: vaultapi.KeyMissing, refB: vaultapi.KeyMissing}
			reason := "no wrapped data key"
			if damage == "flipped" {
				wantKey = map[string]vaultapi.KeyState{refA: vaultapi.KeyPresent, refB: vaultapi.KeyPresent}
				reason = "wrapped data key failed authentication"
			}
			for ref, want := range wantKey {
				if in := e.c.show(ref); in.Lease.State != lease.Active || in.Key != want {
					t.Errorf("%s: %v key %v, want ACTIVE %v", ref, in.Lease.State, in.Key, want)
				}
			}
			// The map cannot be opened, for the reason the damage gives;
			// but a lease the vault still holds ACTIVE is not erased: lost
			// keys are no proof (exit 4, not terminal).
			bk := e.backup("after-loss.backup")
			rep := e.proveErasure(4, bk, refA, "")
			if rep.Destroyed.Decrypts || rep.Destroyed.Code != receipts.LeaseUnrecoverable || rep.Destroyed.Reason != reason {
				t.Errorf("A after key loss: %+v", rep.Destroyed)
			}
			if rep.Proven || rep.Reason != vaultapi.ReasonNotTerminal {
				t.Errorf("A after key loss proven %v (%s), want not proven: %s", rep.Proven, rep.Reason, vaultapi.ReasonNotTerminal)
			}
			if r, _ := e.rehydrate(bA, refA); r.code != 3 || !hasCode(refusalCodes(r.stdout), receipts.LeaseUnrecoverable) {
				t.Errorf("rehydrating A: %v", r)
			}
			r, res := e.rehydrate(bB, refB)
			switch damage {
			case "deleted":
				if r.code != 3 || !hasCode(refusalCodes(r.stdout), receipts.LeaseUnrecoverable) {
					t.Errorf("rehydrating B with every key lost: %v", r)
				}
			case "flipped":
				if r.code != 0 {
					t.Errorf("rehydrating B, whose key is intact: %v", r)
				} else {
					e.checkRehydrated(res)
				}
			}
			// Nothing is re-derived: a new cut is a new lease in a new
			// namespace, and A stays unrecoverable after another restart.
			bC, _ := e.prepare()
			if bytes.Equal(bC.Export, bA.Export) {
				t.Errorf("a new cut reused the lost lease's tokens")
			}
			e.d.Stop(syscall.SIGTERM)
			e.d.Start()
			rep = e.proveErasure(4, e.backup("after-restart.backup"), refA, "")
			if rep.Destroyed.Decrypts || rep.Proven {
				t.Errorf("A decrypts again after a restart")
			}
			e.scanClean()
			t.Logf("figures: key store %s: A %s (%s)", damage, rep.Destroyed.Code, rep.Destroyed.Reason)
		})
	}
}

// TestEmptyLogAfterCrash is the regression test of the defect the crash
// loops found: a SIGKILL between Badger's creation of a memtable (.mem) or
// value log (.vlog) file and its first write leaves a 0-byte file, on which
// Badger v4.9.6 fails to open (dgraph-io/badger#2207); vaultd then refused
// to start after the crash (.mem: 3 times in about 1700 restarts; .vlog:
// once, later). vault/store now removes such files before opening Badger.
// With one planted in a stopped installation, vaultd must serve on its
// first start, say so in its log, and keep the lease exactly as it was.
func TestEmptyLogAfterCrash(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"99999.mem", "99999.vlog"} {
		t.Run(filepath.Ext(name), func(t *testing.T) {
			e := newE2E(t, bins.vaultd, "b2207")
			_, ref := e.prepare()
			before := e.c.show(ref)
			e.d.Stop(syscall.SIGTERM)
			if err := os.WriteFile(filepath.Join(e.d.State, name), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := e.d.TryStart(); err != nil {
				t.Fatalf("vaultd does not start over an empty %s: %v", name, err)
			}
			if !bytes.Contains(e.d.Log(), []byte("removed empty log files")) {
				t.Errorf("vaultd's log does not report the removed file:\n%s", e.d.Log())
			}
			after := e.c.show(ref)
			if err := lease.Forward(before.Lease, after.Lease); err != nil || after.Lease.Seq != before.Lease.Seq || after.Key != vaultapi.KeyPresent {
				t.Errorf("the lease after the start: %v seq %d → %d key %v", err, before.Lease.Seq, after.Lease.Seq, after.Key)
			}
			if _, err := os.Stat(filepath.Join(e.d.State, name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the empty %s is still there: %v", name, err)
			}
		})
	}
}
