// Package plugin runs privacycut's verifier in a process of its own,
// through hashicorp/go-plugin over gRPC, and is that process's main.
//
// A host launches the plugin for one request ([Launch], [LaunchSelf],
// [Run]) or keeps one running for many ([Start]); a program that is its own
// plugin calls [ServeIfPlugin] first thing in main. The verification is
// package verifier's Verify, run in the plugin process; the host checks
// the answer before returning it.
//
// A request's Issuer (reversible cuts) does not cross to the plugin: the
// plugin dials its own at the request's VaultSocket with
// Options.DialIssuer. A verifier.Granted does cross, as its tokens (no
// value), when the request names no vault socket.
//
// # Security properties
//
// Guaranteed:
//
//   - The plugin is started pinned (SHA-256 of the executable, checked by
//     go-plugin when it starts it), over gRPC only with AutoMTLS, without the
//     host's environment, and with no broker: it cannot call back into the
//     host. It hardens itself first (Options.Harden) and exits if that
//     fails. It clears the received inputs and wipes its copy of the
//     evidence key after each call.
//   - The host takes no answer on trust: it must list every claim in order
//     with a verdict that follows from them, name this verifier's
//     revision, the request's export, plan and wire digests (recomputed by
//     the host), and fit in 1 MiB; otherwise the call fails with ErrReply.
//   - Errors of the protocol are fixed sentinels, mapped to and from gRPC
//     codes by one table each way; no error or log line holds input bytes.
//     The plugin's stderr is copied into the host's log, so the plugin never
//     prints input.
//   - No plugin outlives its host's use of it: Close kills it, a start cut
//     short kills it through its command's context, and on Linux the kernel
//     kills it (parent-death signal) if the host itself is killed. Its
//     socket directory (0700) is removed once it has stopped.
//   - Inputs are bounded by MaxInputBytes each; limits refuse, never
//     truncate.
//   - On Linux a launched plugin (Launch) gets its inputs in a memfd sealed
//     against any change, passed over a socket pair only once the plugin has
//     started, that is, has hardened itself: nothing it holds before that
//     gives access to the inputs (a socket cannot be reopened through
//     /proc/<pid>/fd).
//
// Not guaranteed:
//
//   - Copies of the evidence key and inputs made by protobuf and gRPC
//     buffers on either side are not wiped; they stay in ordinary process
//     memory until collected.
//   - Between the host's hashing of the executable and go-plugin's check,
//     the file is trusted to be the same one that runs.
//   - From exec until it has hardened itself, the plugin is an ordinary
//     process of the host's uid, which another process of that uid may
//     attach to without a ptrace restriction (Yama ptrace_scope ≥ 1).
//
// The caller's duties: route the logger only to local logs; give the
// plugin no standard input that holds inputs (go-plugin passes descriptor
// 0 on: cut puts /dev/null there); treat an error as a failed
// verification.
package plugin

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
	"github.com/privacycut/privacycut/verifier/plugin/internal/verifierpb"
)

// Arg is the hidden first argument with which a program re-executes itself
// as the verifier plugin (LaunchSelf, ServeIfPlugin).
const Arg = "__verifier-plugin"

// pluginName is the name the verifier is dispensed under.
const pluginName = "verifier"

// handshake is shared by the host and the plugin. The cookie only keeps
// the plugin binary from being run by hand by mistake; it is not security:
// the host pins the binary by checksum and speaks mutual TLS.
var handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  3,
	MagicCookieKey:   "PRIVACYCUT_VERIFIER_PLUGIN",
	MagicCookieValue: "closed-diagnostic@1/verifier/1",
}

var (
	_ verifier.Checker          = (*grpcClient)(nil)
	_ goplugin.GRPCPlugin       = (*grpcPlugin)(nil)
	_ verifierpb.VerifierServer = (*grpcServer)(nil)
)

// grpcPlugin is the go-plugin glue: gRPC only, no net/rpc, no broker.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
	impl verifier.Checker
	dial DialIssuer
}

func (p *grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	verifierpb.RegisterVerifierServer(s, &grpcServer{impl: p.impl, dial: p.dial})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *goplugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &grpcClient{c: verifierpb.NewVerifierClient(cc)}, nil
}

// pluginMap is the plugin set of the verifier, serving impl with the
// issuers dial makes.
func pluginMap(impl verifier.Checker, dial DialIssuer) map[string]goplugin.Plugin {
	return map[string]goplugin.Plugin{pluginName: &grpcPlugin{impl: impl, dial: dial}}
}

// DialIssuer connects the plugin to the token issuer (the vault) at socket,
// for one request, and returns it with the function that closes it. The
// plugin calls it for a request that names a vault socket
// (verifier.Request.VaultSocket); when it fails, the request's
// token-consistency fails as the issuer being unavailable.
type DialIssuer func(ctx context.Context, socket string) (issuer verifier.Issuer, closeIssuer func(), err error)

// Options configure the plugin process (ServeIfPlugin).
type Options struct {
	// Harden, when set, is called before anything else; if it fails, the
	// process exits with status 1. cut makes itself undumpable there
	// (PR_SET_DUMPABLE 0, RLIMIT_CORE 0).
	Harden func() error
	// DialIssuer, when set, gives a request of a reversible cut the token
	// issuer at its vault socket; without it such a request is verified
	// without an issuer, and fails token-consistency saying so.
	DialIssuer DialIssuer
}

// ServeIfPlugin makes the calling program its own verifier plugin: when
// the process was started as the plugin (its first argument is Arg, as
// LaunchSelf starts it), it hardens itself, serves the verifier until the
// host stops it, and exits; otherwise it returns at once. A program calls
// it first thing in main, before it reads any input.
func ServeIfPlugin(opt Options) {
	if len(os.Args) < 2 || os.Args[1] != Arg {
		return
	}
	serve(opt)
	os.Exit(0)
}

// serve runs the verifier plugin: the whole main of the plugin process.
// The process's stderr is copied into the host's log, so nothing here ever
// writes input to it.
func serve(opt Options) {
	// SIGQUIT's default action would dump every goroutine, with the
	// inputs' bytes in their arguments, to the stderr the host logs.
	signal.Ignore(syscall.SIGQUIT)
	if v := os.Getenv(attachEnv); v != "" {
		if fd, err := strconv.Atoi(v); err == nil && fd >= 3 {
			attachFD = fd
		}
	}
	if opt.Harden != nil {
		if err := opt.Harden(); err != nil {
			fmt.Fprintln(os.Stderr, "verifier: plugin hardening failed")
			os.Exit(1)
		}
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: handshake,
		Plugins:         pluginMap(verifier.InProcess(), opt.DialIssuer),
		GRPCServer:      goplugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: "verifier", Level: hclog.Info, Output: os.Stderr, JSONFormat: true,
		}),
	})
}

// Client is a running verifier plugin process.
type Client struct {
	pc      *goplugin.Client
	checker verifier.Checker
	kill    context.CancelFunc // ends the command's context (see command)
	dir     string             // the plugin's private socket directory
}

// ErrStart is wrapped by the errors of Start.
var ErrStart = errors.New("verifier: plugin start failed")

// Start launches exe with args as the verifier plugin and connects to it.
//
// The plugin is pinned: Start hashes the executable with SHA-256 and
// go-plugin refuses to run it if it has changed when it is started. The
// connection is gRPC only, over mutual TLS with certificates made for this
// run (AutoMTLS). The child gets env and nothing of the host's environment.
// The child's stderr and go-plugin's own messages go to logger (nil
// discards them). Start gives up, killing the child, when ctx is done.
func Start(ctx context.Context, exe string, args []string, env []string, logger hclog.Logger) (*Client, error) {
	cmd, kill, _, _, err := newCommand(exe, args, env, false)
	if err != nil {
		return nil, err
	}
	return start(ctx, cmd, kill, logger, false)
}

// newCommand is the plugin command of exe with args and (only) env; with
// attach, where attachments are supported, the child gets the other end of
// a new attachment channel as descriptor 3: host is this side's end, child
// the end the caller closes once the child has started.
func newCommand(exe string, args, env []string, attach bool) (cmd *exec.Cmd, kill context.CancelFunc, host, child *os.File, err error) {
	cmd, kill = command(exe, args)
	if cmd.Err != nil {
		kill()
		return nil, nil, nil, nil, fmt.Errorf("%w: %w", ErrStart, cmd.Err)
	}
	cmd.Env = append([]string{}, env...)
	if attach && attachSupported {
		if host, child, err = newAttachChannel(); err != nil {
			kill()
			return nil, nil, nil, nil, fmt.Errorf("%w: attachment: %w", ErrStart, err)
		}
		cmd.Env = append(cmd.Env, attachEnv+"=3")
		cmd.ExtraFiles = []*os.File{child}
	}
	return cmd, kill, host, child, nil
}

// command returns the plugin's command and the function that kills it
// whenever it is called: before the process starts (which then fails), while
// go-plugin starts it, or after. start calls it when it gives up, so that a
// process go-plugin was still starting cannot outlive the call. On Linux the
// plugin is also killed when this process dies (dieWithParent).
func command(exe string, args []string) (*exec.Cmd, context.CancelFunc) {
	ctx, kill := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, exe, args...)
	dieWithParent(cmd)
	return cmd, kill
}

// attachEnv names the variable that tells a plugin which descriptor holds
// its attached inputs.
const attachEnv = "PRIVACYCUT_VERIFIER_ATTACHMENT"

// Run verifies one request in a plugin process started for it, and stops
// the process: Launch, then Pending.Verify, then Pending.Close.
func Run(ctx context.Context, exe string, args []string, env []string, logger hclog.Logger, req verifier.Request) (receipts.Verification, error) {
	p, err := Launch(ctx, exe, args, env, logger)
	if err != nil {
		return receipts.Verification{}, err
	}
	defer p.Close()
	return p.Verify(ctx, req)
}

// Pending is a verifier plugin process started for one request that is
// not ready yet, so that a caller can overlap the plugin's start (exec, the
// runtime's start, the handshake and its certificates, the executable's
// checksum) with its own work: cut prepare launches the plugin before it
// reads the projection.
type Pending struct {
	attach  *os.File // the host's end of the attachment channel, nil where attachments are unsupported
	cancel  context.CancelFunc
	started chan startResult
	client  *Client // set once started has been received
	err     error
	waited  bool
	used    bool
}

type startResult struct {
	c   *Client
	err error
}

// Launch starts exe with args as the verifier plugin for one request, to
// be given to Verify, and returns at once; the start completes on another
// goroutine. The plugin is pinned, isolated and connected exactly as by
// Start. On Linux the inputs will not cross the gRPC connection: Verify
// writes them once into a memfd, seals it against any change, and passes it
// over a socket pair whose other end the plugin got at start (descriptor 3)
// once the plugin has started, that is, has hardened itself; the plugin
// refuses it unsealed, and reads or maps it only then. Nothing the plugin holds
// before it is hardened gives access to the inputs: a socket cannot be
// reopened through /proc, and the caller keeps its standard input free of
// inputs.
// Elsewhere Verify streams them as Start's Checker does. ctx bounds the
// start and must outlive Verify. The caller must call Close.
func Launch(ctx context.Context, exe string, args []string, env []string, logger hclog.Logger) (*Pending, error) {
	cmd, kill, host, child, err := newCommand(exe, args, env, true)
	if err != nil {
		return nil, err
	}
	p := &Pending{started: make(chan startResult, 1), attach: host}
	ctx, p.cancel = context.WithCancel(ctx)
	go func() {
		c, err := start(ctx, cmd, kill, logger, p.attach != nil)
		if child != nil {
			child.Close() // the plugin has its own copy, or will never run
		}
		p.started <- startResult{c, err}
	}()
	return p, nil
}

// LaunchSelf launches the running executable, re-executed with Arg, as the
// verifier plugin for one request (Launch): the program must call
// ServeIfPlugin first thing in main. On Linux the file started and hashed
// is /proc/self/exe, the image this process runs: neither argv[0] (which
// whoever runs the program chooses) nor a path (which an upgrade may
// replace between the hash and the exec).
func LaunchSelf(ctx context.Context, logger hclog.Logger) (*Pending, error) {
	exe, err := selfExecutable()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	return Launch(ctx, exe, []string{Arg}, nil, logger)
}

// wait waits for the start to complete, once.
func (p *Pending) wait() (*Client, error) {
	if !p.waited {
		r := <-p.started
		p.client, p.err, p.waited = r.c, r.err, true
	}
	return p.client, p.err
}

// ErrUsed is returned by a second call to Pending.Verify.
var ErrUsed = errors.New("verifier: plugin already used for a request")

// Verify sends req to the plugin and returns its verdict. A Pending
// verifies one request, from one goroutine: a second call returns ErrUsed.
// Where attachments are supported, the inputs are written and sealed on
// this goroutine while the plugin may still be starting, and passed to it
// once it has started; it maps them only when asked to verify.
func (p *Pending) Verify(ctx context.Context, req verifier.Request) (receipts.Verification, error) {
	if p.used {
		return receipts.Verification{}, ErrUsed
	}
	p.used = true
	var f *os.File
	if p.attach != nil {
		var err error
		f, err = makeAttachment(inputsOf(req))
		if err != nil {
			return receipts.Verification{}, fmt.Errorf("%w: attachment: %w", ErrStart, err)
		}
		defer f.Close()
	}
	c, err := p.wait()
	if err != nil {
		return receipts.Verification{}, err
	}
	if f != nil {
		if err := sendAttachment(p.attach, f); err != nil {
			return receipts.Verification{}, fmt.Errorf("%w: attachment: %w", ErrStart, err)
		}
	}
	return c.Checker().Verify(ctx, req)
}

// Close stops the plugin process, cutting its start short if it is still
// starting, and releases the attachment.
func (p *Pending) Close() error {
	p.cancel()
	if c, _ := p.wait(); c != nil {
		c.Close()
	}
	if p.attach != nil {
		p.attach.Close()
	}
	return nil
}

func start(ctx context.Context, cmd *exec.Cmd, kill context.CancelFunc, logger hclog.Logger, attached bool) (*Client, error) {
	sum, err := fileSHA256(cmd.Path)
	if err != nil {
		kill()
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	// The plugin listens in a directory of its own (0700), not in the
	// shared temporary directory, and the host removes it when the plugin
	// has stopped: a plugin killed before it could remove its socket
	// leaves nothing behind.
	dir, err := os.MkdirTemp("", "privacycut-verifier-")
	if err != nil {
		kill()
		return nil, fmt.Errorf("%w: socket directory: %w", ErrStart, err)
	}
	cmd.Env = append(cmd.Env, goplugin.EnvUnixSocketDir+"="+dir)
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	pc := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  handshake,
		Plugins:          pluginMap(nil, nil),
		Cmd:              cmd,
		SecureConfig:     &goplugin.SecureConfig{Checksum: sum, Hash: sha256.New()},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           logger,
	})
	type started struct {
		c   verifier.Checker
		err error
	}
	done := make(chan started, 1)
	go func() {
		rpc, err := pc.Client()
		if err != nil {
			done <- started{nil, err}
			return
		}
		raw, err := rpc.Dispense(pluginName)
		if err != nil {
			done <- started{nil, err}
			return
		}
		c, ok := raw.(*grpcClient)
		if !ok {
			done <- started{nil, errors.New("dispensed value is not a Checker")}
			return
		}
		c.attached = attached
		done <- started{c, nil}
	}()
	select {
	case <-ctx.Done():
		// go-plugin may be starting the process right now: kill it
		// through its command's context, whenever it starts, and wait for
		// the start to fail.
		kill()
		pc.Kill()
		<-done
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w: %w", ErrStart, ctx.Err())
	case s := <-done:
		if s.err != nil {
			kill()
			pc.Kill()
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w: %w", ErrStart, s.err)
		}
		return &Client{pc: pc, checker: s.c, kill: kill, dir: dir}, nil
	}
}

// Checker returns the Checker that calls the plugin process.
func (c *Client) Checker() verifier.Checker { return c.checker }

// Close stops the plugin process.
func (c *Client) Close() error {
	c.pc.Kill()
	c.kill()
	os.RemoveAll(c.dir)
	return nil
}

func fileSHA256(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}
