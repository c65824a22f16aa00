package client

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/server"
	"github.com/privacycut/privacycut/vault/service"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

func TestMain(m *testing.M) {
	if err := harden.Apply(); err != nil {
		fmt.Fprintln(os.Stderr, "client tests: cannot harden the test process:", err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}

// served is a vault behind a server on a socket of a test directory. The
// round trips of every call are tested with the server (package
// vault/server); the client's own checks are tested here.
type served struct {
	v    *service.Vault
	sock string
}

func serve(t *testing.T) *served {
	t.Helper()
	d := t.TempDir()
	v, err := service.Open(service.Options{StateDir: filepath.Join(d, "state"), KeyDir: filepath.Join(d, "keys"),
		Station: "station-a", MaxLease: time.Hour, ArenaSize: 1 << 20, SweepInterval: -1})
	if err != nil {
		t.Fatalf("service.Open: %v", err)
	}
	sock := filepath.Join(d, "run", "vault.sock")
	l, err := server.Listen(sock)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	srv := server.New(v, server.Options{})
	go srv.Serve(l)
	t.Cleanup(func() {
		srv.Stop()
		v.Close()
	})
	return &served{v: v, sock: sock}
}

// TestTrustedServer: the client trusts a vault running as root, as its own
// uid or as a uid it was given, and no other.
func TestTrustedServer(t *testing.T) {
	trust := trustedServer(1000, []uint32{998})
	for uid, want := range map[uint32]bool{0: true, 1000: true, 998: true, 65534: false, 1001: false} {
		if trust(uid) != want {
			t.Errorf("uid %d: trusted %v, want %v", uid, !want, want)
		}
	}
}

// TestClientRefusesUntrustedServer: a vault served by a uid the client does
// not trust is refused when dialed, and, when it only appears after the
// dial, in the handshake of the connection: no call reaches it.
func TestClientRefusesUntrustedServer(t *testing.T) {
	f := serve(t)
	ctx := context.Background()
	self := uint32(os.Geteuid())
	distrust := func(uid uint32) bool { return uid != self }
	if _, err := dial(f.sock, distrust); !errors.Is(err, vaultapi.ErrServerUntrusted) {
		t.Fatalf("dial: %v, want vaultapi.ErrServerUntrusted", err)
	}
	// The positive control: the same server, trusted.
	c, err := dial(f.sock, func(uint32) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Status(ctx); err != nil {
		t.Fatalf("trusted server: %v", err)
	}
	// Dialed before anyone listens, then served by the untrusted uid.
	late := filepath.Join(t.TempDir(), "run", "late.sock")
	lc, err := dial(late, distrust)
	if err != nil {
		t.Fatalf("dial before the server: %v", err)
	}
	defer lc.Close()
	l, err := server.Listen(late)
	if err != nil {
		t.Fatal(err)
	}
	srv := server.New(f.v, server.Options{})
	go srv.Serve(l)
	defer srv.Stop()
	before := srv.Calls()
	if _, err := lc.Status(ctx); !errors.Is(err, vaultapi.ErrUnavailable) {
		t.Fatalf("call to an untrusted server: %v, want vaultapi.ErrUnavailable", err)
	}
	if srv.Calls() != before {
		t.Errorf("a call reached the untrusted server")
	}
}

// TestDecodeProfile: an unhardened daemon's profile (core limit
// "unlimited", 2^64-1) still decodes; a foreign document does not.
func TestDecodeProfile(t *testing.T) {
	good := `{"schema":"VaultProfile@1","profile":"not_proven","arena":{"kind":"none","bytes":0,"locked":false},` +
		`"dumpable":true,"core_limit":18446744073709551615,"traceback":"","swap":"none","reasons":["core_limit"],"items":[],"pid":7}`
	p, err := decodeProfile([]byte(good))
	if err != nil || p.CoreLimit != 1<<64-1 || p.Reasons[0] != "core_limit" {
		t.Fatalf("decodeProfile: %+v %v", p, err)
	}
	for _, bad := range []string{
		`{"schema":"Other@1"}`,
		strings.Replace(good, `"pid":7`, `"pid":7,"extra":1`, 1),
		good + `{}`,
		`[`,
	} {
		if _, err := decodeProfile([]byte(bad)); err == nil {
			t.Errorf("decodeProfile(%.40q…) succeeded", bad)
		}
	}
}
