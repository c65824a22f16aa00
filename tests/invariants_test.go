package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

// facts are what the test knows about a lease it was granted: the values
// it fixes once, so that a retry after a crash repeats exactly what an
// unanswered request may already have committed.
type facts struct {
	tokens    []string
	export    []byte
	cutEvent  string
	candidate string
	claim     vaultapi.ClaimRequest
}

// ledger is the test's own record of what vaultd acknowledged and what it
// was last seen to hold. Only answered requests enter acked; a request that
// got no answer (the daemon died) may or may not have committed, and the
// checks allow both.
type ledger struct {
	acked      map[string]lease.Lease // the record the last acknowledged transition returned
	boundAck   map[string]string      // lease → export digest of an acknowledged Bind
	seen       map[string]lease.Lease // the record observed after the last restart
	facts      map[string]*facts
	epochAck   uint64 // the epoch an acknowledged rotation reached
	unanswered int    // grants that got no answer: each may have left a lease and a wrapped key
}

func newLedger() *ledger {
	return &ledger{acked: map[string]lease.Lease{}, boundAck: map[string]string{}, seen: map[string]lease.Lease{}, facts: map[string]*facts{}}
}

// ack records an acknowledged lease record.
func (g *ledger) ack(l lease.Lease) {
	if prev, ok := g.acked[l.ID]; !ok || l.Seq >= prev.Seq {
		g.acked[l.ID] = l
	}
}

// recovery is what one check after a restart saw.
type recovery struct {
	material   vaulttest.Material
	checks     int // individual invariants evaluated
	violations []string
}

func (r *recovery) failf(format string, args ...any) {
	r.violations = append(r.violations, fmt.Sprintf(format, args...))
}

// check evaluates an invariant; false adds the violation.
func (r *recovery) check(ok bool, format string, args ...any) {
	r.checks++
	if !ok {
		r.failf(format, args...)
	}
}

// checkRecovered checks the invariants of the vault after a restart, from
// `cut lease list --json` (leases) and the key directory read directly:
//
//   - every lease record passes lease.Check (a legal state);
//   - every acknowledged transition persisted: lease.Forward from the
//     acknowledged record, and an acknowledged binding is kept;
//   - no transition went backwards: lease.Forward from the record seen at
//     the previous restart;
//   - no terminal lease keeps its data key: recorded destroyed, reported
//     destroyed, and no wrap file under any epoch;
//   - no live lease is past a deadline that passed before boot (recovery
//     expires it), and every live lease's wrapped key unwraps under the
//     current epoch;
//   - the key directory holds exactly one epoch key, the current one, not
//     older than an acknowledged rotation; every wrap is under it; no
//     temporary file is left;
//   - leases and wrapped keys nobody was granted number at most the grants
//     that went unanswered.
//
// bootStart is when the vaultd that now serves was started. checkRecovered
// updates g.seen.
func checkRecovered(g *ledger, leases []vaultapi.Info, keyDir string, bootStart time.Time) *recovery {
	r := &recovery{}
	mat, err := vaulttest.ReadMaterial(keyDir)
	r.material = mat
	r.check(err == nil, "key directory unreadable: %v", err)
	byID := map[string]vaultapi.Info{}
	for _, in := range leases {
		l := in.Lease
		byID[l.ID] = in
		r.check(l.Check() == nil, "lease %s: illegal record: %v", l.ID, l.Check())
		if l.State.Terminal() {
			r.check(in.Key == vaultapi.KeyDestroyed && l.KeyDestroyed,
				"terminal lease %s (%v) keeps its data key: key %s, recorded destroyed %v", l.ID, l.State, in.Key, l.KeyDestroyed)
			files := wrapFiles(keyDir, l.ID)
			r.check(len(files) == 0, "terminal lease %s (%v) keeps wrapped key files %v", l.ID, l.State, files)
			_, unwraps := mat.DEKs[l.ID]
			r.check(!unwraps, "terminal lease %s (%v): its data key still unwraps", l.ID, l.State)
		} else {
			r.check(l.Deadline.After(bootStart), "live lease %s (%v) past its deadline %v, which passed before boot at %v",
				l.ID, l.State, l.Deadline.Format(time.RFC3339Nano), bootStart.Format(time.RFC3339Nano))
			_, unwraps := mat.DEKs[l.ID]
			r.check(in.Key == vaultapi.KeyPresent && unwraps, "live lease %s (%v) has no usable data key: key %s, unwraps %v", l.ID, l.State, in.Key, unwraps)
		}
	}
	for id, a := range g.acked {
		in, ok := byID[id]
		if !r.check0(ok, "acknowledged lease %s (%v, seq %d) is gone", id, a.State, a.Seq) {
			continue
		}
		err := lease.Forward(a, in.Lease)
		r.check(err == nil, "lease %s: acknowledged %v seq %d, now %v seq %d: %v", id, a.State, a.Seq, in.Lease.State, in.Lease.Seq, err)
	}
	for id, digest := range g.boundAck {
		if in, ok := byID[id]; ok {
			r.check(in.Lease.ExportDigest == digest, "lease %s: acknowledged binding to %s lost (now %q)", id, digest, in.Lease.ExportDigest)
		}
	}
	for id, s := range g.seen {
		in, ok := byID[id]
		if !r.check0(ok, "lease %s, seen at the last restart (%v), is gone", id, s.State) {
			continue
		}
		err := lease.Forward(s, in.Lease)
		r.check(err == nil, "lease %s went backwards: seen %v seq %d, now %v seq %d: %v", id, s.State, s.Seq, in.Lease.State, in.Lease.Seq, err)
	}
	unknown := 0
	for id, in := range byID {
		if _, ok := g.facts[id]; !ok {
			if _, seen := g.seen[id]; !seen {
				unknown++
			}
		}
		g.seen[id] = in.Lease
	}
	r.check(unknown <= g.unanswered, "%d leases appeared that no answered or unanswered grant accounts for (unanswered grants: %d)", unknown, g.unanswered)
	if err == nil {
		r.check(len(mat.EpochKeys) == 1, "%d epoch keys in the key directory, want exactly 1: epochs %v", len(mat.EpochKeys), epochList(mat))
		_, cur := mat.EpochKeys[mat.Epoch]
		r.check(cur, "the current epoch %d has no key file", mat.Epoch)
		r.check(mat.Epoch >= g.epochAck, "current epoch %d is older than the acknowledged rotation to %d", mat.Epoch, g.epochAck)
		g.epochAck = max(g.epochAck, mat.Epoch)
		stray := strayKeyFiles(keyDir, mat.Epoch)
		r.check(len(stray) == 0, "stray files in the key directory after recovery: %v", stray)
		orphans := 0
		for id := range mat.DEKs {
			if _, ok := byID[id]; !ok {
				orphans++
			}
		}
		r.check(orphans <= g.unanswered, "%d wrapped keys without a lease, more than the %d unanswered grants", orphans, g.unanswered)
	}
	return r
}

// check0 is check that also returns ok.
func (r *recovery) check0(ok bool, format string, args ...any) bool {
	r.check(ok, format, args...)
	return ok
}

// wrapFiles lists the wrap files of a lease under any epoch.
func wrapFiles(keyDir, id string) []string {
	m, _ := filepath.Glob(filepath.Join(keyDir, "dek", strings.TrimPrefix(id, "pcl:")+".*"))
	return m
}

// strayKeyFiles lists key-directory files that must not survive recovery:
// temporary files, and wraps or epoch keys of an epoch other than cur.
func strayKeyFiles(keyDir string, cur uint64) []string {
	var stray []string
	suffix := "." + strconv.FormatUint(cur, 10)
	top, _ := os.ReadDir(keyDir)
	for _, e := range top {
		n := e.Name()
		switch {
		case strings.HasSuffix(n, ".tmp"):
			stray = append(stray, n)
		case strings.HasPrefix(n, "epoch-") && n != "epoch-"+strconv.FormatUint(cur, 10)+".key":
			stray = append(stray, n)
		}
	}
	deks, _ := os.ReadDir(filepath.Join(keyDir, "dek"))
	for _, e := range deks {
		if !strings.HasSuffix(e.Name(), suffix) {
			stray = append(stray, "dek/"+e.Name())
		}
	}
	sort.Strings(stray)
	return stray
}

func epochList(m vaulttest.Material) []uint64 {
	var es []uint64
	for e := range m.EpochKeys {
		es = append(es, e)
	}
	sort.Slice(es, func(i, j int) bool { return es[i] < es[j] })
	return es
}

// isCode reports whether err carries code.
func isCode(err error, code receipts.Code) bool { return vaultapi.CodeOf(err) == code }
