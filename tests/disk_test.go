package tests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"golang.org/x/sys/unix"
)

// The disk-fault suite: vaultd's release build on file systems that fill
// up, fail or vanish. The state and key directories are tmpfs mounts of a
// few MiB (full disk), an ext4 image on a loop device shut down with
// FS_IOC_SHUTDOWN (every I/O then fails with EIO), or a plain directory
// renamed away or removed (a vanished state directory).

// Sizes and bounds of the suite.
const (
	diskStateFS   = 24 << 20 // state tmpfs: Badger's 16 MiB reserved memtable log, tables, the floor
	diskKeyFS     = 4 << 20  // key tmpfs
	diskFloor     = 2 << 20  // --min-free
	diskStopBound = 5 * time.Second
	// diskExitSlack is what a bounded stop may take beyond --stop-timeout
	// before the suite calls it unbounded (process exit, log flush).
	diskExitSlack = 3 * time.Second
)

// crashMarkers are what the Go runtime writes when it dies: a fatal error,
// an unrecovered panic, a signal it could not handle, goroutine stacks.
var crashMarkers = []string{"fatal error:", "panic:", "[signal ", "goroutine ", "runtime stack:", "unexpected fault address"}

// tracebackIn returns the first crash marker in a vaultd log, or "".
func tracebackIn(log []byte) string {
	for _, m := range crashMarkers {
		if i := bytes.Index(log, []byte(m)); i >= 0 {
			end := min(len(log), i+120)
			return strings.TrimSpace(string(log[i:end]))
		}
	}
	return ""
}

// mountTmpfs mounts a tmpfs of size bytes (mode 0700) on dir, unmounted
// when the test ends.
func mountTmpfs(t *testing.T, dir string, size int64) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, fmt.Sprintf("size=%d,mode=0700", size)); err != nil {
		t.Fatalf("mount tmpfs on %s: %v", dir, err)
	}
	t.Cleanup(func() { unix.Unmount(dir, unix.MNT_DETACH) })
}

// filler fills a file system up to what it leaves free.
type filler struct {
	path string
}

// fill writes dir/filler until the file system has at most leave bytes
// available (0: until ENOSPC).
func fill(t *testing.T, dir string, leave int64) *filler {
	t.Helper()
	f := &filler{path: filepath.Join(dir, "filler-"+randHex(4))}
	w, err := os.OpenFile(f.path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	chunk := make([]byte, 64<<10)
	for _, step := range []int{64 << 10, 4 << 10} {
		for {
			if free := freeBytes(t, dir); free <= leave || free < int64(step) {
				break
			}
			if free := freeBytes(t, dir); leave > 0 && free-int64(step) < leave {
				break
			}
			if _, err := w.Write(chunk[:step]); err != nil {
				if errors.Is(err, syscall.ENOSPC) {
					break
				}
				t.Fatal(err)
			}
		}
	}
	if leave == 0 {
		for {
			if _, err := w.Write(chunk[:512]); err != nil {
				break
			}
		}
	}
	return f
}

// lift frees what fill took.
func (f *filler) lift(t *testing.T) {
	t.Helper()
	if err := os.Remove(f.path); err != nil {
		t.Fatal(err)
	}
}

func freeBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// diskDriver is a C3 driver on an installation whose directories the test
// places, running vaultd's release build with a floor and a stop bound.
func diskDriver(t *testing.T, seed uint64, floor int64, place func(dr *driver)) *driver {
	t.Helper()
	st := newStats()
	dr := newDriver(t, rand.New(rand.NewPCG(seed, 0xd15c)), st, bins.vaultd)
	dr.args = append(dr.args, "--min-free", strconv.FormatInt(floor, 10), "--stop-timeout", diskStopBound.String())
	dr.d.Args = dr.args
	if place != nil {
		place(dr)
	}
	dr.d.Start()
	dr.connect()
	return dr
}

// tmpfsDirs mounts tmpfs file systems as the installation's state and key
// directories.
func tmpfsDirs(t *testing.T) func(*driver) {
	return func(dr *driver) {
		mountTmpfs(t, dr.d.State, diskStateFS)
		mountTmpfs(t, dr.d.Keys, diskKeyFS)
	}
}

// populate grants leases and moves them through the states, so that a
// fault meets ACTIVE, bound, CLAIMED and terminal leases.
func populate(dr *driver) {
	for range 4 {
		dr.grant(false)
	}
	ids := dr.liveIDs()
	if len(ids) < 4 || dr.opErr != nil {
		dr.fatal("populate: %d leases granted (%v)", len(ids), dr.opErr)
	}
	for _, id := range ids[:3] {
		if err := dr.bind(id); err != nil {
			dr.fatal("populate: bind: %v", err)
		}
	}
	if _, err := dr.claim(ids[0]); err != nil {
		dr.fatal("populate: claim: %v", err)
	}
	dr.consume(ids[0])
	if _, err := dr.claim(ids[1]); err != nil {
		dr.fatal("populate: claim: %v", err)
	}
	if dr.opErr != nil {
		dr.fatal("populate: %v", dr.opErr)
	}
}

// liveIDs lists the live leases the test knows, in a fixed order.
func (dr *driver) liveIDs() []string {
	var ids []string
	for id := range dr.g.facts {
		if l, ok := dr.current(id); ok && l.Live() {
			ids = append(ids, id)
		}
	}
	sortStrings(ids)
	return ids
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// stopWithin sends SIGTERM and returns how vaultd ended and how long it
// took; a stop that outlives the bound plus slack is a failure.
func stopWithin(dr *driver, sig syscall.Signal) (exitStatus, time.Duration) {
	dr.t.Helper()
	dr.close()
	start := time.Now()
	dr.d.Signal(sig)
	if !dr.d.ExitedWithin(diskStopBound + diskExitSlack) {
		dr.d.Kill()
		dr.fail("vaultd did not exit within %v of %v\n%s", diskStopBound+diskExitSlack, unix.SignalName(sig), dr.d.Log())
	}
	return statusOf(dr.d.WaitErr()), time.Since(start)
}

// checkEnd checks how a run of vaultd ended: no traceback in its log, an
// exit (no signal), and an exit status of 0, or 1 with a log line naming
// what did not close or why vaultd stopped.
func checkEnd(dr *driver, es exitStatus) {
	dr.t.Helper()
	log := dr.d.Log()
	if tb := tracebackIn(log); tb != "" {
		dr.fail("vaultd wrote a traceback: %q (%v)", tb, es)
	}
	switch {
	case es.Signal != 0:
		dr.fail("vaultd died of %v", es)
	case es.Code == 0:
	case es.Code == 1:
		if !bytes.Contains(log, []byte("not closed")) && !bytes.Contains(log, []byte(`"not_closed"`)) &&
			!bytes.Contains(log, []byte("storage failed")) {
			dr.fail("vaultd exited 1 without saying what did not close:\n%s", log)
		}
	default:
		dr.fail("vaultd ended with %v", es)
	}
}

// recoverAndCheck restarts vaultd (the fault lifted) and checks C3's
// invariants and that every live lease's map decrypts.
func recoverAndCheck(dr *driver) {
	dr.t.Helper()
	dr.recover()
	if tb := tracebackIn(dr.d.AllLogs()); tb != "" {
		dr.fail("a traceback in vaultd's logs: %q", tb)
	}
	for _, v := range dr.st.violations {
		dr.t.Errorf("after recovery: %s", v)
	}
}

// statusJSON is `cut vault status --json`, with the storage figures.
type statusJSON struct {
	Traceback string           `json:"traceback"`
	Storage   vaultapi.Storage `json:"storage"`
}

func (dr *driver) statusJSON() statusJSON {
	dr.t.Helper()
	r := dr.cut.must(0, "vault", "status", "--json")
	var s statusJSON
	if err := json.Unmarshal(r.stdout, &s); err != nil {
		dr.t.Fatalf("status: %v\n%s", err, r.stdout)
	}
	return s
}

// wantStorageLow checks a grant's refusal: LIMIT_EXCEEDED, the storage
// sentinel, the directory named; no value in its text.
func (dr *driver) wantStorageLow(err error, dir string) {
	dr.t.Helper()
	var e *vaultapi.Error
	if !errors.As(err, &e) || e.Code != receipts.LimitExceeded || !errors.Is(err, vaultapi.ErrStorageLow) || e.Field != dir {
		dr.fail("want LIMIT_EXCEEDED / storage low naming %s, got %v", dir, err)
		return
	}
	for _, v := range dr.vals {
		if strings.Contains(err.Error(), string(v)) {
			dr.fail("the refusal echoes a value: %v", err)
		}
	}
}

// grantErr asks for a lease through the client and returns its error; a
// grant that succeeds is acknowledged in the ledger (and, holding no
// facts, revoked by openLive after a restart).
func (dr *driver) grantErr() error {
	ctx, cancel := dr.ctx()
	defer cancel()
	sealed, err := dr.c.Seal(ctx, dr.pairs)
	if err != nil {
		return err
	}
	res, err := dr.c.CreateLease(ctx, vaultapi.CreateRequest{Run: "run-disk", Attempt: 1, Target: "https://model.example/disk",
		Purpose: "dependency-triage", SourceDigest: "hmac-sha256:" + randHex(32), Lifetime: time.Hour, Values: sealed})
	if err == nil {
		dr.g.ack(res.Lease)
	}
	return err
}

// TestDiskFaults drives vaultd's release build into each disk fault: a
// full disk during grants, during a key rotation and during the stop; EIO
// on the key directory; the state directory removed while running and
// while stopping. After each: no traceback on vaultd's stderr, a coded
// refusal or a bounded exit, and after the fault is lifted a restart that
// keeps C3's invariants with every live lease's map decrypting.
func TestDiskFaults(t *testing.T) {
	requireFacility(t, facRoot)
	requireFacility(t, facTmpfs)
	t.Parallel()
	seed := seed(t)

	t.Run("full-during-grants", func(t *testing.T) {
		requireFacility(t, facTmpfs)
		t.Parallel()
		dr := diskDriver(t, seed, diskFloor, tmpfsDirs(t))
		if s := dr.statusJSON(); s.Traceback != "none" || s.Storage.Low || s.Storage.Floor != diskFloor {
			t.Errorf("status before the fault: traceback %q, storage %+v", s.Traceback, s.Storage)
		}
		populate(dr)
		f := fill(t, dr.d.State, 0)
		// Through the client: the coded refusal naming the directory.
		dr.wantStorageLow(dr.grantErr(), "state_dir")
		// Through cut: the refusal, its code and the hint.
		c := dr.cut
		proj := writeInputs(t, newCanaries("disk"))
		plan := planFor(t, c, proj, "https://model.example/v1")
		r := c.run("prepare", "--vocab", vocabPath, "--plan", plan, "--json", proj)
		if r.code != 3 || !hasCode(refusalCodes(r.stdout), receipts.LimitExceeded) ||
			!bytes.Contains(r.stderr, []byte("(field state_dir): free space below the vault's floor (LIMIT_EXCEEDED)")) ||
			!bytes.Contains(r.stderr, []byte("cut: hint: the vault's state directory has less free space")) {
			t.Errorf("cut prepare on a full disk: %v", r)
		}
		if s := dr.statusJSON(); !s.Storage.Low || !s.Storage.State.Low || s.Storage.State.FreeBytes >= diskFloor {
			t.Errorf("status on a full disk: %+v", s.Storage)
		}
		// Existing leases keep working on the full disk.
		ids := dr.liveIDs()
		for _, id := range ids {
			l, _ := dr.current(id)
			switch {
			case l.State == lease.Claimed:
				dr.consume(id)
			case dr.g.boundAck[id] != "":
				if _, err := dr.claim(id); err != nil {
					t.Errorf("claim on a full disk: %v", err)
				}
			default:
				dr.revoke(id)
			}
		}
		if dr.opErr != nil {
			t.Errorf("a transition of an existing lease failed on a full disk: %v", dr.opErr)
		}
		es, took := stopWithin(dr, syscall.SIGTERM)
		checkEnd(dr, es)
		t.Logf("full disk during grants: stop took %v, %v", took.Round(time.Millisecond), es)
		f.lift(t)
		recoverAndCheck(dr)
		dr.grant(false)
		if dr.opErr != nil {
			t.Errorf("a grant after the fault was lifted: %v", dr.opErr)
		}
	})

	t.Run("full-during-rotation", func(t *testing.T) {
		requireFacility(t, facTmpfs)
		t.Parallel()
		// A floor of one page: the watermark lets the rotation start with
		// one page free, and the key directory runs out halfway (the new
		// epoch key fits, the rewrapped key store does not).
		dr := diskDriver(t, seed+1, 4096, tmpfsDirs(t))
		populate(dr)
		epoch := dr.statusEpoch()
		f := fill(t, dr.d.Keys, 4096)
		ctx, cancel := dr.ctx()
		_, err := dr.c.Rotate(ctx)
		cancel()
		dr.wantStorageLow(err, "key_dir")
		// The refusal's log line precedes the reply, but reaches the log
		// file through a pipe the harness copies: wait for it.
		if log, ok := dr.d.LogWith(diskStopBound, `"msg":"vault: storage"`, "no space left on device"); !ok {
			t.Errorf("the rotation was not refused by the full file system (ENOSPC) but before it:\n%s", log)
		}
		if got := dr.statusEpoch(); got != epoch {
			t.Errorf("a refused rotation moved the epoch from %d to %d", epoch, got)
		}
		// Below the floor altogether, the watermark refuses it outright.
		f2 := fill(t, dr.d.Keys, 0)
		ctx, cancel = dr.ctx()
		_, err = dr.c.Rotate(ctx)
		cancel()
		dr.wantStorageLow(err, "key_dir")
		for _, id := range dr.liveIDs() {
			if l, _ := dr.current(id); l.State == lease.Claimed {
				dr.consume(id) // a key destruction on a full key directory
			}
		}
		es, took := stopWithin(dr, syscall.SIGTERM)
		checkEnd(dr, es)
		t.Logf("full disk during rotation: stop took %v, %v", took.Round(time.Millisecond), es)
		f2.lift(t)
		f.lift(t)
		recoverAndCheck(dr)
		dr.rotate()
		if dr.opErr != nil || dr.g.epochAck <= epoch {
			t.Errorf("rotation after the fault was lifted: %v (epoch %d)", dr.opErr, dr.g.epochAck)
		}
	})

	t.Run("full-during-stop", func(t *testing.T) {
		requireFacility(t, facTmpfs)
		t.Parallel()
		rep := fullDiskStop(t, seed+2, diskFloor)
		if rep.traceback != "" || len(rep.violations) > 0 || !rep.bounded {
			t.Errorf("full disk during the stop: traceback %q, bounded %v, violations %q", rep.traceback, rep.bounded, rep.violations)
		}
	})

	t.Run("eio-key-dir", func(t *testing.T) {
		requireFacility(t, facLoopExt4)
		t.Parallel()
		var img *ext4Image
		dr := diskDriver(t, seed+3, diskFloor, func(dr *driver) {
			img = newExt4Image(t, filepath.Join(dr.d.Base, "keyfs"), 16<<20)
			dr.d.Keys = filepath.Join(img.mnt, "keys")
		})
		populate(dr)
		img.shutdown(t)
		err := dr.grantErr()
		if err == nil {
			t.Errorf("a grant with the key directory failing EIO was acknowledged")
		} else if !errors.Is(err, vaultapi.ErrStorageFailed) && !errors.Is(err, vaultapi.ErrUnavailable) {
			t.Errorf("a grant on EIO: %v, want the storage failure (or the daemon gone)", err)
		}
		dr.close()
		start := time.Now()
		if !dr.d.ExitedWithin(diskStopBound + diskExitSlack) {
			dr.d.Kill()
			t.Fatalf("vaultd did not stop on EIO within %v\n%s", diskStopBound+diskExitSlack, dr.d.Log())
		}
		es := statusOf(dr.d.WaitErr())
		checkEnd(dr, es)
		if es.Code != 1 || !bytes.Contains(dr.d.Log(), []byte("EIO")) && !bytes.Contains(dr.d.Log(), []byte("input/output error")) {
			t.Errorf("vaultd on EIO: %v, want exit 1 naming the I/O error\n%s", es, dr.d.Log())
		}
		t.Logf("EIO on the key directory: vaultd stopped by itself %v after the refused grant, %v", time.Since(start).Round(time.Millisecond), es)
		img.remount(t)
		recoverAndCheck(dr)
	})

	t.Run("state-removed-running", func(t *testing.T) {
		t.Parallel()
		dr := diskDriver(t, seed+4, diskFloor, nil)
		populate(dr)
		away := dr.d.State + ".away"
		if err := os.Rename(dr.d.State, away); err != nil {
			t.Fatal(err)
		}
		ids := dr.liveIDs()
		prev := dr.opErr
		dr.revoke(ids[len(ids)-1]) // must not be acknowledged: it would be lost with the directory
		if dr.opErr == nil && prev == nil {
			if l, _ := dr.current(ids[len(ids)-1]); l.State == lease.Revoked {
				t.Errorf("a revocation was acknowledged with the state directory gone")
			}
		}
		dr.opErr = nil
		dr.close()
		if !dr.d.ExitedWithin(diskStopBound + diskExitSlack + 2*time.Second) {
			dr.d.Kill()
			t.Fatalf("vaultd kept running without its state directory\n%s", dr.d.Log())
		}
		es := statusOf(dr.d.WaitErr())
		checkEnd(dr, es)
		if es.Code != 1 || !bytes.Contains(dr.d.Log(), []byte("state directory removed or replaced")) {
			t.Errorf("vaultd without its state directory: %v\n%s", es, dr.d.Log())
		}
		if err := os.Rename(away, dr.d.State); err != nil {
			t.Fatal(err)
		}
		recoverAndCheck(dr)
	})

	t.Run("state-removed-stopping", func(t *testing.T) {
		t.Parallel()
		// The operator's rm -rf racing a stop, at three offsets. The data
		// is gone for good: what must hold is a bounded exit without a
		// traceback, and a restart on what is left (the key directory
		// keeps the wrapped keys, counted as keys without a lease).
		for i, delay := range []time.Duration{0, 20 * time.Millisecond, 150 * time.Millisecond} {
			dr := diskDriver(t, seed+5+uint64(i), diskFloor, nil)
			populate(dr)
			dr.close()
			dr.d.Signal(syscall.SIGTERM)
			time.Sleep(delay)
			os.RemoveAll(dr.d.State)
			start := time.Now()
			if !dr.d.ExitedWithin(diskStopBound + diskExitSlack) {
				dr.d.Kill()
				t.Fatalf("rm -rf %v after SIGTERM: vaultd did not exit within %v\n%s", delay, diskStopBound+diskExitSlack, dr.d.Log())
			}
			es := statusOf(dr.d.WaitErr())
			checkEnd(dr, es)
			t.Logf("rm -rf %v after SIGTERM: exited %v later, %v", delay, time.Since(start).Round(time.Millisecond), es)
			dr.d.Args = dr.args
			if err := dr.d.TryStart(); err != nil {
				t.Fatalf("restart on the emptied state directory: %v", err)
			}
			dr.connect()
			leases, err := dr.cut.list()
			if err != nil {
				t.Fatalf("list after the restart: %v", err)
			}
			for _, in := range leases {
				if in.Lease.State.Terminal() && in.Key != vaultapi.KeyDestroyed {
					t.Errorf("terminal lease %s keeps its key", in.Lease.ID)
				}
			}
			if tb := tracebackIn(dr.d.AllLogs()); tb != "" {
				t.Errorf("traceback: %q", tb)
			}
			es, _ = stopWithin(dr, syscall.SIGTERM)
			checkEnd(dr, es)
		}
	})
}

// statusEpoch is the key epoch `cut vault status` reports... through the
// client.
func (dr *driver) statusEpoch() uint64 {
	dr.t.Helper()
	ctx, cancel := dr.ctx()
	defer cancel()
	st, err := dr.c.Status(ctx)
	if err != nil {
		dr.t.Fatalf("status: %v", err)
	}
	return st.Epoch
}

// diskStopReport is what fullDiskStop saw.
type diskStopReport struct {
	traceback  string
	bounded    bool
	exit       exitStatus
	violations []string
}

// fullDiskStop grants and moves leases on tmpfs directories, fills the
// state directory's file system to the last byte, stops vaultd with
// SIGTERM, lifts the fault and restarts it: the full disk during the stop.
// With floor 0 (the watermark disabled) the stop flushes Badger's memtable
// into a new mapped table file on the full file system.
func fullDiskStop(t *testing.T, seed uint64, floor int64) diskStopReport {
	dr := diskDriver(t, seed, floor, tmpfsDirs(t))
	populate(dr)
	f := fill(t, dr.d.State, 0)
	dr.close()
	start := time.Now()
	dr.d.Signal(syscall.SIGTERM)
	rep := diskStopReport{bounded: dr.d.ExitedWithin(diskStopBound + diskExitSlack)}
	if !rep.bounded {
		dr.d.Kill()
	}
	rep.exit = statusOf(dr.d.WaitErr())
	log := dr.d.Log()
	rep.traceback = tracebackIn(log)
	t.Logf("full disk during the stop (floor %d): %v after %v; traceback %q", floor, rep.exit, time.Since(start).Round(time.Millisecond), rep.traceback)
	if rep.traceback == "" && rep.exit.Code == 1 && !bytes.Contains(log, []byte("not closed")) {
		rep.violations = append(rep.violations, "exit 1 without naming what did not close")
	}
	f.lift(t)
	dr.recover()
	rep.violations = append(rep.violations, dr.st.violations...)
	return rep
}

// ext4Image is an ext4 file system in a file, on a loop device.
type ext4Image struct {
	img, mnt string
	loops    []string // the loop devices attached, detached at the end
}

// newExt4Image makes and mounts an ext4 image of size bytes at mnt.
func newExt4Image(t *testing.T, mnt string, size int64) *ext4Image {
	t.Helper()
	e := &ext4Image{img: mnt + ".img", mnt: mnt}
	if err := os.MkdirAll(mnt, 0o700); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(e.img)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(size)
	f.Close()
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", e.img).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	e.mount(t)
	t.Cleanup(func() {
		unix.Unmount(e.mnt, unix.MNT_DETACH)
		for _, l := range e.loops {
			exec.Command("losetup", "-d", l).Run()
		}
	})
	return e
}

// mount attaches the image to a new loop device and mounts it: a new
// device has a superblock of its own, so a remount never meets the one
// that was shut down, which may outlive its unmount for a moment.
func (e *ext4Image) mount(t *testing.T) {
	t.Helper()
	out, err := exec.Command("losetup", "--find", "--show", e.img).Output()
	if err != nil {
		t.Fatalf("losetup: %v", err)
	}
	dev := strings.TrimSpace(string(out))
	e.loops = append(e.loops, dev)
	if out, err := exec.Command("mount", "-t", "ext4", dev, e.mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount %s: %v\n%s", dev, err, out)
	}
	if err := os.Chmod(e.mnt, 0o700); err != nil {
		t.Fatal(err)
	}
}

// shutdown makes every later I/O on the file system fail with EIO
// (FS_IOC_SHUTDOWN; the default flag syncs it first, so nothing written
// before is lost).
func (e *ext4Image) shutdown(t *testing.T) {
	t.Helper()
	if err := fsShutdown(e.mnt); err != nil {
		t.Fatalf("FS_IOC_SHUTDOWN: %v", err)
	}
}

// remount lifts the fault: the shut-down file system is unmounted, its
// loop device detached, and the image mounted again on a new one (ext4
// replays its journal).
func (e *ext4Image) remount(t *testing.T) {
	t.Helper()
	if err := unix.Unmount(e.mnt, 0); err != nil {
		if err := unix.Unmount(e.mnt, unix.MNT_DETACH); err != nil {
			t.Fatalf("umount: %v", err)
		}
	}
	if n := len(e.loops); n > 0 {
		exec.Command("losetup", "-d", e.loops[n-1]).Run()
		e.loops = e.loops[:n-1]
	}
	e.mount(t)
}

// fsIocShutdown is FS_IOC_SHUTDOWN (_IOR('X', 125, __u32)).
const fsIocShutdown = 0x8004587d

func fsShutdown(dir string) error {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	flags := uint32(0) // FS_GOING_FLAGS_DEFAULT: sync, then shut down
	return unix.IoctlSetPointerInt(fd, fsIocShutdown, int(flags))
}

// probeTmpfs mounts and unmounts a 1 MiB tmpfs.
func probeTmpfs() probe {
	if os.Geteuid() != 0 {
		return probe{reason: "mounting needs root"}
	}
	dir, err := os.MkdirTemp("", "probe-tmpfs-")
	if err != nil {
		return probe{reason: err.Error()}
	}
	defer os.Remove(dir)
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
		return probe{reason: "mount tmpfs: " + err.Error()}
	}
	unix.Unmount(dir, unix.MNT_DETACH)
	return probe{ok: true}
}

// probeLoopExt4 makes a small ext4 image, mounts it on a loop device and
// shuts it down, checking that a write then fails with EIO.
func probeLoopExt4() probe {
	if os.Geteuid() != 0 {
		return probe{reason: "loop devices and mounts need root"}
	}
	for _, tool := range []string{"mkfs.ext4", "mount", "losetup"} {
		if _, err := exec.LookPath(tool); err != nil {
			return probe{reason: tool + " not found"}
		}
	}
	dir, err := os.MkdirTemp("", "probe-ext4-")
	if err != nil {
		return probe{reason: err.Error()}
	}
	defer os.RemoveAll(dir)
	img, mnt := filepath.Join(dir, "img"), filepath.Join(dir, "mnt")
	os.Mkdir(mnt, 0o700)
	f, err := os.Create(img)
	if err != nil {
		return probe{reason: err.Error()}
	}
	f.Truncate(8 << 20)
	f.Close()
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		return probe{reason: fmt.Sprintf("mkfs.ext4: %v: %s", err, bytes.TrimSpace(out))}
	}
	if out, err := exec.Command("mount", "-o", "loop", img, mnt).CombinedOutput(); err != nil {
		return probe{reason: fmt.Sprintf("mount -o loop: %v: %s", err, bytes.TrimSpace(out))}
	}
	defer unix.Unmount(mnt, unix.MNT_DETACH)
	if err := fsShutdown(mnt); err != nil {
		return probe{reason: "FS_IOC_SHUTDOWN: " + err.Error()}
	}
	if err := os.WriteFile(filepath.Join(mnt, "x"), []byte("x"), 0o600); !errors.Is(err, syscall.EIO) {
		return probe{reason: fmt.Sprintf("a write after FS_IOC_SHUTDOWN returned %v, not EIO", err)}
	}
	return probe{ok: true}
}
