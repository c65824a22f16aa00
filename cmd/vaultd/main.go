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
	"time"

	"github.com/privacycut/privacycut/cmd/internal/buildinfo"
	"github.com/privacycut/privacycut/cmd/internal/flaghelp"
	"github.com/privacycut/privacycut/cmd/internal/vaultdflags"
	"github.com/privacycut/privacycut/cmd/vaultd/internal/tbexec"
	"github.com/privacycut/privacycut/vault/crash"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/server"
	"github.com/privacycut/privacycut/vault/service"
	"google.golang.org/grpc/grpclog"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, tbexec.Err))
}

const usage = "usage: vaultd " + vaultdflags.Synopsis

func run(args []string, stdout, stderr io.Writer, execErr error) int {
	fs := flag.NewFlagSet("vaultd", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := vaultdflags.Define(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) { // -h
			printHelp(stdout, fs)
			return 0
		}
		fmt.Fprintf(stderr, "vaultd: %v\n%s\n(vaultd --help for its flags)\n", err, usage)
		return 2
	}
	switch {
	case cfg.Help:
		printHelp(stdout, fs)
		return 0
	case cfg.Version:
		fmt.Fprintln(stdout, buildinfo.Version("vaultd"))
		return 0
	}
	stateDir, keyDir, socket, station := &cfg.StateDir, &cfg.KeyDir, &cfg.Socket, &cfg.Station
	maxLease, arenaSize, allow := &cfg.MaxLease, &cfg.ArenaSize, cfg.Allow
	maxLeases, maxProofs, minFree, stopTimeout := &cfg.MaxLeases, &cfg.MaxProofs, &cfg.MinFree, &cfg.StopTimeout
	if *stateDir == "" || *keyDir == "" || *socket == "" || fs.NArg() != 0 {
		fmt.Fprintf(stderr, "%s\n(vaultd --help for its flags)\n", usage)
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

// printHelp prints vaultd's usage line, description and flags.
func printHelp(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, "%s\n       vaultd --version\n\n%s.\n\nflags:\n", usage, vaultdflags.Summary)
	for _, f := range flaghelp.List(fs) {
		fmt.Fprintf(w, "  %s\n%s\n", f.Spec(), flaghelp.Indent(flaghelp.Wrap(f.Help(), 72), "        "))
	}
	fmt.Fprintln(w, "\nSee vaultd(8) and docs/OPERATIONS.md.")
}
