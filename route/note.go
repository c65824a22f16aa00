package route

import (
	"bytes"
	"errors"
	"io"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"

	"github.com/privacycut/privacycut/receipts"
)

// MaxTrustKeys bounds a trust list.
const MaxTrustKeys = 100

// Trust is the set of verifier keys whose signatures approve a route.
type Trust struct {
	verifiers note.Verifiers
	names     []string
}

// NewTrust checks verifier key texts (name+hash+base64, as
// note.NewVerifier reads them) and returns the trust they make. It refuses
// (a PLAN_MISMATCH *Error with field "trust" and the key's 1-based index)
// a malformed key, a key of another algorithm than Ed25519, a name not of
// the shape GenerateKey requires, two different keys with one name and
// hash, an empty list and one longer than MaxTrustKeys. The same key given
// twice counts once.
func NewTrust(keys ...string) (*Trust, error) {
	if len(keys) == 0 {
		return nil, refuse("trust", "no verifier key")
	}
	if len(keys) > MaxTrustKeys {
		return nil, refuse("trust", "more verifier keys than the limit")
	}
	seen := map[string]bool{}
	type nameHash struct {
		name string
		hash uint32
	}
	ids := map[nameHash]bool{}
	t := &Trust{}
	var list []note.Verifier
	for i, k := range keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		name, _, _ := strings.Cut(k, "+")
		if !validName(name) {
			e := refuse("trust", "key name is not 1 to 64 ASCII letters, digits, '.', '_' or '-'")
			e.Index = i + 1
			return nil, e
		}
		v, err := note.NewVerifier(k)
		if err != nil {
			e := refuse("trust", "not an Ed25519 verifier key of the signed-note format")
			e.Index, e.Keys = i+1, []string{name}
			return nil, e
		}
		id := nameHash{v.Name(), v.KeyHash()}
		if ids[id] {
			e := refuse("trust", "two different keys have one name and hash")
			e.Index, e.Keys = i+1, []string{name}
			return nil, e
		}
		ids[id] = true
		list = append(list, v)
		t.names = append(t.names, name)
	}
	t.verifiers = note.VerifierList(list...)
	return t, nil
}

// Names returns the names of the trusted keys, in the order given.
func (t *Trust) Names() []string { return append([]string(nil), t.names...) }

// ParseTrustList splits a trust file into its verifier keys: one a line,
// empty lines and lines beginning with '#' ignored. It checks nothing else;
// NewTrust does.
func ParseTrustList(data []byte) []string {
	var keys []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		keys = append(keys, line)
	}
	return keys
}

// Approved is a route whose note verified under a trusted key.
type Approved struct {
	Route   *receipts.Route
	Digest  string   // S(route): "sha256:" and the SHA-256 of the note's text without its newline
	Signers []string // names of the trusted keys whose signatures verified
}

// Approve signs the route document doc (see Parse) with k and returns the
// signed note: the route's canonical form and one newline as the note's
// text (the note format requires the text to end in a newline; the
// canonical form holds none, so the text is exactly one line), a blank
// line, and k's signature line. Ed25519 is deterministic: the same route
// and key give the same note.
func Approve(k *SignerKey, doc []byte) ([]byte, error) {
	if k == nil || k.s == nil {
		return nil, ErrKeyWiped
	}
	r, err := Parse(doc)
	if err != nil {
		return nil, err
	}
	c, err := Canonical(r)
	if err != nil {
		return nil, err
	}
	msg, err := note.Sign(&note.Note{Text: string(c) + "\n"}, noteSigner{k})
	if err != nil {
		if errors.Is(err, ErrKeyWiped) {
			return nil, ErrKeyWiped
		}
		return nil, refuse("key", "cannot sign")
	}
	return msg, nil
}

// sigSplit ends a note's text and begins its signatures.
var sigSplit = []byte("\n\n\u2014 ")

// Open verifies a signed route note under the trusted keys and returns the
// route and its digest. It refuses, with a PLAN_MISMATCH *Error of field
// "route" (or of the route field that is wrong), and the public names
// involved:
//
//   - a note larger than MaxNoteBytes, or not of the signed-note format;
//   - a text without a signature (a route document, or a note stripped of
//     its signatures);
//   - a note signed by no trusted key (Keys names its signers, those whose
//     names have the shape key names must have);
//   - a signature of a trusted key that does not verify (the text or the
//     signature was edited), even beside a good one;
//   - a text that is not exactly one route's canonical form and a newline,
//     or a route Validate refuses.
//
// A note signed by a trusted key and also by keys not trusted opens: the
// other signatures are ignored.
func Open(msg []byte, t *Trust) (*Approved, error) {
	if t == nil || t.verifiers == nil {
		return nil, refuse("trust", "no verifier key")
	}
	if len(msg) > MaxNoteBytes {
		return nil, refuse("route", "note larger than the limit")
	}
	if !bytes.Contains(msg, sigSplit) {
		return nil, refuse("route", "not a signed note: no signature")
	}
	n, err := note.Open(msg, t.verifiers)
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			e := refuse("route", "signed by no trusted key")
			for _, s := range unverified.Note.UnverifiedSigs {
				if validName(s.Name) {
					e.Keys = append(e.Keys, s.Name)
				}
			}
			return nil, e
		case errors.As(err, &invalid):
			e := refuse("route", "a trusted key's signature does not verify")
			e.Keys = []string{invalid.Name}
			return nil, e
		default:
			return nil, refuse("route", "not a signed note")
		}
	}
	text, ok := strings.CutSuffix(n.Text, "\n")
	if !ok || strings.Contains(text, "\n") {
		return nil, refuse("route", "note text is not one line")
	}
	r, err := Parse([]byte(text))
	if err != nil {
		return nil, err
	}
	c, err := Canonical(r)
	if err != nil {
		return nil, err
	}
	if string(c) != text {
		e := refuse("route", "note text is not the route's canonical form")
		e.Name = r.Name
		return nil, e
	}
	a := &Approved{Route: r, Digest: receipts.SHA256(c)}
	for _, s := range n.Sigs {
		a.Signers = append(a.Signers, s.Name)
	}
	return a, nil
}

// OpenFile reads the note at path (at most MaxNoteBytes) and opens it; a
// refusal names the file.
func OpenFile(path string, t *Trust) (*Approved, error) {
	msg, err := readFile(path, MaxNoteBytes)
	if err != nil {
		return nil, withFile(err, path)
	}
	a, err := Open(msg, t)
	return a, withFile(err, path)
}

// ParseFile reads the route document at path (at most MaxRouteBytes) and
// parses it; a refusal names the file.
func ParseFile(path string) (*receipts.Route, error) {
	doc, err := readFile(path, MaxRouteBytes)
	if err != nil {
		return nil, withFile(err, path)
	}
	r, err := Parse(doc)
	return r, withFile(err, path)
}

// readFile reads at most max bytes of a public file, refusing a longer one.
func readFile(path string, max int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(max)+1))
	if err != nil {
		return nil, err
	}
	if len(data) > max {
		return nil, refuse("route", "file larger than the limit")
	}
	return data, nil
}
