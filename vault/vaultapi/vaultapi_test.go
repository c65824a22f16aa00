package vaultapi

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/seal"
)

func TestErrorText(t *testing.T) {
	ref := &receipts.Refusal{Code: receipts.TokenNotIssued, Part: -1, Kind: "return", Path: "$.a", Line: 1, Column: 9, Length: 4, Reason: "not issued"}
	for _, tc := range []struct {
		err      *Error
		text     string
		code     receipts.Code
		sentinel error
		field    string
	}{
		{Fail("claim", ErrInternal), "vault: claim: internal error", "", ErrInternal, ""},
		{Refuse("claim", receipts.LeaseUnrecoverable), "vault: claim: LEASE_UNRECOVERABLE", receipts.LeaseUnrecoverable, nil, ""},
		{Invalid("show", "lease"), "vault: show (field lease): invalid request", "", ErrInvalid, "lease"},
		{New(receipts.LimitExceeded, "create", "values", nil), "vault: create (field values): LIMIT_EXCEEDED", receipts.LimitExceeded, nil, "values"},
		{New("", "dial", "", ErrServerUntrusted), "vault: dial: the vault's socket is served by an untrusted uid", "", ErrServerUntrusted, ""},
		{New(ref.Code, "rehydrate", "return", ref), "vault: rehydrate (field return): " + ref.Error() + " (TOKEN_NOT_ISSUED)", receipts.TokenNotIssued, ref, "return"},
		{New("", "status", "", nil), "vault: status", "", nil, ""},
	} {
		if got := tc.err.Error(); got != tc.text {
			t.Errorf("text %q, want %q", got, tc.text)
		}
		wrapped := fmt.Errorf("cut: %w", tc.err)
		if got := CodeOf(wrapped); got != tc.code {
			t.Errorf("%v: CodeOf %q, want %q", tc.err, got, tc.code)
		}
		if tc.sentinel != nil && !errors.Is(wrapped, tc.sentinel) {
			t.Errorf("%v: the sentinel is lost", tc.err)
		}
		var e *Error
		if !errors.As(wrapped, &e) || e.Field != tc.field || e.Sys != nil {
			t.Errorf("%v: errors.As gives %#v", tc.err, e)
		}
	}
	var r *receipts.Refusal
	if !errors.As(New(ref.Code, "rehydrate", "return", ref), &r) || r != ref {
		t.Errorf("the refusal of the return is not reachable with errors.As")
	}
	if CodeOf(errors.New("other")) != "" || CodeOf(context.Canceled) != "" {
		t.Errorf("CodeOf of a foreign error is not empty")
	}
}

func evidenceKey(t *testing.T) (*receipts.EvidenceKey, []byte) {
	t.Helper()
	raw := make([]byte, receipts.EvidenceKeySize)
	rand.Read(raw)
	k, err := receipts.NewEvidenceKey(bytes.Clone(raw))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Wipe)
	return k, raw
}

// TestSealEvidenceKey: the key is sealed as the one value of its category
// to the recipient; a missing or wiped key and an unusable recipient are
// refused with their field, and no refusal carries the key.
func TestSealEvidenceKey(t *testing.T) {
	priv, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	recipient := [seal.KeySize]byte(priv.PublicKey().Bytes())
	k, raw := evidenceKey(t)
	req, err := SealEvidenceKey(recipient, k)
	if err != nil {
		t.Fatalf("SealEvidenceKey: %v", err)
	}
	if req.Len() != 1 || req.Category(0) != EvidenceKeyCategory || req.Recipient != recipient || bytes.Contains(req.Sealed, raw) {
		t.Fatalf("sealed request: %d values of %q to the right key %v", req.Len(), req.Category(0), req.Recipient == recipient)
	}

	wiped, _ := evidenceKey(t)
	wiped.Wipe()
	planted, plantedRaw := evidenceKey(t)
	for _, tc := range []struct {
		name      string
		recipient [seal.KeySize]byte
		key       *receipts.EvidenceKey
		sentinel  error
		field     string
	}{
		{"no key", recipient, nil, ErrInvalid, "evidence_key"},
		{"wiped key", recipient, wiped, ErrInvalid, "evidence_key"},
		{"zero recipient", [seal.KeySize]byte{}, planted, ErrStaleKey, "recipient"},
	} {
		_, err := SealEvidenceKey(tc.recipient, tc.key)
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, tc.sentinel) || e.Field != tc.field || e.Op != "seal-evidence-key" || e.Code != "" {
			t.Errorf("%s: %v, want %v in field %s", tc.name, err, tc.sentinel, tc.field)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, hex.EncodeToString(plantedRaw)) || strings.Contains(msg, string(plantedRaw)) {
			t.Errorf("%s: the refusal carries the key", tc.name)
		}
	}
}
