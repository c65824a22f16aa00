// Package rpc is what vaultd's gRPC server (package vault/server) and its
// client (package vault/client) share: the message limits, the
// peer-credential transport credentials, the one table between vault
// errors and gRPC statuses, the wire form of sealed values, and the codec
// both ends encode with (Codec, whose buffers are sized to the message).
//
// # Security properties
//
//   - Creds reads each connection's SO_PEERCRED in the handshake: the
//     server closes a connection whose uid is not allowed before gRPC reads
//     a frame, the client one whose server uid it does not trust.
//   - ToStatus puts on the wire the error's own text (codes, operations
//     and field names only) and a Refusal detail; an error matching no row
//     becomes Internal with a generic message, its cause left out.
//   - FromStatus accepts a ReturnRefusal detail only inside its alphabet
//     and bounds; otherwise the code alone remains.
//   - Sealed values cross as they are: nothing in them is plaintext.
package rpc

// Message and stream limits.
const (
	// MaxMessage bounds one gRPC message in either direction (8 MiB): a
	// grant's sealed values fit, since a map is at most 4 MiB.
	MaxMessage = 8 << 20
	// ChunkSize is the size of backup, restore and erasure-proof stream
	// chunks.
	ChunkSize = 64 << 10
	// RehydrateChunk is the size of the return pieces, and of the
	// plaintext of the sealed output pieces, on the Rehydrate stream.
	RehydrateChunk = 1 << 20
)
