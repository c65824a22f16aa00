// Package seal carries owner values from the cut process to vaultd without
// their plaintext ever crossing the gRPC transport or the vault's heap, and
// a rehydrated output back from vaultd to the client that asked for it
// without its plaintext crossing the transport.
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
// # The output of a rehydration
//
// The reverse direction carries a rehydrated output (restored values)
// from the vault to the one client that asked for it. The client draws an
// ephemeral X25519 key pair per call (NewOutputKey) and sends the public
// key with the request; the vault draws its own ephemeral key
// (NewOutputSealer), refuses a client key that is not a usable X25519
// public key (ErrKey: all zero or of low order), and derives
//
//	key   = HKDF-SHA256(secret = X25519(vault eph, client eph), salt = none,
//	                    info = "privacycut/seal/v2/output" ‖ vault eph public ‖ client public)
//
// It seals the output in pieces with ChaCha20-Poly1305: piece i under the
// nonce i (big-endian in the last 8 bytes) and the associated data
// "privacycut/seal/v2/output/piece" ‖ 0x00 ‖ the lease id and the return
// digest, each as a 2-byte length and bytes ‖ i (8 bytes) ‖ 1 for the last
// piece, else 0 — the STREAM construction: a piece cannot be altered,
// reordered, dropped or cut off (the last piece is marked), nor opened as
// another lease's or return's output. The client (OutputKey.Opener, which
// wipes its private scalar) opens each piece straight into its output
// buffer. Both keys are new for every call, so the key serves one output.
//
// # Security properties
//
// Guaranteed:
//
//   - Only ciphertext crosses the socket, in both directions: gRPC's
//     pooled buffers and protobuf messages hold sealed bytes, never a
//     value. A rehydrated output opens only with the private key of the
//     client that asked for it, whole and in order, for its lease and
//     return.
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
//     in its own memory, and the opened output in an ordinary buffer.
//   - Wiping of the output direction's key material beyond the package's
//     own buffers: the ephemeral scalars (each cleared once its shared
//     secret is computed), the shared secret and the derived key are
//     cleared, but crypto/ecdh and chacha20poly1305 keep copies in heap
//     objects that are dropped, not wiped. Such a copy decrypts only the one
//     output sealed under it, which a reader would have to have captured.
//   - Confidentiality of the output's length and piece boundaries.
//
// The caller's duties: fetch the vault's public key over the authenticated
// unix socket (never from a file or a network); wipe the secrets Open
// returns; draw a new OutputKey for every rehydration; clear each plaintext
// piece after OutputSealer.Seal, and the opened output after use.
package seal
