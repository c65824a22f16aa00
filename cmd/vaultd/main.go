// Command vaultd is privacycut's local vault: it holds the pseudonym maps of
// reversible cuts in memory-locked memory under per-lease keys, and serves
// them over a unix socket. See docs/OPERATIONS.md.
//
//	vaultd --state-dir D --key-dir K --socket S [--station NAME]
//	       [--max-lease DUR] [--arena-size BYTES] [--allow-uid UID]...
//	       [--max-leases-per-uid N] [--max-erasure-proofs-per-uid N]
//	       [--min-free BYTES] [--stop-timeout DUR]
//
// Start-up order: re-execute under GOTRACEBACK=none when the environment
// leaves it unset (release builds), create the arena, open the store and
// the key directory, run boot recovery, harden the process (RLIMIT_CORE 0,
// PR_SET_DUMPABLE 0) last, prove the profile from kernel state, then
// serve. SIGTERM, SIGINT and SIGQUIT stop it gracefully and wipe the
// arena, within --stop-timeout; a second signal, or the bound running out,
// exits 1 at once with a log line naming what had not closed. SIGQUIT
// never makes the runtime dump every goroutine's stack. A storage failure
// (the state directory removed, an I/O error) stops vaultd with exit 1.
// Below --min-free of free space on the state or key directory's file
// system, grants are refused LIMIT_EXCEEDED. Logs are JSON lines on stderr
// and never carry values.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/privacycut/privacycut/cmd/vaultd/internal/tbexec"
	"github.com/privacycut/privacycut/vault/crash"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/server"
	"github.com/privacycut/privacycut/vault/service"
	"google.golang.org/grpc/grpclog"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr, tbexec.Err))
}

// uidList is the repeatable --allow-uid flag.
type uidList []uint32

func (u *uidList) String() string {
	s := make([]string, len(*u))
	for i, v := range *u {
		s[i] = strconv.FormatUint(uint64(v), 10)
	}
	return strings.Join(s, ",")
}

func (u *uidList) Set(v string) error {
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return errors.New("not a uid")
	}
	*u = append(*u, uint32(n))
	return nil
}

const usage = "usage: vaultd --state-dir D --key-dir K --socket S [--station NAME] [--max-lease DUR] [--arena-size BYTES] [--allow-uid UID]... [--max-leases-per-uid N] [--max-erasure-proofs-per-uid N] [--min-free BYTES] [--stop-timeout DUR]"

func run(args []string, stderr io.Writer, execErr error) int {
	fs := flag.NewFlagSet("vaultd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	stateDir := fs.String("state-dir", "", "Badger `directory` for leases and map ciphertext")
	keyDir := fs.String("key-dir", "", "key `directory` (epoch keys, wrapped data keys); never back it up")
	socket := fs.String("socket", "", "unix socket `path`; its directory is made 0700")
	station := fs.String("station", service.DefaultStation, "this vault's station `name`")
	maxLease := fs.Duration("max-lease", service.DefaultMaxLease, "maximum lease `lifetime`")
	arenaSize := fs.Int("arena-size", service.DefaultArenaSize, "secret arena size in `bytes` (within RLIMIT_MEMLOCK)")
	var allow uidList
	fs.Var(&allow, "allow-uid", "`uid` allowed to connect (repeatable; default: vaultd's own uid)")
	maxLeases := fs.Int("max-leases-per-uid", service.DefaultMaxLeasesPerPrincipal,
		"live (ACTIVE or CLAIMED) leases one peer uid may hold; one more grant is LIMIT_EXCEEDED")
	maxProofs := fs.Int("max-erasure-proofs-per-uid", service.DefaultMaxScratchPerPrincipal,
		"erasure proofs (each a backup in memory and a scratch store) one peer uid may run at once; one more is LIMIT_EXCEEDED")
	minFree := fs.Int64("min-free", service.DefaultMinFree, "free-space floor in `bytes` of the state and key directories' file systems: below it new grants, rotations and restores are refused (LIMIT_EXCEEDED) and a stop leaves Badger's log to replay instead of flushing it; 0 disables")
	stopTimeout := fs.Duration("stop-timeout", DefaultStopTimeout, "bound on a stop after SIGTERM or SIGINT (`duration`); past it, or at a second signal, vaultd exits 1 naming what had not closed")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *stateDir == "" || *keyDir == "" || *socket == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	// A zero or negative value is refused, not taken as "the default": an
	// operator asking for the shortest lease must not get the longest.
	if *maxLease <= 0 {
		fmt.Fprintln(stderr, "vaultd: --max-lease must be positive")
		return 2
	}
	if *arenaSize <= 0 {
		fmt.Fprintln(stderr, "vaultd: --arena-size must be positive")
		return 2
	}
	if *maxLeases <= 0 {
		fmt.Fprintln(stderr, "vaultd: --max-leases-per-uid must be positive")
		return 2
	}
	if *maxProofs <= 0 {
		fmt.Fprintln(stderr, "vaultd: --max-erasure-proofs-per-uid must be positive")
		return 2
	}
	if *minFree < 0 {
		fmt.Fprintln(stderr, "vaultd: --min-free must be 0 (disabled) or positive")
		return 2
	}
	if *stopTimeout <= 0 {
		fmt.Fprintln(stderr, "vaultd: --stop-timeout must be positive")
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, nil)).With("pid", os.Getpid())
	grpclog.SetLoggerV2(grpcLogger{log})
	if execErr != nil {
		log.Warn("vaultd: cannot re-execute under GOTRACEBACK=none; running at single", "error", execErr.Error())
	}
	// Signals are caught before the vault opens; one received during
	// start-up stops vaultd as soon as it serves, within the bound.
	stop := newStopper(log, *stopTimeout)

	opt := service.Options{
		StateDir: *stateDir, KeyDir: *keyDir, Station: *station, MaxLease: *maxLease,
		ArenaSize: *arenaSize, Logger: log, ForceArenaFallback: crash.ForceArenaFallback(),
		MaxLeasesPerPrincipal: *maxLeases, MaxScratchPerPrincipal: *maxProofs,
		MinFree: *minFree,
	}
	if off := crash.ClockOffset(); off != 0 {
		opt.Now = func() time.Time { return time.Now().Add(off) }
	}
	stop.setPhase(func() string { return "vault (opening)" })
	v, err := service.Open(opt)
	if err != nil {
		log.Error("vaultd: cannot open the vault", "error", err.Error())
		return 1
	}
	// Hardening comes last, after every privilege-relevant step, because a
	// later change of uid or gid would reset PR_SET_DUMPABLE.
	if err := harden.Apply(); err != nil {
		log.Error("vaultd: hardening failed; the profile will not be proven", "error", err.Error())
	}
	p := v.Prove()
	log.Info("vaultd: profile", "profile", p.Profile, "reasons", p.Reasons, "arena_kind", p.Arena.Kind,
		"arena_bytes", p.Arena.Bytes, "dumpable", p.Dumpable, "core_limit", p.CoreLimit)

	l, err := server.Listen(*socket)
	if err != nil {
		log.Error("vaultd: cannot listen", "error", err.Error())
		v.Close()
		return 1
	}
	srv := server.New(v, server.Options{AllowUIDs: allow, Logger: log})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	log.Info("vaultd: serving", "socket", *socket, "station", *station, "allow_uids", allow.String(),
		"min_free_bytes", *minFree, "stop_timeout", stopTimeout.String())

	code := 0
	select {
	case <-stop.requested:
	case err := <-v.Fatal():
		log.Error("vaultd: the vault's storage failed", "error", err.Error())
		stop.Begin("storage failure")
		code = 1
	case err := <-done:
		log.Error("vaultd: server stopped", "error", err.Error())
		stop.Begin("server stopped")
		code = 1
	}
	stop.setPhase(func() string { return "grpc server, vault" })
	graceful := make(chan struct{})
	go func() { srv.GracefulStop(); close(graceful) }()
	select {
	case <-graceful:
	case <-time.After(min(10*time.Second, *stopTimeout/2)):
		srv.Stop()
	}
	stop.setPhase(func() string { return "vault: " + v.Closing() })
	if err := v.Close(); err != nil {
		log.Error("vaultd: close", "error", err.Error())
		code = 1
	}
	log.Info("vaultd: stopped", "exit", code)
	return code
}
