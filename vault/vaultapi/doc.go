// Package vaultapi is the vault's call contract without the vault: the
// request, result, status and report types of vaultd's calls, the
// *Error they fail with and its sentinels, shared by the service (package
// vault/service, in vaultd), the gRPC server and the client. It links
// neither the service, the Badger store nor gRPC, so a program that only
// talks to a vault carries none of them.
//
// # Errors
//
// Every vault call fails with an *Error: Code is the refusal code when the
// failure is a policy refusal, else empty and Err one of the sentinels;
// Op names the call, Field the request field at fault. Its text is
//
//	vault: <op>[ (field <f>)]: <sentinel or code>[ (<code>)]
//
// A refused return or schema of a rehydration carries its code and wraps
// the *receipts.Refusal (errors.As reaches its path and position). CodeOf
// reads the code through any wrapping.
//
// # Security properties
//
//   - No type here holds a plaintext owner value except
//     RehydrateResult.Output, which holds restored values by design: the
//     caller clears it and never hands it to egress. Values travel as
//     seal.Request (sealed); lease records, infos, statuses and reports are
//     public.
//   - An *Error carries codes, operations, field names and the refusal's
//     positions, never a value, a token, a key or map bytes.
//   - SealEvidenceKey reads the evidence key through its Reveal and seals
//     it without copying it; its refusals name a field, never the key.
package vaultapi
