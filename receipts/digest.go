package receipts

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strconv"

	"github.com/privacycut/privacycut/canon"
)

// The digest prefixes. A digest is written prefix + 64 lower-case hex digits.
const (
	// PrefixSHA256 marks a plain SHA-256, used only for public material:
	// the export, the vocabulary, the plan, receipts.
	PrefixSHA256 = "sha256:"
	// PrefixHMAC marks an HMAC-SHA256 under the local evidence key, used for
	// anything derived from source material.
	PrefixHMAC = "hmac-sha256:"
)

// SHA256 returns "sha256:" and the lower-case hex SHA-256 of b.
func SHA256(b []byte) string {
	if len(b) <= hashChunk {
		sum := sha256.Sum256(b)
		return FormatSHA256(sum[:])
	}
	h := sha256.New()
	WriteChunked(h, b)
	return FormatSHA256(h.Sum(nil))
}

// hashChunk bounds one Write to a hash. SHA-256's assembly has no
// preemption point: hashing 16 MiB in one call holds its CPU for about
// 10 ms, and a garbage collection that needs that goroutine's stack
// meanwhile spins and signals on the other CPU until it returns.
const hashChunk = 64 << 10

// WriteChunked writes b to h in pieces of at most 64 KiB, so that hashing
// a large buffer stays preemptible. The digest is that of one Write.
func WriteChunked(h hash.Hash, b []byte) {
	for len(b) > hashChunk {
		h.Write(b[:hashChunk])
		b = b[hashChunk:]
	}
	h.Write(b)
}

// NewSHA256 returns a SHA-256 hash whose Sum, given to FormatSHA256, is the
// streaming equivalent of SHA256.
func NewSHA256() hash.Hash { return sha256.New() }

// FormatSHA256 writes a 32-byte SHA-256 sum as "sha256:<hex>". It panics if
// sum is not 32 bytes long: sums come from code, never from input.
func FormatSHA256(sum []byte) string { return formatDigest(PrefixSHA256, sum) }

func formatDigest(prefix string, sum []byte) string {
	if len(sum) != sha256.Size {
		panic("receipts: digest sum must be 32 bytes, got " + strconv.Itoa(len(sum)))
	}
	b := make([]byte, len(prefix)+2*sha256.Size)
	copy(b, prefix)
	hex.Encode(b[len(prefix):], sum)
	return string(b)
}

// DigestError is returned by ParseDigest. It locates the refusal within the
// digest string and never quotes it.
type DigestError struct {
	Code   Code   // always MalformedRecord
	Offset int    // byte offset in the digest string
	Reason string // fixed, content-free description
}

func (e *DigestError) Error() string {
	return "receipts: digest: " + e.Reason + " at byte " + strconv.Itoa(e.Offset)
}

// ParseDigest parses "sha256:<hex>" or "hmac-sha256:<hex>". The hex part
// must be exactly 64 lower-case hex digits. alg is PrefixSHA256 or
// PrefixHMAC.
func ParseDigest(s string) (alg string, sum [32]byte, err error) {
	switch {
	case len(s) >= len(PrefixSHA256) && s[:len(PrefixSHA256)] == PrefixSHA256:
		alg = PrefixSHA256
	case len(s) >= len(PrefixHMAC) && s[:len(PrefixHMAC)] == PrefixHMAC:
		alg = PrefixHMAC
	default:
		return "", sum, &DigestError{Code: MalformedRecord, Offset: 0, Reason: "unknown digest algorithm"}
	}
	h := s[len(alg):]
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return "", sum, &DigestError{Code: MalformedRecord, Offset: len(alg) + i, Reason: "digest is not lower-case hex"}
		}
	}
	if len(h) != 2*len(sum) {
		return "", sum, &DigestError{Code: MalformedRecord, Offset: len(alg) + min(len(h), 2*len(sum)), Reason: "digest is not 64 hex digits"}
	}
	hex.Decode(sum[:], []byte(h))
	return alg, sum, nil
}

// DigestCanonical returns the SHA-256 digest of the canonical encoding of v
// (see Marshal). Use it only for public material; digests of anything
// derived from source material must be keyed: EvidenceKey.HMACCanonical.
func DigestCanonical(v any) (string, error) {
	b, err := canon.Marshal(v)
	if err != nil {
		return "", err
	}
	return SHA256(b), nil
}
