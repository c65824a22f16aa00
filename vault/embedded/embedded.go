// Package embedded runs a vault inside the calling process, served on a unix
// socket as vaultd serves it, for `cut demo`, examples and programs that
// want a reversible round trip without a daemon. Its state, keys and socket
// live in one directory of the caller's.
//
// # Security properties
//
// The vault is the same code as vaultd's, with the same arena, keys, store
// and socket checks; its profile is proven as vaultd's is, and a reversible
// cut is refused when it is not accepted. What it does not have is vaultd's
// process: the secret arena and the keys share an address space with the
// embedding program. Open hardens that process as vaultd hardens its own
// (undumpable, no core dump), for as long as it runs. Use vaultd for
// anything but demonstrations and tests.
package embedded

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/server"
	"github.com/privacycut/privacycut/vault/service"
)

// Vault is a running embedded vault.
type Vault struct {
	v      *service.Vault
	srv    *server.Server
	socket string
}

// Options configure an embedded vault. Zero values are defaults.
type Options struct {
	Station   string        // default "local"
	MaxLease  time.Duration // default 2h
	ArenaSize int           // default 4 MiB
	Logger    *slog.Logger  // default: discard
}

// Open hardens the calling process, opens a vault with its state and keys
// under dir and serves it on dir/run/vault.sock.
func Open(dir string, opt Options) (*Vault, error) {
	if err := harden.Apply(); err != nil {
		return nil, fmt.Errorf("embedded vault: %w", err)
	}
	if opt.Station == "" {
		opt.Station = "local"
	}
	if opt.MaxLease == 0 {
		opt.MaxLease = 2 * time.Hour
	}
	if opt.ArenaSize == 0 {
		opt.ArenaSize = 4 << 20
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil))
	}
	v, err := service.Open(service.Options{
		StateDir: filepath.Join(dir, "state"), KeyDir: filepath.Join(dir, "keys"),
		Station: opt.Station, MaxLease: opt.MaxLease, ArenaSize: opt.ArenaSize, Logger: opt.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("embedded vault: %w", err)
	}
	srv := server.New(v, server.Options{})
	sock := filepath.Join(dir, "run", "vault.sock")
	ln, err := server.Listen(sock)
	if err != nil {
		v.Close()
		return nil, fmt.Errorf("embedded vault: %w", err)
	}
	go srv.Serve(ln)
	return &Vault{v: v, srv: srv, socket: sock}, nil
}

// Socket returns the path of the vault's socket.
func (e *Vault) Socket() string { return e.socket }

// Describe says what the vault's profile is: its arena and whether it is
// accepted, and if not, why (fixed words).
func (e *Vault) Describe() string {
	p := e.v.Prove()
	desc := fmt.Sprintf("embedded (arena %s %d bytes, profile %s", p.Arena.Kind, p.Arena.Bytes, p.Profile)
	if p.Profile != harden.Accepted {
		desc += ": " + strings.Join(p.Reasons, ", ")
	}
	return desc + ")"
}

// Close stops serving and closes the vault.
func (e *Vault) Close() error {
	e.srv.Stop()
	return e.v.Close()
}
