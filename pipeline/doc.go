// Package pipeline is privacycut as a library: what `cut prepare` and `cut
// send` do, for a Go program that must not leak before a model call.
//
//	p := pipeline.New(pipeline.Options{EvidenceKey: key, Verifier: pipeline.InProcess()})
//	defer p.Close()
//	cut, err := p.Prepare(ctx, pipeline.Input{Vocabulary: v, Plan: plan, Projection: proj})
//	sent, err := p.Send(ctx, cut, pipeline.SendOptions{})
//
// [Pipeline.Prepare] parses the projection under closed-diagnostic@1, checks
// the plan against it, cuts it (irreversible tokens, or reversible tokens
// issued by vaultd under a new lease), has the independent verifier re-derive
// the cut, and seals it in the pipeline's seal authority. [Pipeline.Send]
// admits the sealed bytes at the egress gate, POSTs them to the plan's
// target, and for a reversible cut rehydrates the answer inside the vault.
// [Pipeline.Rehydrate] rehydrates an answer that arrived later.
//
// # Security properties
//
//   - Nothing leaves but sealed bytes. A cut is sealed only with a
//     [verifier.Verdict], which only the verifier makes: in this process
//     ([InProcess]) or in its own process ([Plugin], [SelfPlugin]). Send
//     admits exactly the sealed bytes, to exactly the plan's target and
//     consumer, within max_uses and before expiry.
//   - A plan is read as a document that is its fields' canonical form, so
//     the censor, the seal and the verifier digest one plan.
//   - A reversible cut needs a vault whose profile is accepted
//     (VAULT_PROFILE_NOT_PROVEN otherwise). The values cross the socket
//     sealed to the vault; the token map never leaves it. A lease granted
//     for a cut that then fails — refused, not verified, not sealed, not
//     bound, interrupted — is revoked, its key destroyed.
//   - Errors carry codes, positions and plan field names, never input bytes.
//     A refusal is a [*RefusedError] whose document was journaled; a failed
//     verification is a [*VerificationError] holding the verdict.
//
// Not guaranteed: the Go heap of the calling process holds the projection
// and its decoded owner values while Prepare runs (the large buffers may be
// mapped apart from the heap with [Options.Buffer], and are the caller's to
// free); the seal authority is in memory and a new Pipeline knows no seal.
package pipeline
