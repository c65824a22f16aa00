package receipts

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/privacycut/privacycut/canon"
)

// EvidenceKeySize is the length of an evidence key in bytes.
const EvidenceKeySize = 32

// ErrKeyWiped is returned by Reveal and HMACCanonical once the key has been
// wiped (or for the zero EvidenceKey).
var ErrKeyWiped = errors.New("receipts: evidence key is wiped")

// ErrKeyNotSerializable is returned by every serialization method of
// EvidenceKey: the key never leaves the process through an encoder.
var ErrKeyNotSerializable = errors.New("receipts: evidence key is not serializable")

// ErrKeyFile is wrapped by the errors of LoadOrCreateEvidenceKey that refuse
// an existing key file.
var ErrKeyFile = errors.New("receipts: evidence key file refused")

// EvidenceKey is the local key that makes digests of source-derived material
// unguessable (HMAC-SHA256). Copies of an EvidenceKey share one key, and
// Reveal is the only way to read its bytes.
//
// Every formatter redacts: String, GoString and Format (all verbs) print
// "EvidenceKey(REDACTED)", LogValue is "REDACTED", and MarshalJSON,
// MarshalText and MarshalBinary fail. Where fmt cannot call those methods
// (an EvidenceKey in an unexported struct field) it prints pointer
// addresses: the bytes sit two pointers away, and fmt dereferences a
// pointer only at the top level, even when it re-prints a value after a
// bad verb such as %s on a pointer. Reflection-based dumpers that follow
// every pointer are outside this guarantee.
type EvidenceKey struct {
	s *keyState
}

type keyState struct {
	mu  sync.RWMutex
	key *[EvidenceKeySize]byte // nil once wiped
}

// NewEvidenceKey returns a key holding a copy of b, which must be exactly
// EvidenceKeySize bytes. The caller should clear b afterwards.
func NewEvidenceKey(b []byte) (*EvidenceKey, error) {
	if len(b) != EvidenceKeySize {
		return nil, errors.New("receipts: evidence key must be 32 bytes")
	}
	s := &keyState{key: new([EvidenceKeySize]byte)}
	copy(s.key[:], b)
	return &EvidenceKey{s: s}, nil
}

// use runs fn with the key bytes under the read lock.
func (k EvidenceKey) use(fn func(key []byte)) bool {
	if k.s == nil {
		return false
	}
	k.s.mu.RLock()
	defer k.s.mu.RUnlock()
	if k.s.key == nil {
		return false
	}
	fn(k.s.key[:])
	return true
}

// HMAC returns "hmac-sha256:" and the hex HMAC-SHA256 of b under the key.
// It panics if the key has been wiped: using a destroyed key is a bug, and a
// digest under a zero key would look valid.
func (k EvidenceKey) HMAC(b []byte) string {
	var sum []byte
	if !k.use(func(key []byte) {
		m := hmac.New(sha256.New, key)
		WriteChunked(m, b)
		sum = m.Sum(nil)
	}) {
		panic(ErrKeyWiped)
	}
	return formatDigest(PrefixHMAC, sum)
}

// NewHMAC returns a streaming HMAC-SHA256 under the key; format its Sum with
// FormatHMAC. The returned hash holds state derived from the key, which
// Wipe does not reach. It panics if the key has been wiped.
func (k EvidenceKey) NewHMAC() hash.Hash {
	var m hash.Hash
	if !k.use(func(key []byte) { m = hmac.New(sha256.New, key) }) {
		panic(ErrKeyWiped)
	}
	return m
}

// FormatHMAC writes a 32-byte HMAC-SHA256 sum as "hmac-sha256:<hex>". It
// panics if sum is not 32 bytes long.
func FormatHMAC(sum []byte) string { return formatDigest(PrefixHMAC, sum) }

// HMACCanonical returns the keyed digest of the canonical encoding of v (see
// Marshal).
func (k EvidenceKey) HMACCanonical(v any) (string, error) {
	b, err := canon.Marshal(v)
	if err != nil {
		return "", err
	}
	var sum []byte
	if !k.use(func(key []byte) {
		m := hmac.New(sha256.New, key)
		WriteChunked(m, b)
		sum = m.Sum(nil)
	}) {
		return "", ErrKeyWiped
	}
	return formatDigest(PrefixHMAC, sum), nil
}

// Reveal calls fn with the key bytes and returns its error. It is the only
// way to read the key (to hand it to the verifier plugin). fn must not keep
// the slice or copy it anywhere that outlives the call; the slice is only
// valid during the call, and Wipe waits for it.
func (k EvidenceKey) Reveal(fn func([]byte) error) error {
	var err error
	if !k.use(func(key []byte) { err = fn(key) }) {
		return ErrKeyWiped
	}
	return err
}

// Equal reports in constant time whether k and o hold the same key. A wiped
// key equals nothing.
//
// Equal holds at most one read lock at a time: a read lock taken while
// holding another would deadlock against a Wipe queued in between (the
// same lock twice for copies of one key; the two locks in opposite orders
// for k.Equal(o) and o.Equal(k)). So copies of one key are equal while it is
// live, and otherwise k's bytes are copied out under k's lock into a local
// array, compared under o's, and cleared.
func (k EvidenceKey) Equal(o *EvidenceKey) bool {
	if o == nil || k.s == nil || o.s == nil {
		return false
	}
	if k.s == o.s {
		return k.use(func([]byte) {})
	}
	var a [EvidenceKeySize]byte
	defer clear(a[:])
	if !k.use(func(key []byte) { copy(a[:], key) }) {
		return false
	}
	eq := false
	o.use(func(b []byte) { eq = subtle.ConstantTimeCompare(a[:], b) == 1 })
	return eq
}

// Wipe zeroes the key bytes. Later HMAC and NewHMAC panic, Reveal and
// HMACCanonical fail. Wipe is idempotent and waits for running uses.
func (k EvidenceKey) Wipe() {
	if k.s == nil {
		return
	}
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	if k.s.key != nil {
		clear(k.s.key[:])
		k.s.key = nil
	}
}

const redacted = "EvidenceKey(REDACTED)"

// String returns a redaction, never the key.
func (EvidenceKey) String() string { return redacted }

// GoString returns a redaction, never the key.
func (EvidenceKey) GoString() string { return redacted }

// Format writes a redaction for every verb and flag.
func (EvidenceKey) Format(f fmt.State, _ rune) { io.WriteString(f, redacted) }

// LogValue makes log/slog print "REDACTED".
func (EvidenceKey) LogValue() slog.Value { return slog.StringValue("REDACTED") }

// MarshalJSON fails: the key is never encoded.
func (EvidenceKey) MarshalJSON() ([]byte, error) { return nil, ErrKeyNotSerializable }

// MarshalText fails: the key is never encoded.
func (EvidenceKey) MarshalText() ([]byte, error) { return nil, ErrKeyNotSerializable }

// MarshalBinary fails: the key is never encoded (this also stops
// encoding/gob).
func (EvidenceKey) MarshalBinary() ([]byte, error) { return nil, ErrKeyNotSerializable }

// DefaultEvidenceKeyPath returns where the evidence key lives:
// $PRIVACYCUT_EVIDENCE_KEY if set, else $XDG_DATA_HOME/privacycut/evidence.key
// if XDG_DATA_HOME is an absolute path, else
// ~/.local/share/privacycut/evidence.key.
func DefaultEvidenceKeyPath() (string, error) {
	if p := os.Getenv("PRIVACYCUT_EVIDENCE_KEY"); p != "" {
		return p, nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "privacycut", "evidence.key"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("receipts: evidence key: no home directory: %w", err)
	}
	return filepath.Join(home, ".local", "share", "privacycut", "evidence.key"), nil
}

// LoadOrCreateEvidenceKey reads the evidence key at path, creating it on
// first use.
//
// An existing file is refused (an error wrapping ErrKeyFile) unless it is a
// regular file (not a symbolic link), its mode grants no permission to group
// or other, it is owned by the effective user (on Unix), and it holds exactly
// 32 bytes. It is opened without following a symbolic link and without
// blocking (a FIFO swapped in after the check cannot hang the process), and
// what was opened is checked again.
//
// A missing file is created with 32 bytes from crypto/rand: missing parent
// directories are made with mode 0700 and synced into their parents; the key
// is written to a temporary file opened O_CREAT|O_EXCL with mode 0600 and
// synced, then hard-linked to path, which fails if path exists, so path
// never holds a partial key; the directory is synced last. When two
// processes race, the loser's link fails and it reads the winner's key, so
// both end with the same key.
func LoadOrCreateEvidenceKey(path string) (*EvidenceKey, error) {
	for range 2 {
		k, err := loadKeyFile(path)
		if !errors.Is(err, fs.ErrNotExist) {
			return k, err
		}
		k, err = createKeyFile(path)
		if !errors.Is(err, fs.ErrExist) {
			return k, err
		}
	}
	return loadKeyFile(path)
}

func refuseKeyFile(path, reason string) error {
	return fmt.Errorf("%w: %s: %s", ErrKeyFile, path, reason)
}

func checkKeyInfo(path string, fi fs.FileInfo) error {
	switch {
	case !fi.Mode().IsRegular():
		return refuseKeyFile(path, "not a regular file")
	case fi.Mode().Perm()&0o077 != 0:
		return refuseKeyFile(path, "mode grants group or other access")
	case !ownedByEffectiveUser(fi):
		// Another user (root included) could read or replace it: a key they
		// chose would make every keyed digest guessable to them.
		return refuseKeyFile(path, "not owned by the effective user")
	case fi.Size() != EvidenceKeySize:
		return refuseKeyFile(path, "size is not 32 bytes")
	}
	return nil
}

func loadKeyFile(path string) (*EvidenceKey, error) {
	li, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if err := checkKeyInfo(path, li); err != nil {
		return nil, err
	}
	f, fi, err := openKeyFile(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if !os.SameFile(li, fi) {
		return nil, refuseKeyFile(path, "file replaced while opening")
	}
	var buf [EvidenceKeySize + 1]byte
	defer clear(buf[:])
	n, err := io.ReadFull(f, buf[:])
	if n != EvidenceKeySize || err != io.ErrUnexpectedEOF {
		if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
			return nil, err
		}
		return nil, refuseKeyFile(path, "size is not 32 bytes")
	}
	return NewEvidenceKey(buf[:EvidenceKeySize])
}

// openKeyFile opens the key file at path for reading and checks what it
// opened (checkKeyInfo on the open file). The open follows no symbolic link
// in the last component and does not block: a FIFO or device swapped in
// after the caller's Lstat is refused, never waited on.
func openKeyFile(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|keyOpenFlags, 0)
	if err != nil {
		if isSymlinkOpenError(err) {
			return nil, nil, refuseKeyFile(path, "not a regular file")
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil {
		err = checkKeyInfo(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

func createKeyFile(path string) (*EvidenceKey, error) {
	dir := filepath.Dir(path)
	if err := mkdirAllSync(dir); err != nil {
		return nil, err
	}
	var key [EvidenceKeySize]byte
	defer clear(key[:])
	rand.Read(key[:]) // never fails (Go 1.24+): it aborts the process instead

	var suffix [8]byte
	rand.Read(suffix[:])
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(key[:])
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, path)
	}
	if rerr := os.Remove(tmp); err == nil && rerr != nil {
		err = rerr
	}
	if err != nil {
		return nil, err
	}
	if err := syncDir(dir); err != nil {
		return nil, err
	}
	return NewEvidenceKey(key[:])
}

// mkdirAllSync creates dir and its missing parents with mode 0700, syncing
// each new directory entry into its parent.
func mkdirAllSync(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("receipts: evidence key: %s is not a directory", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := mkdirAllSync(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
