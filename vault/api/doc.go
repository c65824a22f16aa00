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
// Client.Rehydrate sends a header (lease, claim tuple, return digest and
// size, output schema, receipt fields, the cut's evidence key sealed with
// Client.SealEvidenceKey) and the return in 1 MiB pieces; the server reads
// exactly the declared size (at most rehydrate.MaxReturnBytes), runs
// service.Vault.Rehydrate and streams the output back in 1 MiB pieces, the
// RehydrationReceipt@1 and the consumed lease in the last message. Both
// sides allocate the announced size once, so no grown-out copy of the
// output is left behind. A refused return or schema carries, besides the
// Refusal detail, a ReturnRefusal detail (document, JSON path, line,
// column, length, fixed reason), which the client turns back into the
// *rehydrate.Refusal or *rehydrate.SchemaError the *service.Error wraps;
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
//   - No message carries a plaintext value or map material, except the
//     output of Rehydrate: values travel sealed (package vault/seal),
//     responses carry tokens, public lease records and reports. Sealed
//     values, exports, returns, outputs and backups are bytes fields.
//   - The output of Rehydrate is the one place plaintext values leave the
//     vault: to the allowed caller who asked for them, once per lease.
//     The cut's evidence key crosses sealed.
//   - Error statuses never carry values.
//
// Not guaranteed:
//
//   - Confidentiality from root or from processes of an allowed uid: the
//     socket is plain (no TLS); its protection is the 0700 directory and the
//     peer-credential check.
//   - That the server is the real vaultd: a client trusts whoever listens
//     on the socket path. Keep the socket directory owned by vaultd's user.
//   - Clearing gRPC's pooled buffers: they hold sealed values, exports and
//     backup bytes (all ciphertext or public) until reused — and the
//     rehydrated output, on both sides of the socket. Server and client
//     clear the output slices they own; the transport's copies stay until
//     reused.
//   - Delivery of a rehydration: once the vault has consumed the lease, a
//     broken connection loses the output for good.
//
// The caller's duties: place the socket in a directory only vaultd's user
// can write; list on --allow-uid exactly the uids that may use the vault;
// discard a partial backup (Client.Backup's error); clear the output of
// Client.Rehydrate after use and never hand it to egress.
package api
