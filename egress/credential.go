package egress

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// MaxCredentialBytes is the largest credential file ReadCredential reads.
const MaxCredentialBytes = 64 << 10

// The fixed reasons of a CredentialError.
const (
	CredNotFound    = "does not exist"
	CredSymlink     = "is a symbolic link"
	CredDenied      = "cannot be opened"
	CredNotRegular  = "is not a regular file"
	CredMode        = "is readable or writable by group or others (want 0600 or stricter)"
	CredOwner       = "is not owned by this user"
	CredTooLarge    = "is larger than 64 KiB"
	CredEmpty       = "is empty"
	CredChars       = "is not one line of printable ASCII without spaces"
	CredUnreadable  = "cannot be read"
	CredNone        = "is required by the wire profile and none was given"
	CredWiped       = "was wiped"
	CredNotEncodedJ = "a credential is never encoded"
)

// CredentialError is a credential file that cannot be used. Its message
// holds a fixed reason only: never the file's bytes, nor its path.
type CredentialError struct {
	Reason string
}

func (e *CredentialError) Error() string { return "egress: credential file " + e.Reason }

// Credential is a provider credential read from a file. It redacts itself
// in every fmt verb and in slog, refuses JSON and text encoding, and is
// readable only through Reveal; Wipe overwrites it. The zero value and a
// nil *Credential hold nothing.
type Credential struct {
	mu sync.Mutex
	b  []byte
}

// ReadCredential reads the credential in the file at path, as it is sent
// to the provider. The file must be a regular file, not a symbolic link
// (it is opened with O_NOFOLLOW), owned by the effective user, with no
// permission for group or others, at most MaxCredentialBytes long, and
// hold one line of printable ASCII without spaces (a final LF or CRLF is
// dropped). Every refusal is a *CredentialError.
func ReadCredential(path string) (*Credential, error) {
	f, err := openCredential(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, MaxCredentialBytes+1)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		clear(buf)
		return nil, &CredentialError{Reason: CredUnreadable}
	}
	if n > MaxCredentialBytes {
		clear(buf)
		return nil, &CredentialError{Reason: CredTooLarge}
	}
	b := buf[:n]
	switch {
	case len(b) >= 2 && b[len(b)-2] == '\r' && b[len(b)-1] == '\n':
		b = b[:len(b)-2]
	case len(b) >= 1 && b[len(b)-1] == '\n':
		b = b[:len(b)-1]
	}
	if len(b) == 0 {
		clear(buf)
		return nil, &CredentialError{Reason: CredEmpty}
	}
	for _, c := range b {
		if c < 0x21 || c > 0x7e {
			clear(buf)
			return nil, &CredentialError{Reason: CredChars}
		}
	}
	c := &Credential{b: make([]byte, len(b))}
	copy(c.b, b)
	clear(buf)
	return c, nil
}

// Reveal calls f with the credential's bytes. f must not keep them: they
// are overwritten by Wipe. A wiped credential is a *CredentialError.
func (c *Credential) Reveal(f func([]byte) error) error {
	if c == nil {
		return &CredentialError{Reason: CredWiped}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.b == nil {
		return &CredentialError{Reason: CredWiped}
	}
	return f(c.b)
}

// Equal reports, in time independent of the bytes, whether the credential
// is b.
func (c *Credential) Equal(b []byte) bool {
	ok := false
	c.Reveal(func(k []byte) error {
		ok = subtle.ConstantTimeCompare(k, b) == 1
		return nil
	})
	return ok
}

// Wipe overwrites the credential's bytes and forgets them.
func (c *Credential) Wipe() {
	if c == nil {
		return
	}
	c.mu.Lock()
	clear(c.b)
	c.b = nil
	c.mu.Unlock()
}

const redacted = "[credential redacted]"

// String returns a fixed redaction.
func (c *Credential) String() string { return redacted }

// GoString returns a fixed redaction.
func (c *Credential) GoString() string { return redacted }

// Format writes a fixed redaction for every verb.
func (c *Credential) Format(f fmt.State, _ rune) { io.WriteString(f, redacted) }

// LogValue returns a fixed redaction.
func (c *Credential) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON refuses: a credential is never encoded.
func (c *Credential) MarshalJSON() ([]byte, error) {
	return nil, &CredentialError{Reason: CredNotEncodedJ}
}

// MarshalText refuses: a credential is never encoded.
func (c *Credential) MarshalText() ([]byte, error) {
	return nil, &CredentialError{Reason: CredNotEncodedJ}
}
