// Package server is vaultd's gRPC server over a unix socket: it serves a
// service.Vault to the clients of package vault/client.
//
// Calls: Status, CreateLease, Bind, Issued, Claim, Consume, Revoke, List, Show,
// Backup (server stream), Restore (client stream), Rotate, ProveErasure
// (client stream) and Rehydrate (both directions streamed). The wire
// format (vault/internal/vaultpb) never appears in an exported signature;
// the request and result types are package vaultapi's.
//
// # Rehydrate
//
// The server refuses a header whose output_key is missing or not a usable
// X25519 public key (InvalidArgument, field output_key) before it reads the
// return, so the lease is not touched; otherwise it reads exactly the
// declared size (at most rehydrate.MaxReturnBytes), runs the vault's
// Rehydrate and streams the output back sealed to output_key
// (seal.OutputSealer, bound to the lease and the return digest) in pieces
// of 1 MiB of plaintext, clearing each plaintext piece once it is sealed.
// The first message carries the output's size and the vault's ephemeral
// public key, the last one the RehydrationReceipt@1 and the consumed lease.
//
// # Authentication
//
// Listen creates the socket 0600 in a 0700 directory owned by vaultd's
// uid. The transport credentials read each connection's SO_PEERCRED in the
// handshake and close the connection unless the peer's uid is on the
// allow-list (default: the server's own uid), before gRPC reads a frame,
// so no handler runs for it. A unary and a stream interceptor re-check the
// uid from the connection's AuthInfo for every call. The principal the
// vault records is "uid:<n>" of that peer.
//
// # Errors
//
// Every error leaves as a gRPC status built from the one table of package
// vault/internal/rpc: the status message is the *vaultapi.Error's own text
// (codes, operations and field names only) and a Refusal detail carries
// its code, operation, field and class; a refused return or schema adds a
// ReturnRefusal detail (document, JSON path, line, column, length, fixed
// reason). An error matching no row is Internal with the generic message
// "vault: internal error" (the daemon logs the cause).
//
// # Security properties
//
// Guaranteed:
//
//   - Only uids on the allow-list reach a handler; a refused connection is
//     counted (Server.Rejected) and handles no call (Server.Calls).
//   - No message carries a plaintext value or map material: values arrive
//     sealed to the vault (package vault/seal), the output of Rehydrate
//     leaves sealed to the ephemeral key of the client that asked for it,
//     responses carry tokens, public lease records and reports.
//   - The server keeps no plaintext of a rehydration's output once the call
//     ends: the service's output buffer, its one heap copy, is cleared
//     1 MiB piece by piece as each piece is sealed (whole on every error
//     path).
//   - A Rehydrate without a usable output key is refused before the lease
//     is claimed; the refusal names the field, never a value.
//   - Error statuses never carry values.
//
// Not guaranteed:
//
//   - Confidentiality from root or from processes of an allowed uid: the
//     socket is plain (no TLS); its protection is the 0700 directory and the
//     peer-credential check.
//   - Clearing gRPC's pooled buffers: they hold sealed values, exports,
//     sealed outputs and backup bytes (all ciphertext or public) until
//     reused.
//   - Delivery of a rehydration: once the vault has consumed the lease, a
//     broken connection loses the output for good.
//
// The caller's duties: place the socket in a directory only vaultd's user
// can write, and list on the allow-list exactly the uids that may use the
// vault.
package server
