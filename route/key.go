package route

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/mod/sumdb/note"
)

// algEd25519 is the note format's algorithm byte for Ed25519, the only one.
const algEd25519 = 1

// signerPrefix begins every signer key text.
const signerPrefix = "PRIVATE+KEY+"

// maxSignerKeyText bounds a signer key text: the prefix, a name of at most
// MaxNameBytes, 8 hex digits, the base64 of 33 bytes and three '+'.
const maxSignerKeyText = len(signerPrefix) + MaxNameBytes + 1 + 8 + 1 + 44

// SignerKey is a route signer key: an Ed25519 private key with its name,
// in the signed-note format of golang.org/x/mod/sumdb/note. Its text is
//
//	PRIVATE+KEY+<name>+<8 hex digits of the key hash>+<base64 of 0x01 and the 32-byte seed>
//
// exactly as note.GenerateKey writes it, and its verifier key is
// <name>+<hash>+<base64 of 0x01 and the public key>.
//
// A SignerKey redacts itself: String, GoString and Format (every verb)
// print "SignerKey(REDACTED)", LogValue is "REDACTED", and MarshalJSON,
// MarshalText and MarshalBinary fail. Reveal is the only way to its text;
// Wipe zeroes it. It is safe for concurrent use.
type SignerKey struct {
	s *signerState
}

type signerState struct {
	mu   sync.RWMutex
	name string
	hash uint32
	vkey string
	priv *[ed25519.PrivateKeySize]byte // seed then public key; nil once wiped
}

var _ note.Signer = noteSigner{}

// GenerateKey makes a signer key named name, reading its 32-byte seed from
// rand (crypto/rand.Reader; a fixed reader only to make test vectors). The
// name must be 1 to 64 ASCII letters, digits, '.', '_' or '-', beginning
// with a letter or digit: key names are printed in errors and logs as they
// are.
func GenerateKey(rand io.Reader, name string) (*SignerKey, error) {
	if !validName(name) {
		return nil, refuse("key", "name is not 1 to 64 ASCII letters, digits, '.', '_' or '-', beginning with a letter or digit")
	}
	var seed [ed25519.SeedSize]byte
	defer clear(seed[:])
	if _, err := io.ReadFull(rand, seed[:]); err != nil {
		return nil, fmt.Errorf("route: key: reading randomness: %w", err)
	}
	return newSignerKey(name, seed[:], nil)
}

// newSignerKey builds the key of seed; if wantHash is not nil, the key's
// hash must equal it.
func newSignerKey(name string, seed []byte, wantHash *uint32) (*SignerKey, error) {
	priv := ed25519.NewKeyFromSeed(seed)
	defer clear(priv)
	vkey, err := note.NewEd25519VerifierKey(name, ed25519.PublicKey(priv[ed25519.SeedSize:]))
	if err != nil {
		return nil, refuse("key", "cannot derive the verifier key")
	}
	hash, ok := verifierHash(vkey, name)
	if !ok {
		return nil, refuse("key", "cannot derive the verifier key")
	}
	if wantHash != nil && *wantHash != hash {
		return nil, refuse("key", "key hash does not match the key")
	}
	s := &signerState{name: name, hash: hash, vkey: vkey, priv: new([ed25519.PrivateKeySize]byte)}
	copy(s.priv[:], priv)
	return &SignerKey{s: s}, nil
}

// verifierHash reads the hash of a verifier key named name.
func verifierHash(vkey, name string) (uint32, bool) {
	rest, ok := strings.CutPrefix(vkey, name+"+")
	if !ok || len(rest) < 9 || rest[8] != '+' {
		return 0, false
	}
	h, err := strconv.ParseUint(rest[:8], 16, 32)
	return uint32(h), err == nil
}

// ParseSignerKey reads a signer key text (as note.GenerateKey and
// GenerateKey write it), optionally followed by one newline. The text is
// read without being copied into a string; the caller should clear text
// afterwards.
func ParseSignerKey(text []byte) (*SignerKey, error) {
	malformed := func() error { return &KeyError{Reason: "not a signer key of the signed-note format"} }
	text = bytes.TrimSuffix(text, []byte("\n"))
	// The base64 decoder skips CR and LF: refuse them here, so that one key
	// has one text.
	if len(text) > maxSignerKeyText || !bytes.HasPrefix(text, []byte(signerPrefix)) || bytes.ContainsAny(text, "\r\n") {
		return nil, malformed()
	}
	// The base64 alphabet holds '+': the name, the hash, and the rest.
	fields := bytes.SplitN(text[len(signerPrefix):], []byte("+"), 3)
	if len(fields) != 3 {
		return nil, malformed()
	}
	name := string(fields[0])
	if !validName(name) {
		return nil, &KeyError{Reason: "key name is not 1 to 64 ASCII letters, digits, '.', '_' or '-'"}
	}
	if len(fields[1]) != 8 {
		return nil, malformed()
	}
	var hb [4]byte
	if _, err := hex.Decode(hb[:], fields[1]); err != nil || !bytes.Equal(fields[1], bytes.ToLower(fields[1])) {
		return nil, malformed()
	}
	hash := uint32(hb[0])<<24 | uint32(hb[1])<<16 | uint32(hb[2])<<8 | uint32(hb[3])
	var raw [1 + ed25519.SeedSize + 2]byte // room to see a key too long
	defer clear(raw[:])
	enc := base64.StdEncoding.Strict()
	if enc.DecodedLen(len(fields[2])) > len(raw) {
		return nil, malformed()
	}
	n, err := enc.Decode(raw[:], fields[2])
	if err != nil || n != 1+ed25519.SeedSize || raw[0] != algEd25519 {
		return nil, malformed()
	}
	k, err := newSignerKey(name, raw[1:1+ed25519.SeedSize], &hash)
	if err != nil {
		return nil, &KeyError{Reason: "key hash does not match the key"}
	}
	return k, nil
}

// use runs fn with the private key under the read lock.
func (k SignerKey) use(fn func(priv []byte)) bool {
	if k.s == nil {
		return false
	}
	k.s.mu.RLock()
	defer k.s.mu.RUnlock()
	if k.s.priv == nil {
		return false
	}
	fn(k.s.priv[:])
	return true
}

// Name returns the key's name (public).
func (k SignerKey) Name() string { return k.s.name }

// KeyHash returns the key's 32-bit hash (public).
func (k SignerKey) KeyHash() uint32 { return k.s.hash }

// VerifierKey returns the verifier key text (public): what a trust list
// holds.
func (k SignerKey) VerifierKey() string { return k.s.vkey }

// Reveal calls fn with the signer key text (no newline) and returns its
// error: the one way to the key's text, to write it to its file. The slice
// is cleared when fn returns; fn must not keep it.
func (k SignerKey) Reveal(fn func(text []byte) error) error {
	var err error
	if !k.use(func(priv []byte) {
		var raw [1 + ed25519.SeedSize]byte
		defer clear(raw[:])
		raw[0] = algEd25519
		copy(raw[1:], priv[:ed25519.SeedSize])
		b := make([]byte, 0, maxSignerKeyText)
		defer func() { clear(b[:cap(b)]) }()
		b = append(b, signerPrefix...)
		b = append(b, k.s.name...)
		b = fmt.Appendf(b, "+%08x+", k.s.hash)
		n := base64.StdEncoding.EncodedLen(len(raw))
		b = b[:len(b)+n]
		base64.StdEncoding.Encode(b[len(b)-n:], raw[:])
		err = fn(b)
	}) {
		return ErrKeyWiped
	}
	return err
}

// Wipe zeroes the private key. Later signing and Reveal fail with
// ErrKeyWiped. Wipe is idempotent and waits for running uses.
func (k SignerKey) Wipe() {
	if k.s == nil {
		return
	}
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	if k.s.priv != nil {
		clear(k.s.priv[:])
		k.s.priv = nil
	}
}

const signerRedacted = "SignerKey(REDACTED)"

// String returns a redaction, never the key.
func (SignerKey) String() string { return signerRedacted }

// GoString returns a redaction, never the key.
func (SignerKey) GoString() string { return signerRedacted }

// Format writes a redaction for every verb and flag.
func (SignerKey) Format(f fmt.State, _ rune) { io.WriteString(f, signerRedacted) }

// LogValue makes log/slog print "REDACTED".
func (SignerKey) LogValue() slog.Value { return slog.StringValue("REDACTED") }

// MarshalJSON fails: the key is never encoded.
func (SignerKey) MarshalJSON() ([]byte, error) { return nil, ErrKeyNotSerializable }

// MarshalText fails: the key is never encoded.
func (SignerKey) MarshalText() ([]byte, error) { return nil, ErrKeyNotSerializable }

// MarshalBinary fails: the key is never encoded (this also stops
// encoding/gob).
func (SignerKey) MarshalBinary() ([]byte, error) { return nil, ErrKeyNotSerializable }

// noteSigner signs notes with a SignerKey.
type noteSigner struct{ k *SignerKey }

func (s noteSigner) Name() string    { return s.k.s.name }
func (s noteSigner) KeyHash() uint32 { return s.k.s.hash }
func (s noteSigner) Sign(msg []byte) ([]byte, error) {
	var sig []byte
	if !s.k.use(func(priv []byte) { sig = ed25519.Sign(ed25519.PrivateKey(priv), msg) }) {
		return nil, ErrKeyWiped
	}
	return sig, nil
}

// KeyError is a signer key or trust file that is refused, or a signer key
// text that is malformed. It wraps ErrKeyFile (and, for a signer key file
// that exists already, fs.ErrExist). File is the path the caller gave;
// Reason is fixed text; neither holds a byte of a key.
type KeyError struct {
	File   string
	Reason string
	Err    error // fs.ErrExist, or nil
}

func (e *KeyError) Error() string {
	if e.File == "" {
		return "route: key: " + e.Reason
	}
	return "route: key file " + e.File + ": " + e.Reason
}

func (e *KeyError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrKeyFile, e.Err}
	}
	return []error{ErrKeyFile}
}
