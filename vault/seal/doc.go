// Package seal carries owner values from the cut process to vaultd without
// their plaintext ever crossing the gRPC transport or the vault's heap.
//
// The vault holds an X25519 key pair whose private key lives in its arena
// and publishes the public key in its status. The client (Seal) draws an
// ephemeral X25519 key, computes the shared secret, derives one
// ChaCha20-Poly1305 key per request with HKDF-SHA256
//
//	key   = HKDF-SHA256(secret = X25519(eph, vault), salt = none,
//	                    info = "privacycut/seal/v2" ‖ eph public ‖ vault public)
//
// and seals all the request's values, concatenated in order, as one message
// under the all-zero nonce (the key serves one message only: every request
// draws a new ephemeral key). The clear part of the request — the distinct
// categories, each value's category index and each value's length — is the
// associated data (AAD), so that no value can be moved to another position
// or category, cut at another boundary, or carried into another request.
// One message instead of one per value keeps a ten-thousand-value lease to
// one AEAD operation on each side and one bytes field on the wire.
// The vault (KeyPair.Open) derives the key into its arena and opens the
// message straight into one arena secret with arena.Open.
//
// # Security properties
//
// Guaranteed:
//
//   - Only ciphertext crosses the socket: gRPC's pooled receive buffers and
//     protobuf messages hold sealed bytes, never a value.
//   - Opened values exist only in arena memory; a failure leaves nothing
//     in the arena. Errors name at most the index of the value at fault
//     (for a clear-part check), never its bytes.
//   - A request sealed to another public key (an earlier boot of the vault)
//     is refused (ErrKey) before any decryption.
//
// Not guaranteed:
//
//   - Heap copies of key material: crypto/ecdh copies the vault's private
//     scalar and the shared secret into heap objects, hkdf and
//     chacha20poly1305 copy the derived request key into theirs. They are
//     dropped after the request, not wiped. Such a copy lets a reader of the
//     vault's heap decrypt only that request's sealed values, which it would
//     need to have captured too.
//   - Forward secrecy against a compromise of the vault's private key during
//     its boot; the key pair is new at every start.
//   - Confidentiality on the client side: the cut process holds the values
//     in its own memory.
//
// The caller's duties: fetch the vault's public key over the authenticated
// unix socket (never from a file or a network); wipe the secrets Open
// returns.
package seal
