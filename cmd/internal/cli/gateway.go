package cli

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/privacycut/privacycut/gateway"
)

func init() {
	register(&command{name: "gateway", synopsis: "--config F [--check]",
		summary: "serve approved routes to agent runtimes: a native API and an OpenAI-compatible front door",
		about: "The gateway holds the approved routes, their vocabularies and schemas, warm verifier plugins, the seal\n" +
			"authority, the provider credentials' files and a vault connection, and serves\n" +
			"POST /v1/routes/{name}/cut, POST /v1/chat/completions, GET /healthz and GET /metrics on a unix socket\n" +
			"(peer uid allow-list) and an optional loopback TCP listener (bearer token). SIGTERM drains the requests\n" +
			"in flight and revokes the leases of cuts that did not finish. Its log is JSON on stderr, without values.\n" +
			"See docs/GATEWAY.md.",
		run: runGateway})
}

func runGateway(ctx context.Context, c *Cmd, args []string) error {
	fs := c.flags("gateway")
	path := fs.String("config", "", "the Gateway@1 configuration `file`")
	check := fs.Bool("check", false, "load the configuration, the routes and the plugins, print the routes, and exit")
	pos, err := c.parse(fs, args)
	if err != nil {
		return err
	}
	if *path == "" || len(pos) != 0 {
		return c.usage()
	}
	doc, err := readFileCapped(*path, gateway.MaxConfigBytes)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	dir, err := filepath.Abs(filepath.Dir(*path))
	if err != nil {
		return err
	}
	cfg, err := gateway.ParseConfig(doc, dir)
	if err != nil {
		return err
	}
	exe, err := selfExecutable()
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewJSONHandler(c.Stderr, nil))
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	g, err := gateway.New(sctx, cfg, gateway.Options{Logger: logger, PluginLog: c.Stderr,
		PluginExe: exe, PluginArgs: []string{pluginArg}})
	cancel()
	if err != nil {
		return err
	}
	if *check {
		for _, r := range g.Routes() {
			fmt.Fprintln(c.Stdout, r)
		}
		_, err := g.Shutdown(context.Background())
		return err
	}
	ls, err := g.Listen()
	if err != nil {
		g.Shutdown(context.Background())
		return err
	}
	for _, l := range ls {
		logger.Info("listening", "network", l.Addr().Network(), "address", l.Addr().String())
	}
	served := make(chan error, 1)
	go func() { served <- g.Serve(ls) }()
	select {
	case <-ctx.Done():
		logger.Info("stopping: draining the requests in flight")
	case err := <-served:
		g.Shutdown(context.Background())
		return err
	}
	if _, err := g.Shutdown(context.Background()); err != nil {
		return err
	}
	<-served
	return nil
}
