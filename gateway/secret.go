package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"
)

// token is the bearer token of the TCP listener. It redacts itself in every
// fmt verb, slog and encoder; it is compared in constant time and wiped by
// Wipe. Only its SHA-256 is kept: a comparison then takes the same time
// whatever the length of what is offered.
type token struct{ s *tokenState }

type tokenState struct {
	sum   [sha256.Size]byte
	wiped bool
}

const redacted = "[REDACTED]"

// errSecretEncoding is returned by a secret's encoders.
var errSecretEncoding = errors.New("gateway: a secret is never encoded")

func (token) String() string                 { return redacted }
func (token) GoString() string               { return redacted }
func (token) Format(f fmt.State, _ rune)     { io.WriteString(f, redacted) }
func (token) LogValue() slog.Value           { return slog.StringValue(redacted) }
func (token) MarshalJSON() ([]byte, error)   { return nil, errSecretEncoding }
func (token) MarshalText() ([]byte, error)   { return nil, errSecretEncoding }
func (token) MarshalBinary() ([]byte, error) { return nil, errSecretEncoding }

// equal reports, in constant time, whether offered is the token.
func (t token) equal(offered []byte) bool {
	if t.s == nil || t.s.wiped {
		return false
	}
	sum := sha256.Sum256(offered)
	ok := subtle.ConstantTimeCompare(sum[:], t.s.sum[:]) == 1
	clear(sum[:])
	return ok
}

// Wipe clears the token; it then equals nothing.
func (t token) Wipe() {
	if t.s != nil {
		clear(t.s.sum[:])
		t.s.wiped = true
	}
}

// Limits of the token file.
const (
	maxTokenFile = 4096
	minTokenLen  = 16
)

// readToken reads the bearer token: a regular file (not a symlink) of the
// effective user that grants group and other nothing, holding 16 to 4,096
// visible ASCII characters and an optional final newline. Errors name the
// file, never its content.
func readToken(path string) (token, error) {
	data, err := readSecretFile(path, maxTokenFile)
	if err != nil {
		return token{}, err
	}
	defer clear(data)
	if n := len(data); n > 0 && data[n-1] == '\n' {
		data = data[:n-1]
	}
	if len(data) < minTokenLen {
		return token{}, &ConfigError{Field: "listen.token_file", Reason: fmt.Sprintf("%s: a token of at least %d characters", path, minTokenLen)}
	}
	for _, c := range data {
		if c < 0x21 || c > 0x7e {
			return token{}, &ConfigError{Field: "listen.token_file", Reason: path + ": the token holds a character other than visible ASCII"}
		}
	}
	return token{s: &tokenState{sum: sha256.Sum256(data)}}, nil
}

// readSecretFile reads a file that holds a secret: opened without
// following a symlink, a regular file owned by the effective user, mode
// without group or other bits, at most max bytes.
func readSecretFile(path string, max int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, &ConfigError{Field: "listen.token_file", Reason: path + ": cannot be opened (a symlink is refused)", Err: errors.Unwrap(err)}
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := checkSecretFile(path, fi, max); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		clear(data)
		return nil, &ConfigError{Field: "listen.token_file", Reason: path + ": larger than the limit"}
	}
	return data, nil
}

func checkSecretFile(path string, fi os.FileInfo, max int64) error {
	switch {
	case !fi.Mode().IsRegular():
		return &ConfigError{Field: "listen.token_file", Reason: path + ": not a regular file"}
	case fi.Mode().Perm()&0o077 != 0:
		return &ConfigError{Field: "listen.token_file", Reason: fmt.Sprintf("%s: mode %#o grants group or other access; want 0600", path, fi.Mode().Perm())}
	case !ownedByEUID(fi):
		return &ConfigError{Field: "listen.token_file", Reason: path + ": not owned by the gateway's user"}
	case fi.Size() > max:
		return &ConfigError{Field: "listen.token_file", Reason: path + ": larger than the limit"}
	}
	return nil
}

func ownedByEUID(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

func ownedByGroup(fi os.FileInfo, gid int) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Gid) == gid
}
