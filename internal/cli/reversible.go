package cli

import (
	"context"

	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// reversibleSource returns the vault-backed token source of a reversible cut
// and a function that binds the lease once the cut is verified. Without an
// accepted vault profile a reversible cut is refused: tokens are never issued
// outside the vault.
func (c *Cmd) reversibleSource(ctx context.Context, f *prepareFlags, in *inputs) (censor.TokenSource, func(*prepared) error, error) {
	sock := f.vault
	if sock == "" {
		sock = c.Getenv("PRIVACYCUT_VAULT")
	}
	if sock == "" {
		c.hintf("a reversible cut needs vaultd: pass --vault SOCK or set PRIVACYCUT_VAULT")
	}
	return nil, nil, c.refuse(f.asJSON, []grammar.Refusal{{Code: receipts.VaultProfileNotProven, Part: -1, Kind: "vault"}}, nil)
}
