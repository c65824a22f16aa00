package pipeline

import (
	"context"
	"errors"

	"github.com/privacycut/privacycut/vault/client"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/verifier"
)

// vaultIssuer is the verifier's token issuer backed by vaultd's Issued
// call: the values are sealed to the vault as a grant's are, and the vault
// answers, for each pair, whether the token is the one its lease issued.
type vaultIssuer struct{ c *client.Client }

var _ verifier.Issuer = vaultIssuer{}

func (v vaultIssuer) Issued(ctx context.Context, lease string, pairs []verifier.Pair) ([]bool, error) {
	sp := make([]seal.Pair, len(pairs))
	tokens := make([]string, len(pairs))
	for i, p := range pairs {
		sp[i], tokens[i] = seal.Pair{Category: p.Category, Value: p.Value}, p.Token
	}
	sealed, err := v.c.Seal(ctx, sp)
	if err != nil {
		return nil, issuerError(err)
	}
	ok, err := v.c.Issued(ctx, lease, sealed, tokens)
	if err != nil {
		return nil, issuerError(err)
	}
	return ok, nil
}

// issuerError is a vault error as the verifier names it: its refusal code,
// or unavailability.
func issuerError(err error) error {
	if code := vaultapi.CodeOf(err); code != "" {
		return &verifier.IssuerError{Code: code}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return verifier.ErrIssuerUnavailable
}

// dialIssuer is what the verifier plugin process uses to reach the vault
// at socket (verifier/plugin.Options.DialIssuer).
func dialIssuer(_ context.Context, socket string) (verifier.Issuer, func(), error) {
	c, err := client.Dial(socket)
	if err != nil {
		return nil, nil, verifier.ErrIssuerUnavailable
	}
	return vaultIssuer{c: c}, func() { c.Close() }, nil
}

// issuerFor gives a verification request of a reversible cut under lease
// its token issuer: the vault itself, asked over its socket — by this
// process for a verifier in process, by the plugin for a verifier in its
// own process (the socket travels in the request). Without a socket to
// give a plugin, the vault's grant reply stands in (its tokens, in the
// order of the values sent).
func (p *Pipeline) issuerFor(req *verifier.Request, lease string, grant []string) {
	req.Lease = lease
	switch {
	case p.opt.Vault == nil:
	case p.isInProcess():
		req.Issuer = vaultIssuer{c: p.opt.Vault}
		return
	case p.opt.VaultSocket != "":
		req.VaultSocket = p.opt.VaultSocket
		return
	}
	if grant != nil {
		req.Issuer = &verifier.Granted{Lease: lease, Tokens: grant}
	}
}
