// Package route holds approved routes: a DisclosureRoute@1 is what a
// security reviewer approves once, signed as a note of
// golang.org/x/mod/sumdb/note with an Ed25519 key, and from which a
// DisclosurePlan@1 is made for each disclosure. Wherever a route is given,
// a plan that departs from it in any field is refused.
//
// # The route
//
// A route document is strict JSON (canon.Unmarshal: no duplicate or
// unknown members, valid UTF-8, at most [MaxRouteBytes]) that is its
// fields' canonical form up to white space and member order: a member its
// fields leave out ("station":"", "remote_deadline_s":0, "wire":null) is
// refused, since it would give one route two digests. Its digest is S(route):
// "sha256:" and the SHA-256 of its RFC 8785 canonical form. [Validate]
// checks, in this order, and refuses PLAN_MISMATCH naming the first field
// that fails:
//
//	schema                "DisclosureRoute@1"
//	name                  1 to 64 ASCII letters, digits, '.', '_', '-', first a letter or digit
//	consumer              kind and id non-empty, kind without ':'
//	purpose               non-empty
//	target                absolute http or https URL with a host, no user info, no fragment
//	mode                  "irreversible" or "reversible"
//	wire                  absent (export@1); {"profile":"export@1"} and nothing else; or
//	                      openai-chat@1 / anthropic-messages@1 with model (printable ASCII,
//	                      no spaces), instruction (non-empty) and max_output_tokens >= 1
//	categories            every owner category in exactly one of allowed and prohibited,
//	                      each list in category order, credential prohibited, one allowed
//	vocabulary_digest     a sha256: digest
//	output_schema_digest  a sha256: digest for a reversible route and for every wire
//	                      profile but export@1; absent otherwise
//	max_uses              >= 1
//	max_lifetime_s        1 to MaxSeconds (366 days)
//	threat_model          non-empty
//	retention             no-retention, session or short
//	remote_deadline_s     reversible: 1 to MaxSeconds; irreversible: absent
//	return_window_s       reversible: 1 to MaxSeconds; irreversible: absent
//	station               reversible: non-empty; irreversible: absent
//	max_parents           >= 1
//
// These include every rule the censor applies to a plan's fields
// (censor.CheckPlan, censor.ValidTarget; the tests check the two agree), and
// add some. Every text a reviewer reads (consumer, purpose, target, threat
// model, station, instruction) must show what it holds: no control
// character (the instruction may hold tab and newline, which the canonical
// form writes as \t and \n), no DEL or C1 control, no bidi control, no
// zero-width or invisible character, no noncharacter. A route is approved by
// someone reading it; a character they cannot see could make it say other
// than they read. Categories have one spelling, the one `cut plan init`
// writes, so that a plan lists them as its route does.
//
// # Worked example
//
// The route document
//
//	{
//	  "schema": "DisclosureRoute@1",
//	  "name": "payments-triage",
//	  "consumer": {"kind": "model", "id": "triage-bot"},
//	  "purpose": "dependency-triage",
//	  "target": "https://model.example/v1/answer",
//	  "mode": "irreversible",
//	  "categories": {
//	    "allowed": ["module", "package", "function", "file", "team", "person", "host"],
//	    "prohibited": ["credential"]
//	  },
//	  "vocabulary_digest": "sha256:1111111111111111111111111111111111111111111111111111111111111111",
//	  "max_uses": 2,
//	  "max_lifetime_s": 3600,
//	  "threat_model": "remote-model-honest-but-curious",
//	  "retention": "no-retention",
//	  "max_parents": 64
//	}
//
// approved with the test key of testdata/reviewer.key, whose verifier key is
//
//	reviewer.example+4394dc16+AbFWKfRaEH8yCQrw1qSZ+yQhAHm2xTndVEbSGjIh7Z2W
//
// is the note below. Its text is one line, shown here in pieces of 72
// bytes each ending in a backslash that is not part of it:
//
//	{"categories":{"allowed":["module","package","function","file","team","p\
//	erson","host"],"prohibited":["credential"]},"consumer":{"id":"triage-bot\
//	","kind":"model"},"max_lifetime_s":3600,"max_parents":64,"max_uses":2,"m\
//	ode":"irreversible","name":"payments-triage","purpose":"dependency-triag\
//	e","retention":"no-retention","schema":"DisclosureRoute@1","target":"htt\
//	ps://model.example/v1/answer","threat_model":"remote-model-honest-but-cu\
//	rious","vocabulary_digest":"sha256:1111111111111111111111111111111111111\
//	111111111111111111111111111"}
//
//	— reviewer.example Q5TcFhr3lA7rOWQ7t4L4ITzVZ38aEIZMtb2JN/N/0yIMCW0I1KH0FoBbueyKcsEUlhjAfV43+QlwxZXeahXzL/rC/Ak=
//
// and the route's digest, which a plan made from it carries as
// route_digest, is
//
//	sha256:4e8572792052d28ff7fe8b23d6ea750c07c083bd462bc345f1a0cd5bdbea3693
//
// # Keys and notes
//
// A signer key ([SignerKey], made by [GenerateKey]) is the note format's:
// the text "PRIVATE+KEY+<name>+<hash>+<base64 of 0x01 and the 32-byte Ed25519
// seed>", hash being 8 lower-case hex digits of the key hash; its verifier
// key is "<name>+<hash>+<base64 of 0x01 and the public key>". Key names have
// the shape of route names. [WriteSignerKey] writes the text and a newline
// to a new file of mode 0600 and never replaces an existing file;
// [ReadSignerKey] reads only a regular file of the effective user's that
// grants group and other nothing.
//
// A trust list is verifier keys ([NewTrust]); a trust file ([ReadTrustFile])
// holds one a line, with empty lines and lines beginning with '#' ignored,
// and must be a regular file writable by its owner alone, owned by the
// effective user or root: whoever can write it chooses which routes are
// obeyed.
//
// [Approve] signs a route document: the note's text is the route's
// canonical form and one newline (the note format requires the text to end
// in a newline; the canonical form holds none), followed by a blank line
// and the signature line "— <name> <base64 of the 4-byte key hash and the
// signature>". [Open] accepts a note only if it is at most [MaxNoteBytes],
// of the note format, signed by at least one trusted key, carries no
// signature of a trusted key that fails to verify, and its text is exactly
// a valid route's canonical form and a newline. Signatures by keys not
// trusted are ignored beside a trusted one.
//
// # Plans from routes
//
// [Instantiate] makes the plan of a route for one projection: every route
// field copied, the projection's keyed manifest digest and restricted ref,
// the required invariants, this build's policy revision, route_digest, and
// expires_at = now + the requested lifetime (the route's max_lifetime_s if
// none is requested; refused past it), written in whole seconds as the
// censor writes it. It is exactly the plan censor.NewPlan makes from the
// equivalent options, with the wire and, for a wire route, the schema digest
// (which its options do not carry).
//
// [Check] refuses a plan that departs from its route in any field, naming
// the first such field in the plan's field order. Every field is compared
// for equality except the projection's two digests (which must be keyed;
// the censor binds them to the projection) and expires_at, which must be
// later than now and no later than now + max_lifetime_s. A plan records no
// time of issue, and anyone who holds the route can make a plan from it, so
// the bound is on the lifetime a plan has left when it is checked: it is
// obeyed at most max_lifetime_s from any check, never longer.
//
// # Security properties
//
// Guaranteed:
//
//   - A route is obeyed only if a trusted key signed its exact canonical
//     form. An edited route (any byte of its text), a route with a signature
//     of another key only, a note without a signature and a note whose text
//     is not canonical are all refused.
//   - A plan checked against its route is that route's plan: consumer,
//     target, purpose, mode, categories, vocabulary, schema digest, uses,
//     deadlines, station, retention, threat model, wire and route digest are
//     the route's, and its remaining lifetime is within max_lifetime_s.
//   - Errors are content-free. An [*Error] carries a code, a field name, a
//     fixed reason, the file name the caller gave, the route's name once it
//     has the shape of a name, key names of that shape (others are left
//     out), and at most a content-free *canon.SyntaxError; never a value of
//     a route or plan, a key or a signature.
//   - The signer key redacts itself in every fmt verb, slog and encoder; it
//     is read only through Reveal, wiped by Wipe, and its file is created
//     0600 without ever replacing a file, through a temporary file linked
//     into place, so it never exists half-written.
//
// Not guaranteed:
//
//   - That the signer key's bytes leave no copy: the key lives on the Go
//     heap (not memory-locked), and crypto/ed25519 makes its own copies
//     while signing. Keep the signer key off machines that run disclosures:
//     only the verifier key is needed there.
//   - Revocation. A note stays valid as long as its key is trusted; to
//     withdraw a route, remove its key from the trust list (and approve the
//     routes to keep with a new key), or stop giving the note.
//   - That the instantiated plan's projection is the one the caller names:
//     the manifest digest and restricted ref are the caller's to compute, and
//     the censor's to bind.
//
// The caller's duties: read trust lists from files only its operator can
// write; compute the manifest digest and restricted ref of the projection
// with the evidence key (censor.ManifestDigest and the keyed digest of the
// projection document); check that the output schema it loads has the
// route's output_schema_digest, and for a reversible route that it marks a
// path for the route's purpose; call Check on every plan it is given before
// it prepares or sends under a route; wipe the signer key when done.
package route
