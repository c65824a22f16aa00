package pipeline

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/privacycut/privacycut/censor"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/harden"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// vaultSource is the token source of a reversible cut: the distinct
// (category, value) pairs are sealed to the vault's key on this side, only
// ciphertext crosses the socket, and the vault issues the tokens in a fresh
// keyed namespace of a new lease. The map never leaves the vault.
type vaultSource struct {
	p        *Pipeline
	req      vaultapi.CreateRequest
	lease    string    // the lease granted, once Issue has returned
	tokens   []string  // the grant's tokens, in the order of the pairs sent
	deadline time.Time // its absolute deadline
	bound    bool
}

var _ censor.TokenSource = (*vaultSource)(nil)

func (*vaultSource) Mode() string { return receipts.ModeReversible }

func (v *vaultSource) Issue(ctx context.Context, sourceDigest string, pairs []censor.Pair) ([]string, error) {
	cl := v.p.opt.Vault
	sp := make([]seal.Pair, len(pairs))
	for i, p := range pairs {
		sp[i] = seal.Pair{Category: p.Category.String(), Value: p.Value}
	}
	var res vaultapi.CreateResult
	err := retryStale(func() error {
		sealed, err := cl.Seal(ctx, sp)
		if err != nil {
			return err
		}
		req := v.req
		req.SourceDigest, req.Values = sourceDigest, sealed
		if err := ctx.Err(); err != nil {
			return err
		}
		// The grant itself is not canceled: canceled halfway, the vault
		// could commit a lease whose id the reply never brings back, and a
		// lease is revoked by its id. A cut canceled meanwhile learns the
		// id here and revokes the lease when it fails.
		res, err = cl.CreateLease(context.WithoutCancel(ctx), req)
		return err
	})
	if err != nil {
		return nil, err
	}
	v.lease, v.tokens, v.deadline = res.Lease.ID, res.Tokens, res.Lease.Deadline
	return res.Tokens, nil
}

// retryStale calls call, which seals to the vault's key as the client last
// saw it, and calls it once more if the vault refused that key as stale (it
// restarted since, with a new key): the vault refuses before it grants or
// claims anything, and the client, having forgotten the key, fetches the new
// one.
func retryStale(call func() error) error {
	err := call()
	if errors.Is(err, vaultapi.ErrStaleKey) {
		err = call()
	}
	return err
}

// reversibleSource checks the vault's profile: without an accepted profile
// a reversible cut is refused (VAULT_PROFILE_NOT_PROVEN) and no token is
// issued.
func (p *Pipeline) reversibleSource(ctx context.Context, plan *receipts.Plan, in Input) (*vaultSource, error) {
	notProven := []receipts.Refusal{{Code: receipts.VaultProfileNotProven, Part: -1, Kind: "vault"}}
	if p.opt.Vault == nil {
		return nil, p.refuse(notProven, "", "no vault", nil)
	}
	// The profile as the client last saw it: the vault refuses the grant
	// itself if it no longer accepts its profile.
	prof, err := p.opt.Vault.Profile(ctx)
	if err != nil {
		return nil, p.vaultRefusal(err)
	}
	if prof.Profile != harden.Accepted {
		return nil, p.refuse(notProven, "", "vault profile "+prof.Profile+": "+strings.Join(prof.Reasons, ", "), nil)
	}
	return &vaultSource{p: p, req: vaultapi.CreateRequest{
		Run: in.Run, Attempt: in.Attempt, Target: plan.Target, Purpose: plan.Purpose, Station: plan.Station,
		RemoteDeadlineS: uint64(plan.RemoteDeadlineS), ReturnWindowS: uint64(plan.ReturnWindowS),
		Lifetime:           time.Duration(plan.RemoteDeadlineS+plan.ReturnWindowS) * time.Second,
		OutputSchemaDigest: plan.OutputSchemaDigest,
	}}, nil
}

// bind binds the lease to the sealed cut: only then can it be claimed, and
// only for this export. A bind that fails revokes the lease (through
// revokeUnbound): whether or not the vault bound it before the error, no
// one will send this export.
func (v *vaultSource) bind(ctx context.Context, p *Pipeline, c *Cut) error {
	if err := p.opt.Vault.Bind(ctx, v.lease, c.Seal.EventID, c.candidate, c.ExportDigest, c.Export); err != nil {
		return p.vaultRefusal(err)
	}
	v.bound = true
	return nil
}

// revokeUnbound revokes the lease granted for this cut unless it was bound,
// even when the cut has been canceled: a lease that is not bound to a
// sealed cut can never be claimed, and would only keep its values until it
// expires.
func (v *vaultSource) revokeUnbound(ctx context.Context, p *Pipeline) {
	if v.bound || v.lease == "" {
		return
	}
	if err := p.revoke(ctx, v.lease); err != nil {
		p.warn("revoking the unused lease " + v.lease + ": " + err.Error())
	}
}

// revoke revokes a lease, even when ctx has been canceled.
func (p *Pipeline) revoke(ctx context.Context, id string) error {
	_, err := p.opt.Vault.Revoke(context.WithoutCancel(ctx), id)
	return err
}

// vaultRefusal turns a coded vault error into a *RefusedError (kind
// "vault"); an error without a code is returned as it is.
func (p *Pipeline) vaultRefusal(err error) error {
	code := vaultapi.CodeOf(err)
	if code == "" {
		return err
	}
	return p.refuse([]receipts.Refusal{{Code: code, Part: -1, Kind: "vault"}}, "", "", err)
}
