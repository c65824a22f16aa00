package seal

import (
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"

	"github.com/privacycut/privacycut/receipts"
	"golang.org/x/crypto/chacha20poly1305"
	"golang.org/x/crypto/hkdf"
)

// The reverse direction: a rehydrated output, sealed by the vault to an
// ephemeral X25519 key the requesting client drew for that one call.
const (
	outputInfoPrefix = "privacycut/seal/v2/output"
	outputAADPrefix  = "privacycut/seal/v2/output/piece"
	// maxBindingField bounds each field of an OutputBinding (a lease id
	// and a digest are well under it).
	maxBindingField = 1024
)

// ErrOrder: an output piece sealed or opened after the last one.
var ErrOrder = errors.New("output piece after the last")

// OutputBinding names the rehydration a sealed output answers. Both fields
// are in the associated data of every piece, so that an output sealed for
// one lease or return cannot be opened as another's.
type OutputBinding struct {
	Lease        string // the lease id, "pcl:…"
	ReturnDigest string // the claim's return digest, "sha256:…"
}

func (b OutputBinding) check() bool {
	return len(b.Lease) <= maxBindingField && len(b.ReturnDigest) <= maxBindingField
}

// outputAADBase is "privacycut/seal/v2/output/piece" ‖ 0x00 ‖ the lease id
// and the return digest, each as its length (2 bytes, big-endian) and
// bytes. A piece's associated data appends its index (8 bytes) and 1 if it
// is the last piece, else 0.
func outputAADBase(b OutputBinding) []byte {
	a := make([]byte, 0, len(outputAADPrefix)+1+2+len(b.Lease)+2+len(b.ReturnDigest)+9)
	a = append(a, outputAADPrefix...)
	a = append(a, 0)
	a = binary.BigEndian.AppendUint16(a, uint16(len(b.Lease)))
	a = append(a, b.Lease...)
	a = binary.BigEndian.AppendUint16(a, uint16(len(b.ReturnDigest)))
	return append(a, b.ReturnDigest...)
}

// pieceAAD and pieceNonce: piece i is sealed under the nonce i (the last 8
// of its 12 bytes, big-endian) and the associated data base ‖ i ‖ last.
// The key serves one output only, so a counter nonce never repeats.
func pieceAAD(base []byte, i uint64, last bool) []byte {
	a := binary.BigEndian.AppendUint64(base, i)
	if last {
		return append(a, 1)
	}
	return append(a, 0)
}

func pieceNonce(i uint64) []byte {
	var n [chacha20poly1305.NonceSize]byte
	binary.BigEndian.PutUint64(n[4:], i)
	return n[:]
}

// outputAEAD derives the output key from the scalar priv and the peer's
// public key: HKDF-SHA256(secret = X25519(priv, peer), salt = none,
// info = "privacycut/seal/v2/output" ‖ vault ephemeral public ‖ client
// public). The shared secret and the derived key are cleared;
// chacha20poly1305 keeps its own copy of the key.
func outputAEAD(op string, priv []byte, peer, vaultEph, client [KeySize]byte) (cipher.AEAD, error) {
	sk, err := ecdh.X25519().NewPrivateKey(priv)
	if err != nil {
		return nil, newError("", op, -1, err)
	}
	pk, err := ecdh.X25519().NewPublicKey(peer[:])
	if err != nil {
		return nil, newError("", op, -1, ErrKey)
	}
	shared, err := sk.ECDH(pk) // fails for a low-order point
	if err != nil {
		return nil, newError("", op, -1, ErrKey)
	}
	defer clear(shared)
	info := make([]byte, 0, len(outputInfoPrefix)+2*KeySize)
	info = append(info, outputInfoPrefix...)
	info = append(info, vaultEph[:]...)
	info = append(info, client[:]...)
	key := make([]byte, chacha20poly1305.KeySize)
	defer clear(key)
	if _, err := io.ReadFull(hkdf.New(sha256.New, shared, nil, info), key); err != nil {
		return nil, newError("", op, -1, err)
	}
	aead, err := chacha20poly1305.New(key)
	if err != nil {
		return nil, newError("", op, -1, err)
	}
	return aead, nil
}

// newScalar draws an X25519 private scalar and returns it with its public
// key.
func newScalar() ([]byte, [KeySize]byte, error) {
	priv := make([]byte, KeySize)
	rand.Read(priv)
	sk, err := ecdh.X25519().NewPrivateKey(priv)
	if err != nil {
		clear(priv)
		return nil, [KeySize]byte{}, err
	}
	return priv, [KeySize]byte(sk.PublicKey().Bytes()), nil
}

// OutputSealer seals one rehydrated output, piece by piece, to a client's
// public key. It runs in the vault.
type OutputSealer struct {
	aead cipher.AEAD
	eph  [KeySize]byte
	base []byte
	next uint64
	done bool
}

// NewOutputSealer draws the vault's ephemeral X25519 key for one output,
// computes the shared secret with the client's public key recipient and
// derives the output key (outputAEAD); the ephemeral scalar and the shared
// secret are cleared before it returns. A recipient that is not a usable
// X25519 public key (all zero or another low-order point) is ErrKey: call
// it before anything is released, so that such a request fails closed.
func NewOutputSealer(recipient [KeySize]byte, b OutputBinding) (*OutputSealer, error) {
	const op = "seal-output"
	if !b.check() {
		return nil, newError(receipts.LimitExceeded, op, -1, ErrLimit)
	}
	priv, eph, err := newScalar()
	if err != nil {
		return nil, newError("", op, -1, err)
	}
	aead, err := outputAEAD(op, priv, recipient, eph, recipient)
	clear(priv)
	if err != nil {
		return nil, err
	}
	return &OutputSealer{aead: aead, eph: eph, base: outputAADBase(b)}, nil
}

// Ephemeral returns the vault's ephemeral public key, which the client
// needs to open the output.
func (s *OutputSealer) Ephemeral() [KeySize]byte { return s.eph }

// Overhead is the number of bytes a sealed piece adds to its plaintext.
const Overhead = chacha20poly1305.Overhead

// Seal appends the next piece of the output, sealed, to dst; last marks
// the final piece (an empty output is one empty last piece). It reads the
// plaintext piece once and never copies it elsewhere; the caller clears it.
func (s *OutputSealer) Seal(dst, piece []byte, last bool) ([]byte, error) {
	if s.done {
		return nil, newError("", "seal-output", -1, ErrOrder)
	}
	i := s.next
	s.next++
	s.done = last
	return s.aead.Seal(dst, pieceNonce(i), piece, pieceAAD(s.base, i, last)), nil
}

// OutputKey is the client's ephemeral X25519 key pair for one rehydration.
// Its private scalar is wiped by Opener or Wipe.
type OutputKey struct {
	priv []byte
	pub  [KeySize]byte
}

// NewOutputKey draws a key pair for one rehydration.
func NewOutputKey() (*OutputKey, error) {
	priv, pub, err := newScalar()
	if err != nil {
		return nil, newError("", "output-key", -1, err)
	}
	return &OutputKey{priv: priv, pub: pub}, nil
}

// Public returns the public key to send with the request.
func (k *OutputKey) Public() [KeySize]byte { return k.pub }

// Wipe clears the private scalar; the key can open nothing afterwards.
func (k *OutputKey) Wipe() {
	clear(k.priv)
	k.priv = nil
}

// Opener derives the output key from the vault's ephemeral public key
// vaultEph and returns the opener of an output sealed under binding b. It
// wipes the private scalar: a key opens one output.
func (k *OutputKey) Opener(vaultEph [KeySize]byte, b OutputBinding) (*OutputOpener, error) {
	const op = "open-output"
	defer k.Wipe()
	if k.priv == nil {
		return nil, newError("", op, -1, ErrKey)
	}
	if !b.check() {
		return nil, newError(receipts.LimitExceeded, op, -1, ErrLimit)
	}
	aead, err := outputAEAD(op, k.priv, vaultEph, vaultEph, k.pub)
	if err != nil {
		return nil, err
	}
	return &OutputOpener{aead: aead, base: outputAADBase(b)}, nil
}

// OutputOpener opens the pieces of one sealed output, in order.
type OutputOpener struct {
	aead   cipher.AEAD
	base   []byte
	next   uint64
	done   bool // the last piece is open
	broken bool // a piece failed: the output is refused
}

// Open appends the plaintext of the next sealed piece to dst (which must
// not overlap sealed); last says whether the caller expects it to be the
// final piece, and it must be so marked. A piece that fails
// authentication — altered, reordered, dropped, marked last where it is
// not (or the reverse), sealed to another key or bound to another lease or
// return — is ErrAuth, and nothing is appended.
func (o *OutputOpener) Open(dst, sealed []byte, last bool) ([]byte, error) {
	const op = "open-output"
	if o.done || o.broken {
		return dst, newError("", op, -1, ErrOrder)
	}
	i := o.next
	out, err := o.aead.Open(dst, pieceNonce(i), sealed, pieceAAD(o.base, i, last))
	if err != nil {
		o.broken = true // one failure ends the output
		return dst, newError(receipts.MalformedRecord, op, -1, ErrAuth)
	}
	o.next++
	o.done = last
	return out, nil
}

// Done reports whether the last piece has been opened.
func (o *OutputOpener) Done() bool { return o.done }
