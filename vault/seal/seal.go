package seal

import (
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"strconv"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
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
	infoPrefix = "privacycut/seal/v1"
	aadPrefix  = "privacycut/seal/v1/value"
)

// Pair is one plaintext (category, value) pair on the client side.
type Pair struct {
	Category string
	Value    []byte
}

// Value is one sealed value: its category in clear and its ciphertext.
type Value struct {
	Category   string
	Ciphertext []byte
}

// Request is a set of sealed values for one recipient key.
type Request struct {
	Ephemeral [KeySize]byte // the client's ephemeral X25519 public key
	Recipient [KeySize]byte // the vault public key the values are sealed to
	Values    []Value
}

// Error is the package's error type: an operation, the index of the value
// at fault (-1 when none) and a sentinel. It never carries value bytes.
type Error struct {
	Code  receipts.Code
	Op    string
	Index int
	Err   error
}

func (e *Error) Error() string {
	s := "seal: " + e.Op
	if e.Index >= 0 {
		s += " value " + strconv.Itoa(e.Index)
	}
	s += ": " + e.Err.Error()
	if e.Code != "" {
		s += " (" + string(e.Code) + ")"
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// Sentinels.
var (
	// ErrAuth: a value failed authentication (wrong key, altered
	// ciphertext, category or position). Code MALFORMED_RECORD.
	ErrAuth = errors.New("value failed authentication")
	// ErrKey: an invalid public key (low order, or the wrong recipient).
	ErrKey = errors.New("invalid or foreign public key")
	// ErrEmpty: an empty value (owner values are never empty). Code
	// MALFORMED_RECORD.
	ErrEmpty = errors.New("empty value")
	// ErrLimit: too many values, or a value or category too long. Code
	// LIMIT_EXCEEDED.
	ErrLimit = errors.New("request over limits")
)

// Seal seals every pair to the vault's public key recipient: a fresh
// ephemeral X25519 key, a shared secret, HKDF-SHA256 with info
// "privacycut/seal/v1" ‖ ephemeral public ‖ recipient public, and
// ChaCha20-Poly1305 per value with nonce = index (12 bytes, big-endian)
// and associated data "privacycut/seal/v1/value" ‖ 0x00 ‖ category ‖ 0x00 ‖
// index (8 bytes, big-endian). It runs on the client (cut) side, whose
// plaintext is in its own heap anyway.
func Seal(recipient [KeySize]byte, pairs []Pair) (Request, error) {
	const op = "seal"
	if len(pairs) > MaxValues {
		return Request{}, &Error{Code: receipts.LimitExceeded, Op: op, Index: -1, Err: ErrLimit}
	}
	curve := ecdh.X25519()
	eph, err := curve.GenerateKey(rand.Reader)
	if err != nil {
		return Request{}, &Error{Op: op, Index: -1, Err: err}
	}
	pub, err := curve.NewPublicKey(recipient[:])
	if err != nil {
		return Request{}, &Error{Op: op, Index: -1, Err: ErrKey}
	}
	shared, err := eph.ECDH(pub)
	if err != nil {
		return Request{}, &Error{Op: op, Index: -1, Err: ErrKey}
	}
	req := Request{Ephemeral: [KeySize]byte(eph.PublicKey().Bytes()), Recipient: recipient}
	key := make([]byte, chacha20poly1305.KeySize)
	if _, err := io.ReadFull(hkdf.New(sha256.New, shared, nil, info(req.Ephemeral, recipient)), key); err != nil {
		return Request{}, &Error{Op: op, Index: -1, Err: err}
	}
	clear(shared)
	aead, err := chacha20poly1305.New(key)
	clear(key)
	if err != nil {
		return Request{}, &Error{Op: op, Index: -1, Err: err}
	}
	size := 0
	for i, p := range pairs {
		if len(p.Value) > MaxValueLen || len(p.Category) == 0 || len(p.Category) > MaxCategoryLen {
			return Request{}, &Error{Code: receipts.LimitExceeded, Op: op, Index: i, Err: ErrLimit}
		}
		if len(p.Value) == 0 {
			return Request{}, &Error{Code: receipts.MalformedRecord, Op: op, Index: i, Err: ErrEmpty}
		}
		size += len(p.Value) + aead.Overhead()
	}
	// Every ciphertext is cut from one slab, and the nonce and associated
	// data are rebuilt in place: sealing ten thousand values allocates
	// twice, not forty thousand times.
	slab := make([]byte, 0, size)
	req.Values = make([]Value, len(pairs))
	var nb [chacha20poly1305.NonceSize]byte
	ad := make([]byte, 0, len(aadPrefix)+MaxCategoryLen+10)
	for i, p := range pairs {
		start := len(slab)
		slab = aead.Seal(slab, putNonce(&nb, i), p.Value, appendAAD(ad[:0], p.Category, i))
		req.Values[i] = Value{Category: p.Category, Ciphertext: slab[start:len(slab):len(slab)]}
	}
	return req, nil
}

func info(eph, recipient [KeySize]byte) []byte {
	b := make([]byte, 0, len(infoPrefix)+2*KeySize)
	b = append(b, infoPrefix...)
	b = append(b, eph[:]...)
	return append(b, recipient[:]...)
}

// putNonce writes the nonce of value i (i as 12 bytes, big-endian) to n.
func putNonce(n *[chacha20poly1305.NonceSize]byte, i int) []byte {
	binary.BigEndian.PutUint32(n[:4], 0)
	binary.BigEndian.PutUint64(n[4:], uint64(i))
	return n[:]
}

// AAD is the associated data of value i: "privacycut/seal/v1/value" ‖ 0x00 ‖
// category ‖ 0x00 ‖ i (8 bytes, big-endian).
func AAD(category string, i int) []byte {
	return appendAAD(make([]byte, 0, len(aadPrefix)+len(category)+10), category, i)
}

func appendAAD(b []byte, category string, i int) []byte {
	b = append(b, aadPrefix...)
	b = append(b, 0)
	b = append(b, category...)
	b = append(b, 0)
	return binary.BigEndian.AppendUint64(b, uint64(i))
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

// Open opens every value of req straight into the arena, in request order.
// The per-request key is derived into the arena too. On any failure every
// secret already opened is wiped and nil is returned; the error names the
// value's index only. The caller wipes the returned secrets.
func (k *KeyPair) Open(a *arena.Arena, req Request) ([]*arena.Secret, error) {
	const op = "open"
	if req.Recipient != k.pub {
		return nil, &Error{Op: op, Index: -1, Err: ErrKey}
	}
	if len(req.Values) > MaxValues {
		return nil, &Error{Code: receipts.LimitExceeded, Op: op, Index: -1, Err: ErrLimit}
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
			return &Error{Op: op, Index: -1, Err: ErrKey}
		}
		shared, err := sk.ECDH(pk)
		if err != nil {
			return &Error{Op: op, Index: -1, Err: ErrKey}
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
	out := make([]*arena.Secret, 0, len(req.Values))
	fail := func(err error) ([]*arena.Secret, error) {
		for _, s := range out {
			s.Wipe()
		}
		return nil, err
	}
	err = key.Reveal(func(kb []byte) error {
		aead, err := chacha20poly1305.New(kb)
		if err != nil {
			return err
		}
		var nb [chacha20poly1305.NonceSize]byte
		ad := make([]byte, 0, len(aadPrefix)+MaxCategoryLen+10)
		for i, v := range req.Values {
			if len(v.Category) == 0 || len(v.Category) > MaxCategoryLen ||
				len(v.Ciphertext) > MaxValueLen+aead.Overhead() {
				return &Error{Code: receipts.LimitExceeded, Op: op, Index: i, Err: ErrLimit}
			}
			if len(v.Ciphertext) <= aead.Overhead() {
				return &Error{Code: receipts.MalformedRecord, Op: op, Index: i, Err: ErrAuth}
			}
			s, err := a.Open(aead, putNonce(&nb, i), v.Ciphertext, appendAAD(ad[:0], v.Category, i))
			if errors.Is(err, arena.ErrAuth) {
				return &Error{Code: receipts.MalformedRecord, Op: op, Index: i, Err: ErrAuth}
			}
			if err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	return out, nil
}
