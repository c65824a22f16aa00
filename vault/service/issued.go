package service

import (
	"context"
	"crypto/subtle"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// Issued answers the verifier's question about a reversible cut: for each
// (category, value) pair, sealed to the vault as CreateLease's are, whether
// tokens[i] is the token this lease issued for it. The lease must be live
// (ACTIVE or CLAIMED; bound or not, since the verifier runs before the
// seal): a terminal or expired lease is LEASE_NOT_ACTIVE, a lost key or map
// LEASE_UNRECOVERABLE. Only the lease's principal may ask (ErrForbidden):
// each answer confirms or denies a guess of a value, so the question is
// left to the one who granted the lease and already holds its values.
//
// The values are opened straight into the arena and wiped on return, the
// map is decrypted into the arena and wiped; each token is looked up in the
// map by its category and mac (tokens are public) and the value it maps to
// is compared with the pair's in constant time (subtle.ConstantTimeCompare:
// only whether the lengths are equal shows in the time). A token of
// another namespace or category, an invented or altered one, or one that
// maps to another value answers false; the answer carries no value and no
// reason. It is a reversible request: refused with
// VAULT_PROFILE_NOT_PROVEN unless the profile is accepted.
func (v *Vault) Issued(ctx context.Context, principal, leaseID string, values seal.Request, tokens []string) ([]bool, error) {
	const op = "issued"
	if err := v.gate(op); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, vaultapi.Fail(op, err)
	}
	n := values.Len()
	if n > seal.MaxValues {
		return nil, vaultapi.New(receipts.LimitExceeded, op, "values", nil)
	}
	if len(tokens) != n {
		return nil, invalid(op, "tokens")
	}
	for _, c := range values.Categories {
		if _, code := categoryIndex(c); code != "" {
			return nil, vaultapi.New(code, op, "values", nil)
		}
	}
	if values.Recipient != v.seal.Public() {
		return nil, vaultapi.New("", op, "recipient", ErrStaleKey)
	}
	l, err := v.liveLease(op, leaseID)
	if err != nil {
		return nil, err
	}
	if l.Principal != principal {
		return nil, vaultapi.Fail(op, ErrForbidden)
	}
	out := make([]bool, n)
	if n == 0 {
		return out, nil
	}
	opened, err := v.seal.Open(v.arena, values)
	if err != nil {
		return nil, v.fail(op, err)
	}
	defer opened.Wipe()
	m, err := v.openMap(op, l)
	if err != nil {
		return nil, err
	}
	defer m.s.Wipe()
	err = m.s.Reveal(func(b []byte) error {
		iss, err := newIssued(b, m.ns)
		if err != nil {
			return err
		}
		return opened.Reveal(func(all []byte) error {
			off := 0
			for i := range n {
				vlen := int(values.Lengths[i])
				val := all[off : off+vlen]
				off += vlen
				k, ok := iss.key([]byte(tokens[i]))
				if !ok || Categories[k.cat-1] != values.Category(i) {
					continue
				}
				s, ok := iss.idx[k]
				if !ok {
					continue
				}
				out[i] = subtle.ConstantTimeCompare(b[s.off:s.off+s.n], val) == 1
			}
			return nil
		})
	})
	if err != nil {
		return nil, v.fail(op, err)
	}
	return out, nil
}
