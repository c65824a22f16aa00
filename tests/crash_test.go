package tests

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/crash"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/vault/vaulttest"
)

// The crash points of a lease transition and of a rotation (package
// vault/crash), as C3 arms them.
var (
	transitionPoints = []string{
		crash.GrantMapBuilt, crash.GrantWrapped, crash.GrantCommitted,
		crash.BindCommitted, crash.ClaimCommitted,
		crash.ConsumeCommitted, crash.ConsumeKeyDestroyed,
		crash.RevokeCommitted, crash.RevokeKeyDestroyed,
		crash.ExpireCommitted, crash.ExpireKeyDestroyed,
	}
	rotationPoints = []string{
		crash.RotateKEKWritten, crash.RotateRewrapped, crash.RotateAllRewrapped,
		crash.RotateSwitched, crash.RotateOldKEKDestroyed,
	}
	keyFilePoints = []string{crash.KeyTempSynced, crash.KeyRenamed, crash.KeyOverwritten}
)

// seed returns the seed of a crash schedule and logs how to replay it.
func seed(t *testing.T) uint64 {
	s := uint64(*crashSeed)
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test ./tests -run '^%s$' -crash.seed %d)", s, t.Name(), s)
	return s
}

// op names, for the statistics.
const (
	opGrant   = "grant"
	opBind    = "bind"
	opClaim   = "claim"
	opConsume = "consume"
	opRevoke  = "revoke"
	opRotate  = "rotate"
)

// driver drives one installation's vaultd with lease transitions and
// rotations, keeping the ledger of acknowledged answers.
type driver struct {
	t     *testing.T
	rng   *rand.Rand
	d     *daemon
	cut   *cutter
	g     *ledger
	pairs []seal.Pair // the canary values every grant of the installation carries
	vals  [][]byte
	st    *crashStats
	args  []string // vaultd's flags for a clean restart
	env   []string // vaultd's environment for every start (a fault to arm)
	c     *client.Client
	// opErr is the first answer that was neither a success nor a refusal
	// code: a transport error (the daemon died) or an operational error.
	opErr error
}

// crashStats are the figures C3 and K4 log.
type crashStats struct {
	iterations, randomKills, bootKills, pointKills, pointMisses int
	fired                                                       map[string]int
	acked, refused                                              map[string]int
	unanswered, restarts, leaseChecks, invariants, opens        int
	installations, scannedBytes                                 int64
	violations                                                  []string
}

func newStats() *crashStats {
	return &crashStats{fired: map[string]int{}, acked: map[string]int{}, refused: map[string]int{}}
}

func newDriver(t *testing.T, rng *rand.Rand, st *crashStats, bin string) *driver {
	d := newDaemon(t, bin, false)
	d.Args = []string{"--arena-size", "262144"}
	pairs, vals := pairsFor("c3", 4)
	st.installations++
	return &driver{t: t, rng: rng, d: d, cut: newCutter(t, d), g: newLedger(), pairs: pairs, vals: vals, st: st, args: d.Args}
}

// connect dials the current daemon.
func (dr *driver) connect() {
	if dr.c != nil {
		dr.c.Close()
	}
	c, err := client.DialWith(dr.d.Sock, client.DialOptions{ServerUIDs: []uint32{vaulttest.Nobody}})
	if err != nil {
		dr.t.Fatal(err)
	}
	dr.c, dr.opErr = c, nil
}

func (dr *driver) close() {
	if dr.c != nil {
		dr.c.Close()
		dr.c = nil
	}
}

// current is the freshest record the test knows for a lease.
func (dr *driver) current(id string) (lease.Lease, bool) {
	a, okA := dr.g.acked[id]
	s, okS := dr.g.seen[id]
	switch {
	case okA && okS:
		if s.Seq > a.Seq {
			return s, true
		}
		return a, true
	case okA:
		return a, true
	}
	return s, okS
}

// pick returns a random lease id whose known state satisfies ok.
func (dr *driver) pick(ok func(lease.Lease, bool) bool) string {
	var ids []string
	for id := range dr.g.facts {
		if l, known := dr.current(id); known && ok(l, dr.bound(id, l)) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return ""
	}
	sort.Strings(ids)
	return ids[dr.rng.IntN(len(ids))]
}

func (dr *driver) bound(id string, l lease.Lease) bool {
	_, ok := dr.g.boundAck[id]
	return ok || l.Bound()
}

// answer classifies the answer to one operation: nil is acknowledged, a
// refusal code is an answer too; anything else means the daemon did not
// answer, and the driver stops.
func (dr *driver) answer(op string, err error) bool {
	if err == nil {
		dr.st.acked[op]++
		return true
	}
	if code := vaultapi.CodeOf(err); code != "" {
		dr.st.refused[op+":"+string(code)]++
		if code != receipts.LeaseNotActive {
			dr.fail("%s refused with %s, which this schedule never provokes: %v", op, code, err)
		}
		return false
	}
	if dr.opErr == nil {
		dr.opErr = fmt.Errorf("%s: %w", op, err)
	}
	return false
}

func (dr *driver) fail(format string, args ...any) {
	dr.st.violations = append(dr.st.violations, fmt.Sprintf("installation %d: ", dr.st.installations)+fmt.Sprintf(format, args...))
}

// fatal ends the test with every violation recorded so far and this one.
func (dr *driver) fatal(format string, args ...any) {
	dr.t.Helper()
	for _, v := range dr.st.violations {
		dr.t.Error(v)
	}
	dr.t.Fatalf("installation %d: "+format, append([]any{dr.st.installations}, args...)...)
}

func (dr *driver) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(bg, 10*time.Second)
}

// grant asks for a lease; short leases live one second.
func (dr *driver) grant(short bool) {
	ctx, cancel := dr.ctx()
	defer cancel()
	sealed, err := dr.c.Seal(ctx, dr.pairs)
	if !dr.answerSeal(err) {
		return
	}
	life := time.Hour
	if short {
		life = time.Second
	}
	req := vaultapi.CreateRequest{Run: "run-c3", Attempt: 1, Target: "https://model.example/c3", Purpose: "dependency-triage",
		SourceDigest: "hmac-sha256:" + randHex(32), Lifetime: life, Values: sealed}
	res, err := dr.c.CreateLease(ctx, req)
	if !dr.answer(opGrant, err) {
		if vaultapi.CodeOf(err) == "" {
			dr.g.unanswered++ // it may have committed
			dr.st.unanswered++
		}
		return
	}
	dr.g.ack(res.Lease)
	ex := vaulttest.Export(res.Tokens)
	dr.g.facts[res.Lease.ID] = &facts{tokens: res.Tokens, export: ex, cutEvent: "evt:c3-" + randHex(8),
		candidate: "hmac-sha256:" + randHex(32),
		claim:     vaultapi.ClaimRequest{Run: "run-c3", Attempt: 1, Station: service.DefaultStation, ReturnDigest: "sha256:" + randHex(32)}}
}

func (dr *driver) answerSeal(err error) bool {
	if err == nil {
		return true
	}
	if dr.opErr == nil {
		dr.opErr = fmt.Errorf("seal: %w", err)
	}
	return false
}

func (dr *driver) bind(id string) error {
	f := dr.g.facts[id]
	ctx, cancel := dr.ctx()
	defer cancel()
	err := dr.c.Bind(ctx, id, f.cutEvent, f.candidate, receipts.SHA256(f.export), f.export)
	if dr.answer(opBind, err) {
		dr.g.boundAck[id] = receipts.SHA256(f.export)
	}
	return err
}

func (dr *driver) claim(id string) (vaultapi.ClaimResult, error) {
	ctx, cancel := dr.ctx()
	defer cancel()
	r, err := dr.c.Claim(ctx, id, dr.g.facts[id].claim)
	if dr.answer(opClaim, err) {
		dr.g.ack(r.Lease)
	}
	return r, err
}

func (dr *driver) consume(id string) {
	ctx, cancel := dr.ctx()
	defer cancel()
	l, err := dr.c.Consume(ctx, id, dr.g.facts[id].claim)
	if dr.answer(opConsume, err) {
		dr.g.ack(l)
	}
}

func (dr *driver) revoke(id string) {
	ctx, cancel := dr.ctx()
	defer cancel()
	l, err := dr.c.Revoke(ctx, id)
	if dr.answer(opRevoke, err) {
		dr.g.ack(l)
	}
}

func (dr *driver) rotate() {
	ctx, cancel := dr.ctx()
	defer cancel()
	r, err := dr.c.Rotate(ctx)
	if dr.answer(opRotate, err) {
		dr.g.epochAck = max(dr.g.epochAck, r.To)
	}
}

// weights of the operations in a schedule.
type weights map[string]int

var (
	randomMix = weights{opGrant: 25, opBind: 20, opClaim: 20, opConsume: 20, opRevoke: 10, opRotate: 3}
	// focus biases the mix towards the transition a crash point sits in, so
	// that the point is reached within a few operations.
	focus = map[string]weights{
		"grant":   {opGrant: 80, opBind: 10, opRevoke: 10},
		"bind":    {opGrant: 40, opBind: 60},
		"claim":   {opGrant: 25, opBind: 35, opClaim: 40},
		"consume": {opGrant: 20, opBind: 25, opClaim: 25, opConsume: 30},
		"revoke":  {opGrant: 40, opBind: 20, opRevoke: 40},
		"expire":  {opGrant: 70, opBind: 30},
		"rotate":  {opGrant: 50, opBind: 20, opRotate: 30},
		"keyfile": {opGrant: 40, opBind: 10, opRevoke: 20, opRotate: 30},
	}
)

// maxLive bounds the live leases of an installation.
const maxLive = 10

// live counts the leases the test knows to be live.
func (dr *driver) live() int {
	n := 0
	for id := range dr.g.facts {
		if l, ok := dr.current(id); ok && l.Live() && time.Now().Before(l.Deadline) {
			n++
		}
	}
	return n
}

// step performs one operation drawn from w; false when the daemon stopped
// answering.
func (dr *driver) step(w weights, shortShare int) bool {
	total := 0
	names := []string{opGrant, opBind, opClaim, opConsume, opRevoke, opRotate}
	for _, n := range names {
		total += w[n]
	}
	x := dr.rng.IntN(total)
	var op string
	for _, n := range names {
		if x < w[n] {
			op = n
			break
		}
		x -= w[n]
	}
	if op == opGrant && dr.live() >= maxLive {
		op = opRevoke // keep the installation small: listing and opening stay cheap
	}
	switch op {
	case opGrant:
		dr.grant(dr.rng.IntN(100) < shortShare)
	case opBind:
		if id := dr.pick(func(l lease.Lease, b bool) bool { return l.State == lease.Active && !b }); id != "" {
			dr.bind(id)
		} else {
			dr.grant(false)
		}
	case opClaim:
		if id := dr.pick(func(l lease.Lease, b bool) bool { return l.State == lease.Active && b }); id != "" {
			dr.claim(id)
		}
	case opConsume:
		if id := dr.pick(func(l lease.Lease, _ bool) bool { return l.State == lease.Claimed }); id != "" {
			dr.consume(id)
		}
	case opRevoke:
		if id := dr.pick(func(l lease.Lease, _ bool) bool { return l.Live() }); id != "" {
			dr.revoke(id)
		}
	case opRotate:
		dr.rotate()
	}
	return dr.opErr == nil
}

// recover restarts the daemon without a crash point and checks every
// invariant; it then opens every live lease's map.
func (dr *driver) recover() {
	dr.d.Env = dr.env
	dr.d.Args = dr.args
	dr.d.CgroupProcs = ""
	boot := time.Now()
	if err := dr.d.TryStart(); err != nil {
		dr.fatal("restart after a kill failed: %v", err)
	}
	dr.st.restarts++
	dr.connect()
	leases, err := dr.cut.list()
	if err != nil {
		dr.fail("cut lease list after restart: %v", err)
		return
	}
	r := checkRecovered(dr.g, leases, dr.d.Keys, boot)
	dr.st.leaseChecks += len(leases)
	dr.st.invariants += r.checks
	for _, v := range r.violations {
		dr.fail("%s", v)
	}
	dr.openLive(leases)
}

// openLive shows that every live lease's map still decrypts under the keys
// that survived: a bound ACTIVE lease is bound again with the same values
// (Bind decrypts the map and checks every issued token against the
// export), an unbound one is bound, a CLAIMED one is claimed again with
// its tuple (Claim decrypts the map first). Leases the test holds no facts
// for (an unanswered grant that committed) are revoked with `cut lease
// revoke`.
func (dr *driver) openLive(leases []vaultapi.Info) {
	for _, in := range leases {
		l := in.Lease
		if !l.Live() {
			continue
		}
		f := dr.g.facts[l.ID]
		if f == nil {
			r := dr.cut.run("lease", "revoke", l.ID, "--json")
			if r.code != 0 {
				dr.fail("cut lease revoke of a lease from an unanswered grant: %v", r)
			}
			continue
		}
		var err error
		switch l.State {
		case lease.Active:
			err = dr.bind(l.ID)
		case lease.Claimed:
			var res vaultapi.ClaimResult
			res, err = dr.claim(l.ID)
			if err == nil && !res.Repeated {
				dr.fail("lease %s: repeating its claim did not report a repeat", l.ID)
			}
		}
		dr.st.opens++
		switch {
		case err == nil:
		case isCode(err, receipts.LeaseNotActive) && !time.Now().Before(l.Deadline):
			// It reached its deadline meanwhile: expired, not lost.
		default:
			dr.fail("live lease %s (%v) does not open after recovery: %v", l.ID, l.State, err)
		}
		if dr.opErr != nil {
			dr.fail("vaultd stopped answering while leases were opened: %v", dr.opErr)
			return
		}
	}
}

// stop stops the daemon gracefully (SIGTERM) and fails the test unless it
// exits cleanly.
func (dr *driver) stop() {
	if es := statusOf(dr.d.Stop(syscall.SIGTERM)); es.Code != 0 || es.Signal != 0 {
		dr.fail("vaultd stopped with %v\n%s", es, dr.d.Log())
	}
	dr.close()
}

// kill SIGKILLs the daemon and records that requests may be unanswered.
func (dr *driver) kill() {
	dr.d.Kill()
	dr.close()
}

// scanInstallation scans everything the installation wrote for its canary
// values (the values of every grant): state directory raw, key directory,
// logs, cut's outputs.
func (dr *driver) scanInstallation() {
	rep, err := newScanner(dr.vals).scanTrees([]string{dr.d.Base}, nil)
	if err != nil {
		dr.fail("scan: %v", err)
		return
	}
	dr.st.scannedBytes += rep.bytes
	if len(rep.hits) > 0 {
		dr.fail("canary values in written bytes:\n\t%s", hitsSummary(rep.hits))
	}
}

// TestC3CrashLoop kills vaultd with SIGKILL again and again — at random
// moments while a seeded schedule of grants, binds, claims, consumes,
// revocations, rotations and one-second leases runs, during boot recovery
// itself, and at every named crash point of the crashpoints build — and
// after each restart checks every invariant of checkRecovered, then opens
// every live lease's map. Iterations: -crash.iterations (default 300);
// seed: -crash.seed.
func TestC3CrashLoop(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(seed(t), 0xc3))
	st := newStats()
	points := append(append(append([]string{}, transitionPoints...), rotationPoints...), keyFilePoints...)
	rng.Shuffle(len(points), func(i, j int) { points[i], points[j] = points[j], points[i] })
	const perInstallation = 50
	start := time.Now()
	var dr *driver
	nextPoint := 0
	for i := 0; i < *crashIterations; i++ {
		if i%perInstallation == 0 {
			if dr != nil {
				dr.kill()
				dr.scanInstallation()
			}
			dr = newDriver(t, rng, st, bins.crash)
			dr.d.Start()
			dr.connect()
		}
		st.iterations++
		switch x := rng.IntN(100); {
		case x < 40: // a named crash point
			p := points[nextPoint%len(points)]
			nextPoint++
			dr.crashAt(p)
		case x < 50: // during boot recovery
			dr.kill()
			dr.d.Env = dr.env
			delay := time.Duration(rng.IntN(200)) * time.Millisecond
			if killDuringStart(dr.d, delay) {
				st.bootKills++
			}
		default: // at a random moment of a random schedule
			if !dr.d.Alive() {
				dr.recover()
			}
			dr.randomKill(time.Duration(rng.IntN(60)) * time.Millisecond)
		}
		dr.recover()
		if len(st.violations) > 20 {
			break
		}
	}
	dr.kill()
	dr.scanInstallation()
	for _, v := range st.violations {
		t.Error(v)
	}
	for _, p := range points {
		if st.fired[p] == 0 {
			t.Errorf("crash point %s was never reached in %d iterations", p, st.iterations)
		}
	}
	if st.iterations < *crashIterations && len(st.violations) <= 20 {
		t.Errorf("%d iterations, want %d", st.iterations, *crashIterations)
	}
	t.Logf("figures: %d iterations in %v: %d kills at a random moment, %d during boot recovery, %d at named crash points (%d armed points not reached), %d restarts; %d installations",
		st.iterations, time.Since(start).Round(time.Second), st.randomKills, st.bootKills, st.pointKills, st.pointMisses, st.restarts, st.installations)
	t.Logf("figures: points fired %v", sortedCounts(st.fired))
	t.Logf("figures: acknowledged %v; refused %v; %d requests unanswered", sortedCounts(st.acked), sortedCounts(st.refused), st.unanswered)
	t.Logf("figures: %d lease records checked, %d invariants evaluated, %d live maps opened after recovery, %d bytes scanned for canaries; %d violations",
		st.leaseChecks, st.invariants, st.opens, st.scannedBytes, len(st.violations))
}

// randomKill runs the random schedule and SIGKILLs vaultd after delay.
// The schedule provokes no error: if it stops before the kill, vaultd died
// or answered with an uncoded error on its own, and that is a violation.
func (dr *driver) randomKill(delay time.Duration) {
	done := make(chan struct{})
	stop := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if !dr.step(randomMix, 25) {
				return
			}
		}
	}()
	select {
	case <-time.After(delay):
	case <-done:
		dr.fail("vaultd stopped answering before it was killed: %v\n%s", dr.opErr, dr.d.Log())
	}
	dr.d.Signal(syscall.SIGKILL)
	close(stop)
	<-done
	dr.kill()
	dr.st.randomKills++
}

// family is the transition a crash point belongs to.
func family(point string) string {
	f, _, _ := strings.Cut(point, ".")
	return f
}

// crashAt arms point at a random pass and drives the focused schedule
// until vaultd kills itself there. A point may also fire inside boot
// recovery (a key file destroyed or written at start-up), before the daemon
// serves. A point not reached within the budget counts as a miss and the
// daemon is killed.
func (dr *driver) crashAt(point string) {
	dr.kill()
	n := 1 + dr.rng.IntN(2)
	switch family(point) {
	case "keyfile":
		n = 1 + dr.rng.IntN(8)
	case "rotate":
		if point == crash.RotateRewrapped {
			n = 1 + dr.rng.IntN(3)
		}
	}
	dr.d.Env = append([]string{"VAULTD_CRASHPOINT=" + point + ":" + strconv.Itoa(n)}, dr.env...)
	dr.d.Args = dr.args
	if family(point) == "expire" {
		// Every lease of this run expires within 300 ms; the sweeper (or the
		// next operation on the lease) expires it and crosses the point.
		dr.d.Args = append(append([]string{}, dr.args...), "--max-lease", "300ms")
	}
	ready, err := dr.d.Launch()
	if err != nil {
		dr.t.Fatal(err)
	}
	select {
	case <-ready:
		dr.connect()
		w := focus[family(point)]
		for k := 0; k < 80 && dr.opErr == nil && dr.d.Alive(); k++ {
			dr.step(w, 0)
		}
		// An operation that failed means the point fired and the exit
		// follows; a budget spent without a failure leaves only the
		// sweeper to cross an expire point.
		wait := 500 * time.Millisecond
		if dr.opErr != nil {
			wait = 10 * time.Second
		} else if family(point) == "expire" {
			wait = 4 * time.Second
		}
		if !dr.d.ExitedWithin(wait) {
			if dr.opErr != nil {
				dr.fail("vaultd armed at %s:%d failed an operation without crashing: %v", point, n, dr.opErr)
			}
			dr.st.pointMisses++
			dr.kill()
			return
		}
	case <-dr.d.Exited():
	case <-time.After(30 * time.Second):
		dr.fail("vaultd armed at %s:%d neither served nor exited within 30s", point, n)
		dr.kill()
		return
	}
	dr.close()
	es := statusOf(dr.d.WaitErr())
	if es.Signal != syscall.SIGKILL {
		dr.fail("vaultd armed at %s:%d ended with %v, not by its own SIGKILL\n%s", point, n, es, dr.d.Log())
		return
	}
	dr.st.pointKills++
	dr.st.fired[point]++
}

// killDuringStart starts vaultd and SIGKILLs it after delay, whether or not
// it serves by then: a crash inside boot recovery. It reports whether the
// kill came before the daemon served.
func killDuringStart(d *daemon, delay time.Duration) bool {
	d.T.Helper()
	ready, err := d.Launch()
	if err != nil {
		d.T.Fatal(err)
	}
	early := true
	select {
	case <-ready:
		early = false
	case <-time.After(delay):
	case <-d.Exited():
	}
	d.Kill()
	return early
}

func sortedCounts(m map[string]int) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	var b strings.Builder
	for i, k := range ks {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%d", k, m[k])
	}
	return b.String()
}

// TestK4RotationCrashPoints kills vaultd at each named point of a key
// rotation, -crash.rotations times each (default 20), and at the key-file
// points inside a rotation, with live, bound and claimed leases under the
// old epoch. After each restart: checkRecovered holds (exactly one epoch
// key, no wrap under another epoch, no temporary file, every live data key
// unwraps), the epoch is the old one for a crash before the pointer
// switched and the new one after, and every live lease's map decrypts
// (openLive). Every fifth recovery is followed by a complete rotation
// through `cut vault rotate`.
func TestK4RotationCrashPoints(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(seed(t), 0x4b4))
	st := newStats()
	// expect returns the epoch offset after recovery (0: the old epoch, 1:
	// the new one) for the n-th pass of a point in a rotation of w wraps.
	type arm struct {
		point  string
		reps   int
		passes func(w int) int // passes of the point in one rotation
		expect func(n, w int) uint64
	}
	one := func(int) int { return 1 }
	arms := []arm{
		{crash.RotateKEKWritten, *crashRotations, one, func(int, int) uint64 { return 0 }},
		{crash.RotateRewrapped, *crashRotations, func(w int) int { return w }, func(int, int) uint64 { return 0 }},
		{crash.RotateAllRewrapped, *crashRotations, one, func(int, int) uint64 { return 0 }},
		{crash.RotateSwitched, *crashRotations, one, func(int, int) uint64 { return 1 }},
		{crash.RotateOldKEKDestroyed, *crashRotations, one, func(int, int) uint64 { return 1 }},
		// Key-file writes of a rotation: the new epoch key, w re-wraps, the
		// pointer; the pointer's rename switches the epoch.
		{crash.KeyTempSynced, 5, func(w int) int { return w + 2 }, func(int, int) uint64 { return 0 }},
		{crash.KeyRenamed, 5, func(w int) int { return w + 2 }, func(n, w int) uint64 {
			if n == w+2 {
				return 1
			}
			return 0
		}},
		// Destructions: the old epoch key, then the w old wraps, all after the switch.
		{crash.KeyOverwritten, 5, func(w int) int { return w + 1 }, func(int, int) uint64 { return 1 }},
	}
	start := time.Now()
	epochs := map[string]int{}
	for _, a := range arms {
		dr := newDriver(t, rng, st, bins.crash)
		dr.d.Start()
		dr.connect()
		for rep := 0; rep < a.reps; rep++ {
			st.iterations++
			dr.prepareRotation(rng)
			w := 0
			for id := range dr.g.facts {
				if l, ok := dr.current(id); ok && l.Live() {
					w++
				}
			}
			before, err := readEpoch(dr.d.Keys)
			if err != nil {
				t.Fatal(err)
			}
			n := 1 + rng.IntN(a.passes(w))
			// A graceful stop, not a kill: a killed daemon leaves its pool
			// of free wrap files, and the next boot destroys them, passing
			// the armed key-file point before the rotation does.
			dr.stop()
			dr.d.Env = []string{"VAULTD_CRASHPOINT=" + a.point + ":" + strconv.Itoa(n)}
			dr.d.Start()
			dr.connect()
			ctx, cancel := dr.ctx()
			_, rerr := dr.c.Rotate(ctx)
			cancel()
			if rerr == nil || vaultapi.CodeOf(rerr) != "" {
				dr.fail("rotation with %s:%d armed (%d wraps) answered %v instead of crashing", a.point, n, w, rerr)
				st.pointMisses++
				dr.kill()
			} else {
				if !dr.d.ExitedWithin(10 * time.Second) {
					dr.fail("vaultd did not die at %s:%d", a.point, n)
				}
				dr.kill()
				if es := statusOf(dr.d.WaitErr()); es.Signal != syscall.SIGKILL {
					dr.fail("vaultd armed at %s:%d ended with %v", a.point, n, es)
				}
				st.pointKills++
				st.fired[a.point]++
			}
			dr.recover()
			after, err := readEpoch(dr.d.Keys)
			want := before + a.expect(n, w)
			if err != nil || after != want {
				dr.fail("after a crash at %s:%d (%d wraps) the epoch is %d (%v), want %d", a.point, n, w, after, err, want)
			}
			epochs[fmt.Sprintf("%s→%+d", a.point, after-before)]++
			if rep%5 == 4 {
				r := dr.cut.run("vault", "rotate", "--json")
				if r.code != 0 {
					dr.fail("a rotation after recovery failed: %v", r)
				} else {
					st.acked[opRotate]++
				}
			}
			if len(st.violations) > 20 {
				break
			}
		}
		dr.kill()
		dr.scanInstallation()
	}
	for _, v := range st.violations {
		t.Error(v)
	}
	t.Logf("figures: %d rotations killed in %v (%d at named points, %d not reached), %d restarts, %d installations",
		st.iterations, time.Since(start).Round(time.Second), st.pointKills, st.pointMisses, st.restarts, st.installations)
	t.Logf("figures: kills per point %v", sortedCounts(st.fired))
	t.Logf("figures: epoch after recovery per point (→+0 old, →+1 new) %v", sortedCounts(epochs))
	t.Logf("figures: %d lease records checked, %d invariants evaluated, %d live maps opened after recovery, %d bytes scanned for canaries; %d violations",
		st.leaseChecks, st.invariants, st.opens, st.scannedBytes, len(st.violations))
}

// prepareRotation gives the installation three to five live leases, bound
// and some claimed, and sometimes ends one (revoked or consumed), so that a
// rotation has data keys to re-wrap and terminal leases beside them.
func (dr *driver) prepareRotation(rng *rand.Rand) {
	if id := dr.pick(func(l lease.Lease, _ bool) bool { return l.Live() }); id != "" && rng.IntN(3) == 0 {
		if l, _ := dr.current(id); l.State == lease.Claimed {
			dr.consume(id)
		} else {
			dr.revoke(id)
		}
	}
	for dr.live() < 3+rng.IntN(3) && dr.opErr == nil {
		dr.grant(false)
	}
	for id := range dr.g.facts {
		l, _ := dr.current(id)
		if l.State == lease.Active && !dr.bound(id, l) {
			dr.bind(id)
		}
	}
	if id := dr.pick(func(l lease.Lease, b bool) bool { return l.State == lease.Active && b }); id != "" && rng.IntN(2) == 0 {
		dr.claim(id)
	}
	if dr.opErr != nil {
		dr.fatal("preparing a rotation: %v", dr.opErr)
	}
}

// readEpoch reads the key directory's current epoch.
func readEpoch(keyDir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(keyDir, "current"))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}
