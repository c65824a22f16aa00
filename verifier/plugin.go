package verifier

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier/internal/verifierpb"
)

// PluginName is the name the verifier is dispensed under.
const PluginName = "verifier"

// HandshakeConfig is shared by the host and the plugin. The cookie only keeps
// the plugin binary from being run by hand by mistake; it is not security:
// Start pins the binary by checksum and speaks mutual TLS.
var HandshakeConfig = plugin.HandshakeConfig{
	ProtocolVersion:  1,
	MagicCookieKey:   "PRIVACYCUT_VERIFIER_PLUGIN",
	MagicCookieValue: "closed-diagnostic@1/verifier/1",
}

// Checker verifies a cut, in process or in the plugin process.
type Checker interface {
	Verify(ctx context.Context, req Request) (receipts.Verification, error)
}

var (
	_ Checker                   = inProcess{}
	_ Checker                   = (*grpcClient)(nil)
	_ plugin.GRPCPlugin         = (*grpcPlugin)(nil)
	_ verifierpb.VerifierServer = (*grpcServer)(nil)
)

// InProcess returns a Checker that runs Verify in the calling process.
func InProcess() Checker { return inProcess{} }

type inProcess struct{}

func (inProcess) Verify(ctx context.Context, req Request) (receipts.Verification, error) {
	if err := ctx.Err(); err != nil {
		return receipts.Verification{}, err
	}
	return Verify(req), nil
}

// grpcPlugin is the go-plugin glue: gRPC only, no net/rpc, no broker.
type grpcPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	impl Checker
}

func (p *grpcPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	verifierpb.RegisterVerifierServer(s, &grpcServer{impl: p.impl})
	return nil
}

func (p *grpcPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, cc *grpc.ClientConn) (any, error) {
	return &grpcClient{c: verifierpb.NewVerifierClient(cc)}, nil
}

// PluginMap returns the plugin set of the verifier for plugin.ServeConfig
// and plugin.ClientConfig. The served implementation is InProcess.
func PluginMap() map[string]plugin.Plugin {
	return map[string]plugin.Plugin{PluginName: &grpcPlugin{impl: InProcess()}}
}

// Harden, when set, is called by Serve before anything else. The cut command
// sets it to make the process undumpable (PR_SET_DUMPABLE 0, RLIMIT_CORE 0).
// If it fails, Serve exits with status 1.
var Harden func() error

// Serve runs the verifier plugin: it is the whole main of the plugin
// process and does not return. The process's stderr is copied into the
// host's log, so nothing here ever writes input to it.
func Serve() {
	if v := os.Getenv(attachEnv); v != "" {
		if fd, err := strconv.Atoi(v); err == nil && fd >= 3 {
			attachFD = fd
		}
	}
	if Harden != nil {
		if err := Harden(); err != nil {
			fmt.Fprintln(os.Stderr, "verifier: plugin hardening failed")
			os.Exit(1)
		}
	}
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: HandshakeConfig,
		Plugins:         PluginMap(),
		GRPCServer:      plugin.DefaultGRPCServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Name: "verifier", Level: hclog.Info, Output: os.Stderr, JSONFormat: true,
		}),
	})
}

// Client is a running verifier plugin process.
type Client struct {
	pc      *plugin.Client
	checker Checker
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
	cmd := exec.Command(exe, args...)
	if cmd.Err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, cmd.Err)
	}
	cmd.Env = append([]string{}, env...)
	return start(ctx, cmd, logger, false)
}

// attachEnv names the variable that tells a plugin which descriptor holds
// its attached inputs.
const attachEnv = "PRIVACYCUT_VERIFIER_ATTACHMENT"

// Run verifies one request in a plugin process started for it, and stops
// the process. On Linux the inputs do not cross the gRPC connection: they are
// written once into a memfd that is handed to the plugin at start (as
// descriptor 3) and sealed against any change before the plugin is asked to
// verify; the plugin maps it read-only and refuses it unsealed. Elsewhere
// Run streams them as Start's Checker does. The plugin is pinned, isolated
// and connected exactly as by Start.
func Run(ctx context.Context, exe string, args []string, env []string, logger hclog.Logger, req Request) (receipts.Verification, error) {
	if !attachSupported {
		c, err := Start(ctx, exe, args, env, logger)
		if err != nil {
			return receipts.Verification{}, err
		}
		defer c.Close()
		return c.Checker().Verify(ctx, req)
	}
	f, err := newAttachment()
	if err != nil {
		return receipts.Verification{}, fmt.Errorf("%w: attachment: %w", ErrStart, err)
	}
	defer f.Close()
	cmd := exec.Command(exe, args...)
	if cmd.Err != nil {
		return receipts.Verification{}, fmt.Errorf("%w: %w", ErrStart, cmd.Err)
	}
	cmd.Env = append(append([]string{}, env...), attachEnv+"=3")
	cmd.ExtraFiles = []*os.File{f}
	// The inputs are written and sealed on another CPU while the plugin
	// starts. The plugin maps them only when asked to verify, which is
	// after the seals are on, and it refuses them unsealed.
	filled := make(chan error, 1)
	go func() {
		filled <- fillAttachment(f, [nInputs][]byte{req.Source, req.Export, req.Plan, req.Vocabulary, req.Receipts})
	}()
	c, err := start(ctx, cmd, logger, true)
	fillErr := <-filled
	if err != nil {
		return receipts.Verification{}, err
	}
	defer c.Close()
	if fillErr != nil {
		return receipts.Verification{}, fmt.Errorf("%w: attachment: %w", ErrStart, fillErr)
	}
	return c.Checker().Verify(ctx, req)
}

func start(ctx context.Context, cmd *exec.Cmd, logger hclog.Logger, attached bool) (*Client, error) {
	sum, err := fileSHA256(cmd.Path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	pc := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  HandshakeConfig,
		Plugins:          PluginMap(),
		Cmd:              cmd,
		SecureConfig:     &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		Logger:           logger,
	})
	type started struct {
		c   Checker
		err error
	}
	done := make(chan started, 1)
	go func() {
		rpc, err := pc.Client()
		if err != nil {
			done <- started{nil, err}
			return
		}
		raw, err := rpc.Dispense(PluginName)
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
		pc.Kill()
		return nil, fmt.Errorf("%w: %w", ErrStart, ctx.Err())
	case s := <-done:
		if s.err != nil {
			pc.Kill()
			return nil, fmt.Errorf("%w: %w", ErrStart, s.err)
		}
		return &Client{pc: pc, checker: s.c}, nil
	}
}

// Checker returns the Checker that calls the plugin process.
func (c *Client) Checker() Checker { return c.checker }

// Close stops the plugin process.
func (c *Client) Close() error {
	c.pc.Kill()
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
