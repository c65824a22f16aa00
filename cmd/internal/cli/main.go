package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/vault/harden"
)

// Main is the process entry point of cut: args includes the program name.
// Before anything else the process is made undumpable (PR_SET_DUMPABLE 0,
// RLIMIT_CORE 0): it holds projections with owner values in memory. Re-executed
// with the hidden first argument __verifier-plugin, cut is the verifier plugin.
func Main(ctx context.Context, args []string) int {
	if len(args) > 1 && args[1] == pluginArg {
		pipeline.ServePluginIfRequested()
		return ExitError // not reached: the plugin exits when it is done
	}
	if err := harden.Apply(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: error: %v\n", progName(args), err)
		return ExitError
	}
	// An interrupt, a termination or a quit cancels the command, which then
	// stops its verifier plugin, revokes a vault lease it was granted for a
	// cut that did not complete, and unmaps its buffers before it exits
	// (ExitError, "interrupted").
	// A second SIGINT or SIGTERM ends the process at once. SIGQUIT never
	// gets the runtime's default action, a dump of every goroutine's stack
	// and arguments (owner values, an embedded vault's keys): after the
	// first signal it is ignored, before the others are given back their
	// default action.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGQUIT)
	defer stop()
	go func() {
		<-ctx.Done()
		signal.Ignore(syscall.SIGQUIT)
		stop()
	}()
	env := OSEnv()
	env.Stdin = privateStdin()
	env.Prog = progName(args)
	return Run(ctx, args[1:], env)
}

// progName is the name the program was run as: the base of argv[0], "cut"
// when there is none.
func progName(args []string) string {
	if len(args) == 0 {
		return "cut"
	}
	if p := filepath.Base(args[0]); p != "." && p != "/" && p != "" {
		return p
	}
	return "cut"
}
