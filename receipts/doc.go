// Package receipts holds privacycut's evidence vocabulary: refusal codes,
// the evidence types, digests and the local evidence key. Every document
// is read and written through package canon (strict JSON, RFC 8785).
//
// # Digests and the evidence key
//
// Digests are written "sha256:<hex>" ([PrefixSHA256]) for public material
// and "hmac-sha256:<hex>" ([PrefixHMAC]) for anything derived from source
// material, keyed under the local [EvidenceKey]. Structured values are
// digested over their canonical form ([DigestCanonical],
// [EvidenceKey.HMACCanonical]). [ParseDigest] accepts only a known prefix
// and exactly 64 lower-case hex digits.
//
// The evidence key is 32 random bytes in a file of mode 0600 at
// [DefaultEvidenceKeyPath], created on first use by
// [LoadOrCreateEvidenceKey].
//
// Owner values in the clear travel as [Plaintext] (a decoded value on its way
// to a token source, a rehydrated output): it redacts itself in every fmt
// verb and logger and refuses every encoder, as the key does.
//
// # Security properties
//
// Guaranteed:
//
//   - Errors are content-free: no error of this package contains bytes of a
//     key or of a digest being parsed, only fixed reasons and offsets.
//   - The evidence key never leaves through formatting or encoding: every fmt
//     verb, slog and encoding method prints a redaction or fails; Reveal is
//     the only accessor; Wipe zeroes it.
//   - A key file is never read if it is not a regular file of exactly 32
//     bytes with no group or other permission, owned by the effective user
//     (on Unix), and never exists half-written. Opening it follows no
//     symbolic link and never blocks, and the opened file is checked again.
//
// Not guaranteed:
//
//   - Plain SHA-256 digests do not hide guessable content: an observer can
//     confirm a guess of what was digested. Use the keyed digest for anything
//     derived from source material.
//   - The evidence key is not memory-locked, and hash states returned by
//     NewHMAC hold key-derived state that Wipe does not reach.
//   - LoadOrCreateEvidenceKey checks the key file, not the directories above
//     it.
//
// The caller's duties: digest with DigestCanonical or HMACCanonical rather
// than over hand-assembled bytes; keep the key directory private to the
// user; never copy the slice passed by Reveal out of its callback; Wipe the
// key when done; and never show the text a refusal points at except on the
// local terminal of the user who owns it.
package receipts
