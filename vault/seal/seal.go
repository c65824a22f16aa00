package seal

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"strconv"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/internal/verr"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/hkdf"
)

// KeySize is the size of an X25519 public or private key.
const KeySize = 32

// Limits on a sealed request.
const (
	// MaxValues bounds the number of values in one request: a cut with more
	// distinct owner values than this is refused (LIMIT_EXCEEDED). The map's
	// byte size is bounded separately (service.MaxMapBytes).
	MaxValues = 1 << 16
	// MaxValueLen bounds one plaintext value in bytes (a grammar record is
	// at most 64 KiB, so no owner value is longer).
	MaxValueLen = 64 << 10
	// MaxCategoryLen bounds a category name.
	MaxCategoryLen = 32
)

const (
	infoPrefix = "privacycut/seal/v2"
	aadPrefix  = "privacycut/seal/v2/values"
	// MaxCategories bounds the distinct categories of one request (a
	// category index is one byte).
	MaxCategories = 256
)

// Pair is one plaintext (category, value) pair on the client side.
type Pair struct {
	Category string
	Value    receipts.Plaintext
}

// Request is a set of values sealed as one message for one recipient key.
// Only Sealed is secret; the categories and lengths travel in clear and are
// bound to it as associated data.
type Request struct {
	Ephemeral  [KeySize]byte // the client's ephemeral X25519 public key
	Recipient  [KeySize]byte // the vault public key the values are sealed to
	Categories []string      // the distinct categories, in order of first use
	Index      []byte        // Index[i] is value i's category, an index into Categories
	Lengths    []uint32      // Lengths[i] is value i's length in bytes
	Sealed     []byte        // the values, concatenated in order, sealed as one message
}

// Len returns the number of values.
func (r *Request) Len() int { return len(r.Index) }

// Category returns value i's category ("" if its index is out of range).
func (r *Request) Category(i int) string {
	if i < 0 || i >= len(r.Index) || int(r.Index[i]) >= len(r.Categories) {
		return ""
	}
	return r.Categories[r.Index[i]]
}

// Error is the package's error type: the shared core (an operation, a
// sentinel, a refusal code where one applies) and the index of the value at
// fault (-1 when none). It never carries value bytes.
type Error struct {
	verr.Core
	Index int
}

func (e *Error) Error() string {
	at := ""
	if e.Index >= 0 {
		at = " value " + strconv.Itoa(e.Index)
	}
	return e.Text("seal", at, "")
}

func newError(code receipts.Code, op string, index int, sentinel error) *Error {
	return &Error{Core: verr.Core{Code: code, Op: op, Err: sentinel}, Index: index}
}

// Sentinels.
var (
	// ErrAuth: the sealed values failed authentication (wrong key, or
	// altered ciphertext, categories, order or lengths). Code
	// MALFORMED_RECORD.
	ErrAuth = errors.New("values failed authentication")
	// ErrKey: an invalid public key (low order, or the wrong recipient).
	ErrKey = errors.New("invalid or foreign public key")
	// ErrEmpty: an empty value (owner values are never empty). Code
	// MALFORMED_RECORD.
	ErrEmpty = errors.New("empty value")
	// ErrLimit: too many values or categories, a value or category too
	// long, or lengths that do not add up to the sealed message. Code
	// LIMIT_EXCEEDED, or MALFORMED_RECORD for inconsistent lengths.
	ErrLimit = errors.New("request over limits")
)

// Seal seals the pairs, in order, to the vault's public key recipient: a
// fresh ephemeral X25519 key, a shared secret, HKDF-SHA256 with info
// "privacycut/seal/v2" ‖ ephemeral public ‖ recipient public, and one
// ChaCha20-Poly1305 message — the values concatenated — under an all-zero
// nonce (the key is used once: every request draws a new ephemeral key)
// with the associated data of AAD. It runs on the client (cut) side,
// whose plaintext is in its own heap anyway.
func Seal(recipient [KeySize]byte, pairs []Pair) (Request, error) {
	const op = "seal"
	if len(pairs) > MaxValues {
		return Request{}, newError(receipts.LimitExceeded, op, -1, ErrLimit)
	}
	req := Request{Recipient: recipient, Index: make([]byte, len(pairs)), Lengths: make([]uint32, len(pairs))}
	size := 0
	for i, p := range pairs {
		if len(p.Value) > MaxValueLen || len(p.Category) == 0 || len(p.Category) > MaxCategoryLen {
			return Request{}, newError(receipts.LimitExceeded, op, i, ErrLimit)
		}
		if len(p.Value) == 0 {
			return Request{}, newError(receipts.MalformedRecord, op, i, ErrEmpty)
		}
		ci := slices.Index(req.Categories, p.Category)
		if ci < 0 {
			if len(req.Categories) == MaxCategories {
				return Request{}, newError(receipts.LimitExceeded, op, i, ErrLimit)
			}
			ci = len(req.Categories)
			req.Categories = append(req.Categories, p.Category)
		}
		req.Index[i], req.Lengths[i] = byte(ci), uint32(len(p.Value))
		size += len(p.Value)
	}
	curve := ecdh.X25519()
	eph, err := curve.GenerateKey(rand.Reader)
	if err != nil {
		return Request{}, newError("", op, -1, err)
	}
	pub, err := curve.NewPublicKey(recipient[:])
	if err != nil {
		return Request{}, newError("", op, -1, ErrKey)
	}
	shared, err := eph.ECDH(pub)
	if err != nil {
		return Request{}, newError("", op, -1, ErrKey)
	}
	req.Ephemeral = [KeySize]byte(eph.PublicKey().Bytes())
	key := make([]byte, chacha20poly1305.KeySize)
	if _, err := io.ReadFull(hkdf.New(sha256.New, shared, nil, info(req.Ephemeral, recipient)), key); err != nil {
		return Request{}, newError("", op, -1, err)
	}
	clear(shared)
	aead, err := chacha20poly1305.New(key)
	clear(key)
	if err != nil {
		return Request{}, newError("", op, -1, err)
	}
	plain := make([]byte, 0, size)
	for _, p := range pairs {
		plain = append(plain, p.Value...)
	}
	req.Sealed = aead.Seal(make([]byte, 0, size+aead.Overhead()), zeroNonce[:], plain, AAD(&req))
	clear(plain)
	return req, nil
}

var zeroNonce [chacha20poly1305.NonceSize]byte

func info(eph, recipient [KeySize]byte) []byte {
	b := make([]byte, 0, len(infoPrefix)+2*KeySize)
	b = append(b, infoPrefix...)
	b = append(b, eph[:]...)
	return append(b, recipient[:]...)
}

// AAD is the associated data of a request: "privacycut/seal/v2/values" ‖
// 0x00 ‖ the number of values (4 bytes, big-endian) ‖ the number of
// categories (2 bytes) ‖ each category as its length (1 byte) and bytes ‖
// each value's category index (1 byte) and length (4 bytes). It binds
// every value's category, position and length to the sealed message.
func AAD(r *Request) []byte {
	n := len(aadPrefix) + 1 + 4 + 2 + 5*len(r.Index)
	for _, c := range r.Categories {
		n += 1 + len(c)
	}
	b := make([]byte, 0, n)
	b = append(b, aadPrefix...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Index)))
	b = binary.BigEndian.AppendUint16(b, uint16(len(r.Categories)))
	for _, c := range r.Categories {
		b = append(b, byte(len(c)))
		b = append(b, c...)
	}
	for i, ci := range r.Index {
		b = append(b, ci)
		b = binary.BigEndian.AppendUint32(b, r.Lengths[i])
	}
	return b
}

// check validates the clear part of a request: counts, categories and
// lengths, which must add up to the sealed message.
func (r *Request) check(overhead int) error {
	const op = "open"
	if len(r.Index) > MaxValues || len(r.Categories) > MaxCategories {
		return newError(receipts.LimitExceeded, op, -1, ErrLimit)
	}
	if len(r.Lengths) != len(r.Index) {
		return newError(receipts.MalformedRecord, op, -1, ErrLimit)
	}
	for _, c := range r.Categories {
		if len(c) == 0 || len(c) > MaxCategoryLen {
			return newError(receipts.LimitExceeded, op, -1, ErrLimit)
		}
	}
	total := 0
	for i, ci := range r.Index {
		n := r.Lengths[i]
		switch {
		case int(ci) >= len(r.Categories):
			return newError(receipts.MalformedRecord, op, i, ErrLimit)
		case n == 0:
			return newError(receipts.MalformedRecord, op, i, ErrEmpty)
		case n > MaxValueLen:
			return newError(receipts.LimitExceeded, op, i, ErrLimit)
		}
		total += int(n)
	}
	if len(r.Sealed) != total+overhead {
		return newError(receipts.MalformedRecord, op, -1, ErrAuth)
	}
	return nil
}

// KeyPair is the vault's X25519 key pair. The private key lives in the
// arena.
type KeyPair struct {
	priv *arena.Secret
	pub  [KeySize]byte
}

// NewKeyPair generates a key pair whose private key is drawn straight into
// the arena.
func NewKeyPair(a *arena.Arena) (*KeyPair, error) {
	s, err := a.Alloc(KeySize)
	if err != nil {
		return nil, err
	}
	var pub [KeySize]byte
	err = s.Fill(func(dst []byte) error {
		rand.Read(dst)
		k, err := ecdh.X25519().NewPrivateKey(dst)
		if err != nil {
			return err
		}
		copy(pub[:], k.PublicKey().Bytes())
		return nil
	})
	if err != nil {
		s.Wipe()
		return nil, err
	}
	return &KeyPair{priv: s, pub: pub}, nil
}

// Public returns the public key.
func (k *KeyPair) Public() [KeySize]byte { return k.pub }

// Close wipes the private key.
func (k *KeyPair) Close() { k.priv.Wipe() }

// Open opens the values of req straight into one new arena secret holding
// them concatenated in request order (value i is at the sum of
// req.Lengths[:i]); a request of no values opens to nil after its tag is
// checked. The per-request key is derived into the arena too.
// Categories, order and lengths are authenticated with the values; on any
// failure nothing is left in the arena and nil is returned. The caller
// wipes the secret.
func (k *KeyPair) Open(a *arena.Arena, req Request) (*arena.Secret, error) {
	const op = "open"
	if req.Recipient != k.pub {
		return nil, newError("", op, -1, ErrKey)
	}
	if err := req.check(chacha20poly1305.Overhead); err != nil {
		return nil, err
	}
	key, err := a.Alloc(chacha20poly1305.KeySize)
	if err != nil {
		return nil, err
	}
	defer key.Wipe()
	err = k.priv.Reveal(func(priv []byte) error {
		sk, err := ecdh.X25519().NewPrivateKey(priv)
		if err != nil {
			return err
		}
		pk, err := ecdh.X25519().NewPublicKey(req.Ephemeral[:])
		if err != nil {
			return newError("", op, -1, ErrKey)
		}
		shared, err := sk.ECDH(pk)
		if err != nil {
			return newError("", op, -1, ErrKey)
		}
		defer clear(shared)
		return key.Fill(func(dst []byte) error {
			_, err := io.ReadFull(hkdf.New(sha256.New, shared, nil, info(req.Ephemeral, req.Recipient)), dst)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	var out *arena.Secret
	err = key.Reveal(func(kb []byte) error {
		aead, err := chacha20poly1305.New(kb)
		if err != nil {
			return err
		}
		if req.Len() == 0 {
			// No values: only the (empty) message's tag to check.
			if _, err := aead.Open(nil, zeroNonce[:], req.Sealed, AAD(&req)); err != nil {
				return newError(receipts.MalformedRecord, op, -1, ErrAuth)
			}
			return nil
		}
		s, err := a.Open(aead, zeroNonce[:], req.Sealed, AAD(&req))
		if errors.Is(err, arena.ErrAuth) {
			return newError(receipts.MalformedRecord, op, -1, ErrAuth)
		}
		out = s
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
