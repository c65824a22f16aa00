// Package client is the Go client of vaultd: it dials the vault's unix
// socket and makes its calls (Status, Seal, CreateLease, Bind, Issued, Claim,
// Consume, Revoke, List, Show, Backup, Restore, Rotate, ProveErasure,
// SealEvidenceKey, Rehydrate). It links neither the vault service nor its
// Badger store: its requests, results and errors are package vaultapi's.
//
// Every error is a *vaultapi.Error with the refusal code and sentinel the
// daemon returned, so vaultapi.CodeOf and errors.Is(err,
// vaultapi.ErrNotFound) work across the socket; a transport failure is
// vaultapi.ErrUnavailable. A refused return or schema wraps the
// *receipts.Refusal (JSON path, line, column, length, fixed reason) that the
// daemon's ReturnRefusal detail describes; a detail outside its alphabet or
// bounds is dropped and the code alone remains.
//
// # Rehydrate
//
// Rehydrate draws an ephemeral X25519 key pair for the call
// (seal.NewOutputKey), sends a header (lease, claim tuple, return digest
// and size, output schema, receipt fields, the cut's evidence key sealed
// with SealEvidenceKey, the ephemeral public key) and the return in 1 MiB
// pieces, and opens each sealed piece of the output straight into one
// buffer of the announced size (at most MaxOutput). It wipes its private
// scalar once the output key is derived; a piece that fails authentication
// fails the call (the lease is consumed by then: the output is lost).
//
// # Security properties
//
// Guaranteed:
//
//   - The client talks only to a vault running as root, as its own
//     effective uid or as a uid of DialOptions.ServerUIDs, as the kernel
//     reports it (SO_PEERCRED): checked when dialing and again in the
//     handshake of every connection, so that no one who could put a socket
//     at the path is sent values sealed to a key of theirs.
//   - Owner values leave the process only sealed to the vault's public key
//     (Seal), the evidence key only sealed (SealEvidenceKey); the output of
//     Rehydrate arrives sealed to a key only this call holds.
//   - Lease records, profiles and reports from the daemon are decoded
//     strictly and bounded (vaultapi.MaxRecord for a lease).
//
// Not guaranteed:
//
//   - Confidentiality of the output in the client process: Rehydrate
//     returns it in an ordinary buffer, which the caller clears.
//     crypto/ecdh and chacha20poly1305 keep heap copies of the output key
//     material, dropped, not wiped (see package vault/seal); the output's
//     length is visible on the socket.
//   - That the server is the vaultd the caller meant: the client trusts
//     whoever listens on the socket path as a trusted uid. Keep the socket
//     directory owned by vaultd's user.
//
// The caller's duties: discard a partial backup (Backup's error); clear
// the output of Rehydrate after use and never hand it to egress.
package client
