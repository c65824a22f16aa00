package cli

import (
	"context"
	"errors"
	"time"

	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/api"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/service"
)

// vaultSocket is --vault, else $PRIVACYCUT_VAULT.
func (c *Cmd) vaultSocket(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	return c.Getenv("PRIVACYCUT_VAULT")
}

// vaultSource is the token source of a reversible cut: the distinct
// (category, value) pairs are sealed to the vault's key on this side, only
// ciphertext crosses the socket, and the vault issues the tokens in a fresh
// keyed namespace of a new lease. The map never leaves the vault.
type vaultSource struct {
	client *api.Client
	req    service.CreateRequest
	lease  string
	tokens []string // the grant's tokens, in the order of the pairs sent
}

var _ censor.TokenSource = (*vaultSource)(nil)

func (*vaultSource) Mode() string { return receipts.ModeReversible }

func (v *vaultSource) Issue(ctx context.Context, sourceDigest string, pairs []censor.Pair) ([]string, error) {
	sp := make([]seal.Pair, len(pairs))
	for i, p := range pairs {
		sp[i] = seal.Pair{Category: p.Category.String(), Value: p.Value}
	}
	sealed, err := v.client.Seal(ctx, sp)
	if err != nil {
		return nil, err
	}
	req := v.req
	req.SourceDigest, req.Values = sourceDigest, sealed
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The grant itself is not canceled: canceled halfway, the vault could
	// commit a lease whose id the reply never brings back, and a lease is
	// revoked by its id. A command canceled meanwhile learns the id here and
	// revokes the lease when its cut fails.
	res, err := v.client.CreateLease(context.WithoutCancel(ctx), req)
	if err != nil {
		return nil, err
	}
	v.lease, v.tokens = res.Lease.ID, res.Tokens
	return res.Tokens, nil
}

// errNoVault: a vault operation was asked for without a vault socket.
var errNoVault = errors.New("no vault socket: pass --vault SOCK or set PRIVACYCUT_VAULT")

// reversibleSource connects to the vault and checks its profile: without an
// accepted profile a reversible cut is refused (VAULT_PROFILE_NOT_PROVEN) and
// no token is issued. It returns the token source and the step that binds the
// lease to the sealed cut (finish, called with nil when the cut failed: the
// lease it may have granted is revoked, its key destroyed).
func (c *Cmd) reversibleSource(ctx context.Context, f *prepareFlags, in *inputs) (censor.TokenSource, func(*prepared) error, error) {
	sock := c.vaultSocket(f.vault)
	if sock == "" {
		c.hintf("%v", errNoVault)
		return nil, nil, c.refuse(f.asJSON, []grammar.Refusal{{Code: receipts.VaultProfileNotProven, Part: -1, Kind: "vault"}}, nil)
	}
	cl, err := c.dialSocket(sock)
	if err != nil {
		return nil, nil, err
	}
	st, err := cl.Status(ctx)
	if err != nil {
		cl.Close()
		return nil, nil, c.vaultError(f.asJSON, err)
	}
	if st.Profile.Profile != harden.Accepted {
		cl.Close()
		c.errorf("%s: the vault profile is %s (%v)", c.name, st.Profile.Profile, st.Profile.Reasons)
		return nil, nil, c.refuse(f.asJSON, []grammar.Refusal{{Code: receipts.VaultProfileNotProven, Part: -1, Kind: "vault"}}, nil)
	}
	plan := in.plan
	src := &vaultSource{client: cl, req: service.CreateRequest{
		Run: f.run, Attempt: uint32(f.attempt), Target: plan.Target, Purpose: plan.Purpose, Station: plan.Station,
		RemoteDeadlineS: uint64(plan.RemoteDeadlineS), ReturnWindowS: uint64(plan.ReturnWindowS),
		Lifetime: time.Duration(plan.RemoteDeadlineS+plan.ReturnWindowS) * time.Second,
	}}
	// revoke revokes the lease granted for this cut, if any, even when the
	// command has been canceled: a lease that is not bound to a sealed cut
	// can never be claimed, and would only keep its values until it expires.
	revoke := func() {
		if src.lease != "" {
			if _, err := cl.Revoke(context.WithoutCancel(ctx), src.lease); err != nil {
				c.errorf("%s: revoking the unused lease: %v", c.name, err)
			}
		}
	}
	bind := func(p *prepared) error {
		defer cl.Close()
		if p == nil {
			revoke()
			return nil
		}
		if err := cl.Bind(ctx, src.lease, p.seal.EventID, p.out.CandidateDigest, p.out.ExportDigest, p.out.Export); err != nil {
			// The cut fails; whether or not the vault bound the lease
			// before the error, no one will send this export.
			revoke()
			return c.vaultError(f.asJSON, err)
		}
		return nil
	}
	return src, bind, nil
}
