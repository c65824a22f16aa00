package route

import (
	"bytes"
	"errors"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// Limits. A route or note over a limit is refused, never truncated.
const (
	// MaxRouteBytes bounds a route document (ROUTE.json, or a note's text).
	MaxRouteBytes = 256 << 10
	// MaxNoteBytes bounds a signed note: its text and up to 100 signature
	// lines.
	MaxNoteBytes = MaxRouteBytes + 32<<10
	// MaxSeconds bounds max_lifetime_s, remote_deadline_s and
	// return_window_s: 366 days. A longer approval is re-approved; the
	// bound also keeps every duration far from overflowing time.Duration.
	MaxSeconds = 366 * 24 * 3600
	// MaxNameBytes bounds a route's name and a key's name.
	MaxNameBytes = 64
)

// categories are the owner categories in their fixed order (the grammar's
// declaration order, which is the order a plan lists them in).
var categories = []string{"module", "package", "function", "file", "team", "person", "host", "credential"}

// Categories returns the owner categories in the order a route and a plan
// list them. The slice is a copy.
func Categories() []string { return slices.Clone(categories) }

// Parse reads a route document: strict JSON (canon.Unmarshal) of at most
// MaxRouteBytes that is its fields' canonical form up to white space and
// member order, and a route Validate accepts. The document may be indented,
// as a reviewer writes it; its canonical form is what Approve signs.
func Parse(doc []byte) (*receipts.Route, error) {
	if len(doc) > MaxRouteBytes {
		return nil, refuse("route", "document larger than the limit")
	}
	var r receipts.Route
	if err := canon.Unmarshal(doc, &r, canon.Options{MaxBytes: MaxRouteBytes}); err != nil {
		e := refuse("route", "not a DisclosureRoute@1 document")
		var se *canon.SyntaxError
		if errors.As(err, &se) {
			e.Err = se
		}
		return nil, e
	}
	c, err := canon.Canonicalize(doc)
	if err != nil {
		return nil, refuse("route", "not a DisclosureRoute@1 document")
	}
	fields, err := Canonical(&r)
	if err != nil {
		return nil, err
	}
	if !bytes.Equal(c, fields) {
		// "station":"", "remote_deadline_s":0, "wire":null: the same fields,
		// another document, so two digests for one route.
		return nil, refuse("route", "holds a member its fields leave out (an explicit empty, zero or null value)")
	}
	if err := Validate(&r); err != nil {
		return nil, err
	}
	return &r, nil
}

// Canonical returns the route's canonical form (RFC 8785): the bytes its
// digest is taken over and a note's text holds (before its newline).
func Canonical(r *receipts.Route) ([]byte, error) {
	b, err := canon.Marshal(r)
	if err != nil {
		return nil, refuse("route", "cannot be encoded")
	}
	return b, nil
}

// Digest returns S(route): "sha256:" and the SHA-256 of the canonical form.
func Digest(r *receipts.Route) (string, error) {
	b, err := Canonical(r)
	if err != nil {
		return "", err
	}
	return receipts.SHA256(b), nil
}

// Validate checks that r is a route a plan can be made from: every field a
// plan needs, under the rules the censor applies to plans and a few more
// (see the package documentation). It returns the first failing field's
// *Error, in the order of the fields in the package documentation.
func Validate(r *receipts.Route) error {
	e := validate(r)
	if e == nil {
		return nil
	}
	if r != nil && e.Field != "name" && validName(r.Name) {
		e.Name = r.Name
	}
	return e
}

func validate(r *receipts.Route) *Error {
	if r == nil {
		return refuse("route", "no route")
	}
	bad := func(field, reason string) *Error { return refuse(field, reason) }
	if r.Schema != receipts.SchemaRoute {
		return bad("schema", "is not DisclosureRoute@1")
	}
	if !validName(r.Name) {
		return bad("name", "is not 1 to 64 ASCII letters, digits, '.', '_' or '-', beginning with a letter or digit")
	}
	switch {
	case r.Consumer.Kind == "" || r.Consumer.ID == "":
		return bad("consumer", "kind or id is empty")
	case strings.Contains(r.Consumer.Kind, ":"):
		return bad("consumer", "kind holds ':'")
	case !reviewable(r.Consumer.Kind, false) || !reviewable(r.Consumer.ID, false):
		return bad("consumer", "holds a control, invisible or bidi character")
	}
	if r.Purpose == "" || !reviewable(r.Purpose, false) {
		return bad("purpose", "is empty or holds a control, invisible or bidi character")
	}
	if !validTarget(r.Target) || !reviewable(r.Target, false) {
		return bad("target", "is not an absolute http or https URL without user info or fragment")
	}
	if r.Mode != receipts.ModeIrreversible && r.Mode != receipts.ModeReversible {
		return bad("mode", "is not irreversible or reversible")
	}
	if e := validWire(r.Wire); e != nil {
		return e
	}
	if e := validCategories(r.Categories); e != nil {
		return e
	}
	if !plainDigest(r.VocabularyDigest) {
		return bad("vocabulary_digest", "is not a sha256: digest")
	}
	needSchema := r.Mode == receipts.ModeReversible || (r.Wire != nil && r.Wire.Profile != receipts.WireExport)
	switch {
	case needSchema && !plainDigest(r.OutputSchemaDigest):
		return bad("output_schema_digest", "is not a sha256: digest (a reversible route and every wire profile but export@1 need one)")
	case !needSchema && r.OutputSchemaDigest != "":
		return bad("output_schema_digest", "is set on an irreversible export@1 route")
	}
	if r.MaxUses < 1 {
		return bad("max_uses", "is below 1")
	}
	if r.MaxLifetimeS < 1 || r.MaxLifetimeS > MaxSeconds {
		return bad("max_lifetime_s", "is not between 1 and 366 days in seconds")
	}
	if r.ThreatModel == "" || !reviewable(r.ThreatModel, false) {
		return bad("threat_model", "is empty or holds a control, invisible or bidi character")
	}
	if !receipts.KnownRetention(r.Retention) {
		return bad("retention", "is not a retention profile")
	}
	if r.Mode == receipts.ModeReversible {
		switch {
		case r.RemoteDeadlineS < 1 || r.RemoteDeadlineS > MaxSeconds:
			return bad("remote_deadline_s", "is not between 1 and 366 days in seconds")
		case r.ReturnWindowS < 1 || r.ReturnWindowS > MaxSeconds:
			return bad("return_window_s", "is not between 1 and 366 days in seconds")
		case r.Station == "" || !reviewable(r.Station, false):
			return bad("station", "is empty or holds a control, invisible or bidi character")
		}
	} else {
		switch {
		case r.RemoteDeadlineS != 0:
			return bad("remote_deadline_s", "is set on an irreversible route")
		case r.ReturnWindowS != 0:
			return bad("return_window_s", "is set on an irreversible route")
		case r.Station != "":
			return bad("station", "is set on an irreversible route")
		}
	}
	if r.MaxParents < 1 {
		return bad("max_parents", "is below 1")
	}
	return nil
}

// validWire checks a route's wire profile. nil is export@1; an explicit
// export@1 carries nothing else (no instruction is sent with it).
func validWire(w *receipts.Wire) *Error {
	if w == nil {
		return nil
	}
	switch w.Profile {
	case receipts.WireExport:
		if w.Model != "" || w.Instruction != "" || w.MaxOutputTokens != 0 {
			return refuse("wire", "export@1 takes no model, instruction or max_output_tokens")
		}
		return nil
	case receipts.WireOpenAIChat, receipts.WireAnthropicMessages:
	default:
		return refuse("wire.profile", "is not export@1, openai-chat@1 or anthropic-messages@1")
	}
	if w.Model == "" || !printableASCII(w.Model) {
		return refuse("wire.model", "is empty or not printable ASCII without spaces")
	}
	if w.Instruction == "" || !reviewable(w.Instruction, true) {
		return refuse("wire.instruction", "is empty, not UTF-8, or holds a control (other than tab and newline), invisible or bidi character")
	}
	if w.MaxOutputTokens < 1 {
		return refuse("wire.max_output_tokens", "is below 1")
	}
	return nil
}

// validCategories requires the one spelling of a category choice: every
// category in exactly one list, each list in category order, credential
// prohibited, at least one category allowed. That is the form `cut plan
// init` writes, so a plan made from the route lists them as the route does.
func validCategories(c receipts.PlanCategories) *Error {
	var allowed, prohibited []string
	for _, name := range categories {
		inA, inP := slices.Contains(c.Allowed, name), slices.Contains(c.Prohibited, name)
		switch {
		case inA && inP:
			return refuse("categories", "a category is both allowed and prohibited")
		case inA && name == "credential":
			return refuse("categories", "credential is always prohibited")
		case inA:
			allowed = append(allowed, name)
		case inP:
			prohibited = append(prohibited, name)
		default:
			return refuse("categories", "a category is neither allowed nor prohibited")
		}
	}
	switch {
	case len(c.Allowed)+len(c.Prohibited) != len(categories):
		return refuse("categories", "names an unknown category or one twice")
	case !slices.Equal(allowed, c.Allowed) || !slices.Equal(prohibited, c.Prohibited):
		return refuse("categories", "lists are not in category order")
	case len(allowed) == 0:
		return refuse("categories", "allows no category")
	}
	return nil
}

// validTarget reports whether s is a target a plan may name: an absolute
// http or https URL with a host and no user info or fragment. It is the
// censor's rule (censor.ValidTarget), checked against it in the tests.
func validTarget(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil && u.Fragment == ""
}

// validName reports whether s may name a route (or a key): 1 to 64 ASCII
// letters, digits, '.', '_' or '-', beginning with a letter or digit, so
// that it can stand in a URL path, a model field, a log line and an error
// as it is.
func validName(s string) bool {
	if len(s) == 0 || len(s) > MaxNameBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case (c == '.' || c == '_' || c == '-') && i > 0:
		default:
			return false
		}
	}
	return true
}

// plainDigest reports whether s is a "sha256:" digest.
func plainDigest(s string) bool {
	alg, _, err := receipts.ParseDigest(s)
	return err == nil && alg == receipts.PrefixSHA256
}

// keyedDigest reports whether s is an "hmac-sha256:" digest.
func keyedDigest(s string) bool {
	alg, _, err := receipts.ParseDigest(s)
	return err == nil && alg == receipts.PrefixHMAC
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// reviewable reports whether s is valid UTF-8 that shows a reviewer what
// it holds: no C0 control (multiline text may hold tab and newline, which
// the canonical form writes as \t and \n), no DEL or C1 control, no bidi
// control, no zero-width or invisible character, no noncharacter. A route
// is approved by someone reading it; a character they cannot see could make
// it say something else than they read.
func reviewable(s string, multiline bool) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		switch {
		case r == '\n' || r == '\t':
			if !multiline {
				return false
			}
		case r < 0x20, r >= 0x7f && r <= 0x9f:
			return false
		case r == 0x061c, r >= 0x200e && r <= 0x200f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return false // bidi controls
		case r == 0x00ad, r == 0x180e, r >= 0x200b && r <= 0x200d, r >= 0x2060 && r <= 0x2064, r == 0xfeff:
			return false // zero-width and invisible
		case r >= 0xfdd0 && r <= 0xfdef, r&0xfffe == 0xfffe:
			return false // noncharacters
		}
	}
	return true
}
