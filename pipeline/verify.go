package pipeline

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/verifier"
	"github.com/privacycut/privacycut/verifier/plugin"
)

// A Verifier runs the independent verifier for the pipeline: in this
// process ([InProcess]) or in its own ([Plugin], [SelfPlugin]). Its
// verdicts are the only ones the seal authority accepts.
type Verifier interface {
	// begin readies one verification; a plugin process is started now, so
	// that its start overlaps the cut. budget bounds its answer.
	begin(ctx context.Context, budget func(int) time.Duration) (session, error)
}

// session is one verification begun.
type session interface {
	verify(ctx context.Context, req verifier.Request) (verifier.Verdict, error)
	// close ends the session; it may block until a plugin has stopped.
	close()
}

// InProcess returns the verifier run inside this process. Its code shares
// nothing with the censor's, but its verdict is not independent of this
// process: a program that embeds the pipeline for tests or benchmarks may
// use it; the default of `cut` is the plugin.
func InProcess() Verifier { return inProcess{} }

type inProcess struct{}

func (inProcess) begin(context.Context, func(int) time.Duration) (session, error) {
	return inProcess{}, nil
}

func (inProcess) verify(ctx context.Context, req verifier.Request) (verifier.Verdict, error) {
	if err := ctx.Err(); err != nil {
		return verifier.Verdict{}, err
	}
	return verifier.Check(req), nil
}

func (inProcess) close() {}

// PluginArg is the hidden first argument with which a program is
// re-executed as the verifier plugin (see [ServePluginIfRequested]).
const PluginArg = plugin.Arg

// ServePluginIfRequested makes this program the verifier plugin when it was
// started as one by [SelfPlugin] (its first argument is [PluginArg]): it
// hardens the process (undumpable, no core), serves one verifier over
// go-plugin's gRPC, and exits. Otherwise it returns at once. A program that
// uses SelfPlugin calls it first thing in main.
func ServePluginIfRequested() {
	plugin.ServeIfPlugin(plugin.Options{Harden: harden.Apply, DialIssuer: dialIssuer})
}

// Plugin returns the verifier run out of process: exe, started with args,
// must serve the verifier plugin (a program calling
// [ServePluginIfRequested], with args [PluginArg]). The binary is pinned by
// checksum, spoken to over mutual TLS, given no broker and none of this
// process's environment; each verification starts a new plugin process,
// which gets its inputs in a sealed memfd. The plugin's log (its stderr,
// which never holds input) is written to log at warning level and above
// (nil: discarded).
func Plugin(exe string, args []string, log io.Writer) Verifier {
	if log == nil {
		log = io.Discard
	}
	return &pluginVerifier{exe: exe, args: args, log: log}
}

// SelfPlugin is [Plugin] for this program re-executed: /proc/self/exe,
// the image this process runs (neither argv[0], which whoever runs the
// program chooses, nor a path, which an upgrade may replace between the
// hash and the exec), with [PluginArg].
func SelfPlugin(log io.Writer) Verifier {
	return Plugin("/proc/self/exe", []string{PluginArg}, log)
}

type pluginVerifier struct {
	exe  string
	args []string
	log  io.Writer
}

// pluginSession is a launched plugin. Its close tells the logger first:
// go-plugin reports a plugin stopped by force (a start cut short by a
// refusal, say) as a failure, which here is only the cut ending.
type pluginSession struct {
	p        *plugin.Pending
	stopping *atomic.Bool
	budget   func(int) time.Duration
}

func (v *pluginVerifier) begin(ctx context.Context, budget func(int) time.Duration) (session, error) {
	stopping := new(atomic.Bool)
	logger := hclog.New(&hclog.LoggerOptions{Name: "verifier", Output: v.log, Level: hclog.Warn,
		Exclude: func(hclog.Level, string, ...any) bool { return stopping.Load() }})
	p, err := plugin.Launch(ctx, v.exe, v.args, nil, logger)
	if err != nil {
		return nil, fmt.Errorf("verifier plugin: %w", err)
	}
	return &pluginSession{p: p, stopping: stopping, budget: budget}, nil
}

// DefaultVerifyBudget is how long a plugin may take to answer a request of
// n input bytes: 2 minutes and 2 seconds per MiB, some hundred times what a
// verification takes on a 2-CPU machine. A plugin that never answers
// (stopped, wedged) then fails the cut instead of hanging it.
func DefaultVerifyBudget(n int) time.Duration {
	return 2*time.Minute + time.Duration(n>>20)*2*time.Second
}

func (s *pluginSession) verify(ctx context.Context, req verifier.Request) (verifier.Verdict, error) {
	n := len(req.Source) + len(req.Export) + len(req.Plan) + len(req.Vocabulary) + len(req.Receipts)
	ctx, cancel := context.WithTimeout(ctx, s.budget(n))
	defer cancel()
	v, err := s.p.Check(ctx, req)
	if err != nil {
		return verifier.Verdict{}, fmt.Errorf("verifier plugin: %w", err)
	}
	return v, nil
}

func (s *pluginSession) close() {
	s.stopping.Store(true)
	s.p.Close()
}
