// Package api is vaultd's gRPC API over a unix socket: the server that
// wraps a service.Vault, and the Go client that cut uses.
//
// Calls: Status, CreateLease, Bind, Claim, Consume, Revoke, List, Show,
// Backup (server stream), Restore (client stream), Rotate, ProveErasure
// (client stream) and Rehydrate (both directions streamed). The wire
// format (internal/vaultpb) never appears in an exported signature: the
// client takes and returns the service's types.
//
// # Rehydrate
//
// Client.Rehydrate draws an ephemeral X25519 key pair for the call
// (seal.NewOutputKey) and sends a header (lease, claim tuple, return digest
// and size, output schema, receipt fields, the cut's evidence key sealed
// with Client.SealEvidenceKey, the ephemeral public key as output_key) and
// the return in 1 MiB pieces. The server refuses a header whose output_key
// is missing or not a usable X25519 public key (InvalidArgument, field
// output_key) before it reads the return, so the lease is not touched;
// otherwise it reads exactly the declared size (at most
// rehydrate.MaxReturnBytes), runs service.Vault.Rehydrate and streams the
// output back sealed to output_key (seal.OutputSealer, bound to the lease
// and the return digest) in pieces of 1 MiB of plaintext, clearing each
// plaintext piece once it is sealed; the first message carries the
// output's size and the vault's ephemeral public key, the last one the
// RehydrationReceipt@1 and the consumed lease. The client opens each piece
// straight into one buffer of the announced size and wipes its private
// scalar once the output key is derived; a piece that fails
// authentication fails the call (the lease is consumed by then: the output
// is lost). A refused return or schema carries, besides the
// Refusal detail, a ReturnRefusal detail (document, JSON path, line,
// column, length, fixed reason), which the client turns back into the
// *receipts.Refusal the *service.Error wraps;
// a detail outside its alphabet or bounds is dropped.
//
// # Authentication
//
// Listen creates the socket 0600 in a 0700 directory. The server's
// transport credentials read each connection's SO_PEERCRED in the
// handshake and close the connection unless the peer's uid is on the
// allow-list (default: the server's own uid) — before gRPC reads a frame,
// so no handler runs for it. A unary and a stream interceptor re-check the
// uid from the connection's AuthInfo for every call. The principal the
// vault records is "uid:<n>" of that peer.
//
// # Errors
//
// One table (errorTable) maps every vault error class to a gRPC status
// code, in both directions. The status message is the error's own text,
// which holds codes, operations and field names only; a Refusal detail
// carries the refusal code, the operation, the field and the class. The
// client rebuilds a *service.Error from it, so service.CodeOf and
// errors.Is(err, service.ErrNotFound) work across the socket. An error
// matching no row is Internal with the generic message "vault: internal
// error" (the daemon logs the cause).
//
// # Security properties
//
// Guaranteed:
//
//   - Only uids on the allow-list reach a handler; a refused connection is
//     counted (Server.Rejected) and handles no call (Server.Calls).
//   - No message carries a plaintext value or map material: values travel
//     sealed to the vault (package vault/seal), the output of Rehydrate
//     sealed to the ephemeral key of the client that asked for it,
//     responses carry tokens, public lease records and reports. Sealed
//     values, exports, returns, sealed outputs and backups are bytes
//     fields.
//   - The output of Rehydrate is the one place restored values leave the
//     vault: to the allowed caller who asked for them, once per lease, and
//     readable only with that call's ephemeral private key. The server
//     keeps no plaintext of it once the call ends: the service's output
//     buffer, its one heap copy, is cleared 1 MiB piece by piece as each
//     piece is sealed (whole on every error path); what the service itself
//     wipes is listed in package vault/service. The cut's evidence key
//     crosses sealed.
//   - A Rehydrate without a usable output key is refused before the lease
//     is claimed; the refusal names the field, never a value.
//   - Error statuses never carry values.
//
// Not guaranteed:
//
//   - Confidentiality from root or from processes of an allowed uid: the
//     socket is plain (no TLS); its protection is the 0700 directory and the
//     peer-credential check.
//   - That the server is the real vaultd: a client trusts whoever listens
//     on the socket path. Keep the socket directory owned by vaultd's user.
//   - Clearing gRPC's pooled buffers: they hold sealed values, exports,
//     sealed outputs and backup bytes (all ciphertext or public) until
//     reused.
//   - Confidentiality of the output in the client process: Client.Rehydrate
//     returns it in an ordinary buffer, which the caller clears (cut then
//     prints or writes it). crypto/ecdh and chacha20poly1305 keep heap
//     copies of each side's output key material, dropped, not wiped (see
//     package vault/seal); and the output's length is visible on the
//     socket.
//   - Delivery of a rehydration: once the vault has consumed the lease, a
//     broken connection loses the output for good.
//
// The caller's duties: place the socket in a directory only vaultd's user
// can write; list on --allow-uid exactly the uids that may use the vault;
// discard a partial backup (Client.Backup's error); clear the output of
// Client.Rehydrate after use and never hand it to egress.
package api
