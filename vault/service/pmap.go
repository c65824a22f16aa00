package service

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base32"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"runtime"
	"strings"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// Categories are the owner categories a map may hold, in the grammar's
// order. "credential" is always prohibited.
var Categories = []string{"module", "package", "function", "file", "team", "person", "host"}

const prohibitedCategory = "credential"

// categoryIndex returns the 1-based index of a category, or a refusal code.
func categoryIndex(c string) (byte, receipts.Code) {
	for i, k := range Categories {
		if k == c {
			return byte(i + 1), ""
		}
	}
	if c == prohibitedCategory {
		return 0, receipts.ProhibitedCategory
	}
	return 0, receipts.UnknownCategory
}

// The map plaintext, built and read only in the arena:
//
//	"PCM1" ‖ count (4, BE) ‖ entry*
//	entry = category index (1) ‖ mac (20 base32 chars) ‖ value length (4, BE) ‖ value
//
// A token is "pcv:" ‖ namespace ‖ ":" ‖ category ‖ ":" ‖ mac; the
// namespace is the lease's. Entries are in first-appearance order of
// distinct tokens.
const (
	mapMagic    = "PCM1"
	macLen      = 20
	entryHeader = 1 + macLen + 4
	tokenPrefix = "pcv:"
	tokenDomain = "privacycut/token/v1"

	// MaxMapBytes bounds a map's plaintext (4 MiB); a larger request is
	// LIMIT_EXCEEDED. The arena usually bounds it first.
	MaxMapBytes = 4 << 20
)

var b32 = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Token formats a token of the namespace.
func Token(namespace, category, mac string) string {
	return tokenPrefix + namespace + ":" + category + ":" + mac
}

// entry is one map entry being built: its value stays where it was opened,
// at off and n bytes long in the request's values secret.
type entry struct {
	cat    byte
	mac    string
	off, n int
}

// msgLen is the length of the message tokenMAC hashes for a value of n
// bytes in category.
func msgLen(category string, n int) int { return len(tokenDomain) + 1 + len(category) + 1 + n }

// tokenMAC computes the mac of DESIGN.md "Tokens": the first 100 bits of
// HMAC-SHA256(nskey, "privacycut/token/v1" 0x00 category 0x00 value), as 20
// lower-case base32 characters. value is a view of arena memory. The
// message is assembled in scratch, the caller's arena buffer of at least
// msgLen bytes (revealed for writing),
// and hashed in one Write, so SHA-256 reads whole blocks straight from the
// arena; only the final partial block is buffered inside the hash state,
// which scrub then overwrites. The message is left in scratch for the
// caller to wipe.
func tokenMAC(scratch []byte, h hash.Hash, category string, value []byte) (string, error) {
	n := msgLen(category, len(value))
	if n > len(scratch) {
		return "", vaultapi.New(receipts.LimitExceeded, "create", "values", nil)
	}
	msg := scratch[:n]
	i := copy(msg, tokenDomain)
	msg[i] = 0
	i++
	i += copy(msg[i:], category)
	msg[i] = 0
	i++
	copy(msg[i:], value)
	var sum [sha256.Size]byte
	h.Reset()
	h.Write(msg)
	h.Sum(sum[:0])
	scrub(h)
	return b32.EncodeToString(sum[:13])[:macLen], nil
}

// scrubStack overwrites 8 KiB of stack below the caller's frame, where the
// hash functions just ran: SHA-256's Sum copies its state, including the
// message's last partial block, into a local. Best effort: a stack that
// grew in between was copied and its old copy freed unwiped.
//
//go:noinline
func scrubStack() {
	var buf [8 << 10]byte
	clearBytes(buf[:])
}

//go:noinline
func clearBytes(b []byte) {
	clear(b)
	runtime.KeepAlive(b)
}

// scrub overwrites the block buffer a hash keeps between writes (best
// effort: the buffer held the tail of the last message).
func scrub(h hash.Hash) {
	var zero [63]byte
	h.Reset()
	h.Write(zero[:])
	h.Reset()
}

// newMAC returns HMAC-SHA256 keyed with the namespace key. hmac.New copies
// the key into heap pads; the hash is dropped when the lease is issued.
func newMAC(nskey *arena.Secret) (hash.Hash, error) {
	var h hash.Hash
	err := nskey.Reveal(func(k []byte) error {
		h = hmac.New(sha256.New, k)
		return nil
	})
	return h, err
}

// buildMap writes the map plaintext of entries into a new arena secret,
// copying each value arena to arena out of values (the request's opened
// values, nil when there are none).
func buildMap(a *arena.Arena, entries []entry, values *arena.Secret) (*arena.Secret, error) {
	size := len(mapMagic) + 4
	for _, e := range entries {
		size += entryHeader + e.n
	}
	if size > MaxMapBytes {
		return nil, vaultapi.New(receipts.LimitExceeded, "create", "values", nil)
	}
	s, err := a.Alloc(size)
	if err != nil {
		return nil, err
	}
	err = s.Fill(func(dst []byte) error {
		i := copy(dst, mapMagic)
		binary.BigEndian.PutUint32(dst[i:], uint32(len(entries)))
		i += 4
		if len(entries) == 0 {
			return nil
		}
		return values.Reveal(func(all []byte) error {
			for _, e := range entries {
				dst[i] = e.cat
				copy(dst[i+1:], e.mac)
				binary.BigEndian.PutUint32(dst[i+1+macLen:], uint32(e.n))
				i += entryHeader
				i += copy(dst[i:], all[e.off:e.off+e.n])
			}
			return nil
		})
	})
	if err != nil {
		s.Wipe()
		return nil, err
	}
	return s, nil
}

// walkMap calls fn for every entry of a map plaintext b. It returns false if
// b is not a well-formed map (which, behind an authenticated decryption,
// means a bug or a foreign format: the map is unrecoverable).
func walkMap(b []byte, fn func(cat byte, mac []byte, value []byte) bool) bool {
	if len(b) < len(mapMagic)+4 || string(b[:len(mapMagic)]) != mapMagic {
		return false
	}
	n := binary.BigEndian.Uint32(b[len(mapMagic):])
	if n > seal.MaxValues {
		return false
	}
	i := len(mapMagic) + 4
	for range n {
		if len(b)-i < entryHeader {
			return false
		}
		cat := b[i]
		mac := b[i+1 : i+1+macLen]
		vlen := int(binary.BigEndian.Uint32(b[i+1+macLen:]))
		i += entryHeader
		if cat < 1 || int(cat) > len(Categories) || !validMAC(mac) || vlen < 1 || vlen > seal.MaxValueLen || vlen > len(b)-i {
			return false
		}
		if !fn(cat, mac, b[i:i+vlen]) {
			return true
		}
		i += vlen
	}
	return i == len(b)
}

func validMAC(m []byte) bool {
	for _, c := range m {
		if !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return len(m) == macLen
}

// Map is a lease's pseudonym map, decrypted into the arena for the duration
// of a WithMap callback. Its values are reachable only through Lookup's
// callback. It redacts itself in every formatter and logger and refuses
// encoding. Do not retain it past the callback: it is wiped on return.
type Map struct {
	s  *arena.Secret
	ns string
	n  int
}

// Len returns the number of entries.
func (m *Map) Len() int { return m.n }

// Namespace returns the lease's token namespace.
func (m *Map) Namespace() string { return m.ns }

// Tokens returns every issued token in issue order. Tokens are not secret:
// they are what the export carries.
func (m *Map) Tokens() ([]string, error) {
	var out []string
	err := m.s.Reveal(func(b []byte) error {
		walkMap(b, func(cat byte, mac, _ []byte) bool {
			out = append(out, Token(m.ns, Categories[cat-1], string(mac)))
			return true
		})
		return nil
	})
	return out, err
}

// Lookup finds an exact issued token and calls fn with its category and
// value. The value slice is arena memory: fn must not retain it, copy it to
// ordinary memory or convert it to a string. A token of another namespace
// is TOKEN_OTHER_NAMESPACE, any other unknown token TOKEN_NOT_ISSUED.
func (m *Map) Lookup(token string, fn func(category string, value []byte) error) error {
	const op = "lookup"
	rest, ok := strings.CutPrefix(token, tokenPrefix)
	if !ok {
		return refusal(op, receipts.TokenNotIssued)
	}
	ns, rest, ok := strings.Cut(rest, ":")
	if !ok {
		return refusal(op, receipts.TokenNotIssued)
	}
	if ns != m.ns {
		return refusal(op, receipts.TokenOtherNamespace)
	}
	cat, mac, ok := strings.Cut(rest, ":")
	idx, code := categoryIndex(cat)
	if !ok || code != "" || len(mac) != macLen {
		return refusal(op, receipts.TokenNotIssued)
	}
	found := false
	var fnErr error
	err := m.s.Reveal(func(b []byte) error {
		walkMap(b, func(c byte, mc, v []byte) bool {
			if c == idx && string(mc) == mac {
				found = true
				fnErr = fn(cat, v)
				return false
			}
			return true
		})
		return nil
	})
	switch {
	case err != nil:
		return err
	case !found:
		return refusal(op, receipts.TokenNotIssued)
	}
	return fnErr
}

// slots reports the arena position of the map's plaintext (for tests that
// check it is zeroed after use).
func (m *Map) slots() (off, n int) { return m.s.Slot() }

const redacted = "REDACTED"

// String returns "REDACTED".
func (m *Map) String() string { return redacted }

// GoString returns "REDACTED".
func (m *Map) GoString() string { return redacted }

// Format writes "REDACTED" for every verb.
func (m *Map) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, redacted) }

// LogValue logs "REDACTED".
func (m *Map) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON refuses: a map never becomes JSON.
func (m *Map) MarshalJSON() ([]byte, error) { return nil, errEncode }

// MarshalText refuses: a map never becomes text.
func (m *Map) MarshalText() ([]byte, error) { return nil, errEncode }

// MarshalBinary refuses: a map never becomes bytes.
func (m *Map) MarshalBinary() ([]byte, error) { return nil, errEncode }

var errEncode = invalid("encode", "map")

// mapAAD binds a sealed map to its lease's grant: "privacycut/map/v2", then
// the lease id, run, target, purpose, namespace, source digest, station and
// principal (each a 4-byte big-endian length and its bytes), the attempt (4
// bytes), the grant epoch (8 bytes) and the grant time and deadline (8
// bytes each, Unix nanoseconds), all big-endian. A lease granted with an
// output schema digest starts "privacycut/map/v3" instead and ends with
// the digest (a 4-byte length and its bytes), so that the digest cannot be
// dropped or changed either. The lease record itself is not authenticated
// in the store: a record changed there (by a doctored backup restored over
// a lost state directory, say) to give the map to another principal, a
// later deadline or another schema no longer opens it
// (LEASE_UNRECOVERABLE). Fields set at Bind are not bound: Bind checks
// them.
func mapAAD(l *lease.Lease) []byte {
	b := make([]byte, 0, 192+len(l.ID)+len(l.Run)+len(l.Target)+len(l.Purpose)+len(l.Principal))
	if l.OutputSchemaDigest == "" {
		b = append(b, "privacycut/map/v2"...)
	} else {
		b = append(b, "privacycut/map/v3"...)
	}
	for _, f := range []string{l.ID, l.Run, l.Target, l.Purpose, l.Namespace, l.SourceDigest, l.Station, l.Principal} {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	b = binary.BigEndian.AppendUint32(b, l.Attempt)
	b = binary.BigEndian.AppendUint64(b, l.KeyEpoch)
	b = binary.BigEndian.AppendUint64(b, uint64(l.CreatedAt.UnixNano()))
	b = binary.BigEndian.AppendUint64(b, uint64(l.Deadline.UnixNano()))
	if l.OutputSchemaDigest != "" {
		b = binary.BigEndian.AppendUint32(b, uint32(len(l.OutputSchemaDigest)))
		b = append(b, l.OutputSchemaDigest...)
	}
	return b
}
