package rpc

import (
	"github.com/privacycut/privacycut/vault/internal/vaultpb"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// SealedToWire carries a sealed request as is: nothing in it is plaintext.
func SealedToWire(r seal.Request) *vaultpb.SealedValues {
	return &vaultpb.SealedValues{
		EphemeralPublicKey: r.Ephemeral[:], RecipientPublicKey: r.Recipient[:],
		Categories: r.Categories, CategoryIndex: r.Index, Lengths: r.Lengths, Sealed: r.Sealed,
	}
}

// SealedFromWire checks the key sizes of a sealed request off the wire;
// the rest is checked and authenticated by seal.KeyPair.Open.
func SealedFromWire(op, field string, m *vaultpb.SealedValues) (seal.Request, error) {
	if m == nil || len(m.EphemeralPublicKey) != seal.KeySize || len(m.RecipientPublicKey) != seal.KeySize {
		return seal.Request{}, vaultapi.Invalid(op, field)
	}
	return seal.Request{
		Ephemeral: [seal.KeySize]byte(m.EphemeralPublicKey), Recipient: [seal.KeySize]byte(m.RecipientPublicKey),
		Categories: m.Categories, Index: m.CategoryIndex, Lengths: m.Lengths, Sealed: m.Sealed,
	}, nil
}
