package seal

import (
	"bytes"
	"crypto/ecdh"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/hkdf"
)

var update = flag.Bool("update", false, "rewrite testdata/seal-v2.json")

// The known answer of the wire format privacycut/seal/v2, pinned in
// testdata/seal-v2.json: fixed recipient and ephemeral X25519 keys, three
// values in two categories, and every intermediate (the shared secret, the
// HKDF info, the derived key, the associated data) and the sealed message.
// makeKAT derives it from the format as Seal's and AAD's doc comments state
// it, written here apart from info and AAD. The package must reproduce it
// byte for byte: a change of the wire format fails TestKnownAnswer. Such a
// change is a new format (privacycut/seal/v3, a new vector), never an
// -update of this one.
type katVector struct {
	Comment          string   `json:"comment"`
	RecipientPrivate string   `json:"recipient_private"`
	RecipientPublic  string   `json:"recipient_public"`
	EphemeralPrivate string   `json:"ephemeral_private"`
	EphemeralPublic  string   `json:"ephemeral_public"`
	Categories       []string `json:"categories"`
	Index            []int    `json:"index"`
	Lengths          []uint32 `json:"lengths"`
	Values           []string `json:"values"`
	Shared           string   `json:"shared"`
	Info             string   `json:"info"`
	Key              string   `json:"key"`
	AAD              string   `json:"aad"`
	Sealed           string   `json:"sealed"`
}

// docInfo is the HKDF info of the doc comment of Seal:
// "privacycut/seal/v2" ‖ ephemeral public ‖ recipient public.
func docInfo(eph, recipient []byte) []byte {
	b := []byte("privacycut/seal/v2")
	b = append(b, eph...)
	return append(b, recipient...)
}

// docKey is the per-request key: HKDF-SHA256 of the shared secret, no salt,
// with info docInfo, 32 bytes.
func docKey(tb testing.TB, shared, eph, recipient []byte) []byte {
	tb.Helper()
	key := make([]byte, chacha20poly1305.KeySize)
	if _, err := io.ReadFull(hkdf.New(sha256.New, shared, nil, docInfo(eph, recipient)), key); err != nil {
		tb.Fatal(err)
	}
	return key
}

// docAAD is the associated data of the doc comment of AAD.
func docAAD(categories []string, index []byte, lengths []uint32) []byte {
	b := []byte("privacycut/seal/v2/values\x00")
	b = binary.BigEndian.AppendUint32(b, uint32(len(index)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(categories)))
	for _, c := range categories {
		b = append(b, byte(len(c)))
		b = append(b, c...)
	}
	for i, ci := range index {
		b = append(b, ci)
		b = binary.BigEndian.AppendUint32(b, lengths[i])
	}
	return b
}

func makeKAT(tb testing.TB) katVector {
	tb.Helper()
	curve := ecdh.X25519()
	rpriv := sha256.Sum256([]byte("privacycut/seal/v2 known answer: recipient"))
	epriv := sha256.Sum256([]byte("privacycut/seal/v2 known answer: ephemeral"))
	rk, err := curve.NewPrivateKey(rpriv[:])
	if err != nil {
		tb.Fatal(err)
	}
	ek, err := curve.NewPrivateKey(epriv[:])
	if err != nil {
		tb.Fatal(err)
	}
	shared, err := ek.ECDH(rk.PublicKey())
	if err != nil {
		tb.Fatal(err)
	}
	rpub, epub := rk.PublicKey().Bytes(), ek.PublicKey().Bytes()
	v := katVector{
		Comment: "privacycut/seal/v2: X25519, HKDF-SHA256 (info \"privacycut/seal/v2\" || ephemeral public || recipient public), " +
			"ChaCha20-Poly1305 under the all-zero nonce, associated data per seal.AAD. Made by makeKAT in kat_test.go.",
		RecipientPrivate: hex.EncodeToString(rpriv[:]),
		RecipientPublic:  hex.EncodeToString(rpub),
		EphemeralPrivate: hex.EncodeToString(epriv[:]),
		EphemeralPublic:  hex.EncodeToString(epub),
		Categories:       []string{"module", "team"},
		Index:            []int{0, 1, 0},
		Values:           []string{"git.corp.example/payments/ledger", "payments-core", "git.corp.example/payments/ledger/v2"},
		Shared:           hex.EncodeToString(shared),
		Info:             hex.EncodeToString(docInfo(epub, rpub)),
	}
	var plain []byte
	for _, s := range v.Values {
		v.Lengths = append(v.Lengths, uint32(len(s)))
		plain = append(plain, s...)
	}
	key := docKey(tb, shared, epub, rpub)
	aad := docAAD(v.Categories, v.index(), v.Lengths)
	aead, err := chacha20poly1305.New(key)
	if err != nil {
		tb.Fatal(err)
	}
	v.Key, v.AAD = hex.EncodeToString(key), hex.EncodeToString(aad)
	v.Sealed = hex.EncodeToString(aead.Seal(nil, make([]byte, chacha20poly1305.NonceSize), plain, aad))
	return v
}

// index is Index as Request has it.
func (v *katVector) index() []byte {
	b := make([]byte, len(v.Index))
	for i, ci := range v.Index {
		b[i] = byte(ci)
	}
	return b
}

func unhex(tb testing.TB, s string) []byte {
	tb.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func TestKnownAnswer(t *testing.T) {
	path := filepath.Join("testdata", "seal-v2.json")
	if *update {
		b, err := json.MarshalIndent(makeKAT(t), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v katVector
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	// The vector is what the documented format gives.
	if d := cmp.Diff(makeKAT(t), v); d != "" {
		t.Fatalf("testdata/seal-v2.json is not the documented format (-made +file):\n%s", d)
	}

	req := Request{
		Ephemeral:  [KeySize]byte(unhex(t, v.EphemeralPublic)),
		Recipient:  [KeySize]byte(unhex(t, v.RecipientPublic)),
		Categories: v.Categories,
		Index:      v.index(),
		Lengths:    v.Lengths,
		Sealed:     unhex(t, v.Sealed),
	}
	if got := AAD(&req); !bytes.Equal(got, unhex(t, v.AAD)) {
		t.Errorf("AAD = %x, want %s", got, v.AAD)
	}
	if got := info(req.Ephemeral, req.Recipient); !bytes.Equal(got, unhex(t, v.Info)) {
		t.Errorf("info = %x, want %s", got, v.Info)
	}

	// Open, holding the recipient's private key, opens the vector.
	a := newArena(t)
	priv, err := a.Alloc(KeySize)
	if err != nil {
		t.Fatal(err)
	}
	if err := priv.Fill(func(dst []byte) error { copy(dst, unhex(t, v.RecipientPrivate)); return nil }); err != nil {
		t.Fatal(err)
	}
	kp := &KeyPair{priv: priv, pub: req.Recipient}
	defer kp.Close()
	s, err := kp.Open(a, req)
	if err != nil {
		t.Fatalf("Open of the known answer: %v", err)
	}
	var want []byte
	for _, val := range v.Values {
		want = append(want, val...)
	}
	if !s.EqualBytes(want) {
		t.Error("the known answer opened to other bytes")
	}
	s.Wipe()

	// Seal draws its own ephemeral key, so its output cannot be pinned;
	// the recipient opens it under the documented derivation instead.
	var pairs []Pair
	for i, val := range v.Values {
		pairs = append(pairs, Pair{v.Categories[v.Index[i]], []byte(val)})
	}
	sealed, err := Seal(req.Recipient, pairs)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]any{v.Categories, v.index(), v.Lengths, req.Recipient},
		[]any{sealed.Categories, sealed.Index, sealed.Lengths, sealed.Recipient}); d != "" {
		t.Errorf("Seal's clear part (-want +got):\n%s", d)
	}
	rk, err := ecdh.X25519().NewPrivateKey(unhex(t, v.RecipientPrivate))
	if err != nil {
		t.Fatal(err)
	}
	epk, err := ecdh.X25519().NewPublicKey(sealed.Ephemeral[:])
	if err != nil {
		t.Fatal(err)
	}
	shared, err := rk.ECDH(epk)
	if err != nil {
		t.Fatal(err)
	}
	aead, err := chacha20poly1305.New(docKey(t, shared, sealed.Ephemeral[:], sealed.Recipient[:]))
	if err != nil {
		t.Fatal(err)
	}
	got, err := aead.Open(nil, make([]byte, chacha20poly1305.NonceSize), sealed.Sealed, docAAD(v.Categories, v.index(), v.Lengths))
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("Seal's message does not open under the documented format: %v", err)
	}
}
