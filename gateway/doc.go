// Package gateway is privacycut's egress gateway, `cut gateway`: a
// long-lived process that is the one path from an agent runtime to a model
// provider. It holds approved routes and the keys that approve them, their
// vocabularies and schemas (read once), warm verifier plugins, the seal
// authority, the provider credentials' file names and a connection to
// vaultd, and serves two APIs over a unix socket (SO_PEERCRED allow-list)
// and an optional loopback TCP listener (bearer token):
//
//	POST /v1/routes/{name}/cut   Projection@1 in, GatewayResult@1 out
//	POST /v1/chat/completions    OpenAI Chat Completions, for official SDKs
//	GET  /healthz                {"routes":N,"status":"ok"}
//	GET  /metrics                Prometheus text exposition
//
// The configuration (Gateway@1), the answers and the refusals are
// specified in docs/FORMATS.md#gateway; running it in docs/GATEWAY.md.
//
//	cfg, err := gateway.ParseConfig(doc, filepath.Dir(path))
//	g, err := gateway.New(ctx, cfg, gateway.Options{})
//	ls, err := g.Listen()
//	go g.Serve(ls)
//	…
//	g.Shutdown(ctx) // drains, then revokes the leases of unfinished cuts
//
// [Gateway.Handler] is the HTTP API alone, for a program that serves it
// itself (tests, benchmarks): a request that does not come through
// Listen's unix listener must then carry the bearer token.
//
// # Each request is its own disclosure
//
// For every request the gateway makes a DisclosurePlan@1 from the route for
// that request's projection (its manifest digest, an expiry within the
// route's max_lifetime_s and the request timeout, distinct from every
// other live plan of the same projection), prepares it under the route
// (the censor, the independent verifier in a warm plugin process, the
// seal), sends exactly the sealed bytes, and for a reversible route has
// the vault rehydrate the answer under a lease of its own. max_uses bounds
// that disclosure's deliveries. No request reuses another's plan, seal or
// lease.
//
// # Security properties
//
// Guaranteed:
//
//   - A route is served only from a note signed by a trusted key; an
//     unsigned, mis-signed or edited note refuses start-up, naming the file.
//     Nothing in the configuration can change where a route sends: the
//     target, consumer, mode, uses and lifetime are the approved route's,
//     and every plan is checked against it before anything is cut.
//   - Every byte that leaves is a sealed cut of the request's own
//     projection, verified out of process; a request is refused whole
//     (422, its refusal document or an OpenAI-style error whose code is the
//     refusal code), never trimmed.
//   - A front-door request becomes parts of the route's declared kind,
//     label and lineage only: a request cannot lower them. A system message
//     must be the route's approved instruction; other roles, tools and
//     unknown members are refused.
//   - The unix socket lives in a 0700 directory of the gateway's user, is
//     0600 (0710 and 0660 of listen.group's group when it is given), and
//     serves only the allowed peer uids as the kernel reports them when the
//     connection is accepted. The TCP listener binds a
//     loopback address only, and every request on it must carry the bearer
//     token, compared in constant time; the token is kept as its SHA-256
//     in a value that redacts itself and is wiped at Shutdown.
//   - Errors, logs and metrics carry route names (of loaded routes only),
//     codes, positions, request member paths, event ids and durations:
//     never a value, the request's text, a model name a request gave that
//     is no route, a credential or the token.
//   - A reversible request that ends without a rehydrated answer — a
//     refusal after the grant, a failed verification, an unusable answer,
//     a cancellation, a shutdown past its drain — has its lease revoked.
//
// Not guaranteed:
//
//   - Ownership of the answer: an irreversible answer is returned as the
//     provider gave it (once it reads as strict JSON); only a reversible
//     answer is checked against the route's schema (by the vault).
//   - Memory: the seal authority keeps every seal it made for the process's
//     life (a few hundred bytes each), as does the registry of plan
//     expiries until they pass.
//   - The peer check reads the credentials of the process that connected;
//     a process of an allowed uid can pass its connection on.
//
// The caller's duties: give the gateway its own uid, the credential files
// and the vault socket; keep the trust files writable by their owner
// alone; run it under a supervisor that sends SIGTERM and waits.
package gateway
