package route

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/mod/sumdb/note"

	"github.com/privacycut/privacycut/receipts"
)

// testSigner returns a signer key and a trust of its verifier key.
func testSigner(t testing.TB, seed, name string) (*SignerKey, *Trust) {
	t.Helper()
	k, err := GenerateKey(newFixedRand(seed), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Wipe)
	tr, err := NewTrust(k.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	return k, tr
}

func approve(t testing.TB, k *SignerKey, r *receipts.Route) []byte {
	t.Helper()
	doc, err := Canonical(r)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := Approve(k, doc)
	if err != nil {
		t.Fatal(err)
	}
	return msg
}

// TestApproveOpen: an approved route opens under its key to the same
// route, its digest, and the signer's name; the note's text is the
// canonical form and one newline.
func TestApproveOpen(t *testing.T) {
	k, tr := testSigner(t, "approve", "reviewer")
	for _, r := range []*receipts.Route{irreversibleRoute(t), reversibleRoute(t)} {
		msg := approve(t, k, r)
		c, _ := Canonical(r)
		if !bytes.HasPrefix(msg, append(append(c, '\n', '\n'), "— reviewer "...)) {
			t.Fatalf("note is not the canonical text, a blank line and the signature:\n%s", msg)
		}
		a, err := Open(msg, tr)
		if err != nil {
			t.Fatal(err)
		}
		want := &Approved{Route: r, Digest: mustDigest(t, r), Signers: []string{"reviewer"}}
		if d := cmp.Diff(want, a); d != "" {
			t.Errorf("opened (-want +got):\n%s", d)
		}
		if again := approve(t, k, r); !bytes.Equal(again, msg) {
			t.Error("approving twice gives two notes")
		}
	}
	// Approve refuses what Parse refuses.
	r := irreversibleRoute(t)
	r.MaxUses = 0
	doc, _ := Canonical(r)
	_, err := Approve(k, doc)
	wantRefusal(t, err, "max_uses")
}

// TestOpenRefuses: every way a note fails refuses PLAN_MISMATCH, field
// "route" (or the route's field), with a fixed reason naming only public
// key names, never a value of the route.
func TestOpenRefuses(t *testing.T) {
	k, tr := testSigner(t, "open", "reviewer")
	outsider, _ := testSigner(t, "outsider", "outsider")
	r := irreversibleRoute(t)
	r.Purpose = canary
	good := approve(t, k, r)
	c, _ := Canonical(r)
	sigAt := bytes.LastIndex(good, []byte("\n\n")) + 2
	sigLine := string(good[sigAt:])

	signRaw := func(text string, keys ...*SignerKey) []byte {
		var signers []note.Signer
		for _, k := range keys {
			signers = append(signers, noteSigner{k})
		}
		msg, err := note.Sign(&note.Note{Text: text}, signers...)
		if err != nil {
			t.Fatal(err)
		}
		return msg
	}
	invalidRoute := cloneRoute(r)
	invalidRoute.Retention = "forever"
	ic, _ := Canonical(invalidRoute)
	// A signature of the right key with other bytes (past its key hash).
	b64 := sigLine[len("— reviewer ") : len(sigLine)-1]
	forged := []byte(string(c) + "\n\n— reviewer " + b64[:20] + "AAAAAAAAAA" + b64[30:] + "\n")
	// A good signature of one trusted key beside a bad one of another.
	k2, _ := testSigner(t, "open-2", "security")
	tr2, err := NewTrust(k.VerifierKey(), k2.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	both := signRaw(string(c)+"\n", k, k2)
	both = append(both[:len(both)-6], "AAAAA\n"...)
	flipped := append([]byte(nil), good...)
	flipped[10] ^= 1

	cases := []struct {
		name, field, reason string
		msg                 []byte
		keys                []string
	}{
		{"route document", "route", "not a signed note: no signature", c, nil},
		{"text only", "route", "not a signed note: no signature", append(append([]byte(nil), c...), '\n'), nil},
		{"signature stripped", "route", "not a signed note: no signature", append(append([]byte(nil), c...), "\n\n"...), nil},
		{"edited text", "route", "a trusted key's signature does not verify", bytes.Replace(good, []byte(`"max_uses":3`), []byte(`"max_uses":4`), 1), []string{"reviewer"}},
		{"flipped byte", "route", "a trusted key's signature does not verify", flipped, []string{"reviewer"}},
		{"forged signature", "route", "a trusted key's signature does not verify", forged, []string{"reviewer"}},
		{"untrusted key", "route", "signed by no trusted key", signRaw(string(c)+"\n", outsider), []string{"outsider"}},
		{"good and bad signature of trusted keys", "route", "a trusted key's signature does not verify", both, []string{"security"}},
		{"untrusted key of odd name", "route", "signed by no trusted key",
			[]byte(string(c) + "\n\n— " + canary + "\u202e " + base64.StdEncoding.EncodeToString(make([]byte, 68)) + "\n"), []string{}},
		{"two-line text", "route", "note text is not one line", signRaw(string(c)+"\n"+string(c)+"\n", k), nil},
		{"text with a blank line inside", "route", "a trusted key's signature does not verify",
			[]byte(string(c) + "\n\n" + string(c) + "\n\n" + sigLine), []string{"reviewer"}},
		{"indented text", "route", "note text is not the route's canonical form", signRaw(strings.Replace(string(c), ",", ", ", -1)+"\n", k), nil},
		{"not JSON", "route", "not a DisclosureRoute@1 document", signRaw(canary+"\n", k), nil},
		{"invalid route", "retention", "is not a retention profile", signRaw(string(ic)+"\n", k), nil},
		{"control character", "route", "not a signed note", []byte("\x01" + string(good)), nil},
		{"too large", "route", "note larger than the limit", append(bytes.Repeat([]byte(" "), MaxNoteBytes), good...), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			trust := tr
			if c.name == "good and bad signature of trusted keys" {
				trust = tr2
			}
			_, err := Open(c.msg, trust)
			e := wantRefusal(t, err, c.field)
			if e.Reason != c.reason {
				t.Errorf("reason %q, want %q", e.Reason, c.reason)
			}
			if c.keys != nil && len(c.keys) == 0 && len(e.Keys) != 0 {
				t.Errorf("names keys %v", e.Keys)
			}
			if len(c.keys) > 0 {
				if d := cmp.Diff(c.keys, e.Keys); d != "" {
					t.Errorf("keys (-want +got):\n%s", d)
				}
			}
			for _, key := range e.Keys {
				if !validName(key) {
					t.Errorf("names a key of invalid shape")
				}
			}
		})
	}
	_, err = Open(good, nil)
	wantRefusal(t, err, "trust")
	_, err = Open(good, &Trust{})
	wantRefusal(t, err, "trust")
}

// TestOpenCosigned: a note signed by a trusted key and by others opens,
// naming the trusted signers only; two trusted signers are both named.
func TestOpenCosigned(t *testing.T) {
	k, _ := testSigner(t, "cosign-a", "reviewer")
	k2, _ := testSigner(t, "cosign-b", "security")
	outsider, _ := testSigner(t, "cosign-c", "outsider")
	c, _ := Canonical(irreversibleRoute(t))
	msg, err := note.Sign(&note.Note{Text: string(c) + "\n"}, noteSigner{outsider}, noteSigner{k}, noteSigner{k2})
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrust(k.VerifierKey(), k2.VerifierKey())
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(msg, tr)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"reviewer", "security"}, a.Signers); d != "" {
		t.Errorf("signers (-want +got):\n%s", d)
	}
}

// TestNewTrustRefuses: malformed keys, names of another shape, colliding
// keys and empty or overlong lists refuse with field "trust" and the
// key's position.
func TestNewTrustRefuses(t *testing.T) {
	k, _ := testSigner(t, "trust", "reviewer")
	vk := k.VerifierKey()
	coll := ParseTrustList(readVector(t, "collision.vkeys"))
	cases := []struct {
		name  string
		keys  []string
		index int
	}{
		{"none", nil, 0},
		{"too many", make([]string, MaxTrustKeys+1), 0},
		{"malformed", []string{vk, "reviewer+00000000+" + canary}, 2},
		{"bad hash", []string{strings.Replace(vk, vk[len("reviewer+"):len("reviewer+")+8], "00000000", 1)}, 1},
		{"other algorithm", []string{otherAlgorithmKey(t)}, 1},
		{"signer key", []string{revealText(t, k)}, 1},
		{"name with bidi", []string{canary + "\u202e+00000000+AAAA"}, 1},
		{"colliding keys", coll, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := NewTrust(c.keys...)
			e := wantRefusal(t, err, "trust")
			if e.Index != c.index {
				t.Errorf("index %d, want %d", e.Index, c.index)
			}
			if strings.Contains(err.Error(), "AAAA") || strings.Contains(err.Error(), vk[len(vk)-20:]) {
				t.Errorf("error quotes a key: %v", err)
			}
		})
	}
	tr, err := NewTrust(vk, vk)
	if err != nil {
		t.Fatalf("one key twice: %v", err)
	}
	if d := cmp.Diff([]string{"reviewer"}, tr.Names()); d != "" {
		t.Errorf("names (-want +got):\n%s", d)
	}
}

// otherAlgorithmKey is a well-formed verifier key of algorithm 2, its
// hash computed as the note format defines it.
func otherAlgorithmKey(t *testing.T) string {
	t.Helper()
	key := append([]byte{2}, make([]byte, 32)...)
	sum := sha256.Sum256(append([]byte("reviewer\n"), key...))
	return "reviewer+" + hex.EncodeToString(sum[:4]) + "+" + base64.StdEncoding.EncodeToString(key)
}

// TestTrustFile: a trust file's keys, comments and blank lines; a file
// others may write is refused.
func TestTrustFile(t *testing.T) {
	k, _ := testSigner(t, "tf-a", "reviewer")
	k2, _ := testSigner(t, "tf-b", "security")
	data := "# reviewers of payments routes\n" + k.VerifierKey() + "\n\n" + k2.VerifierKey() + "\n"
	if d := cmp.Diff([]string{k.VerifierKey(), k2.VerifierKey()}, ParseTrustList([]byte(data))); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "trust")
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	keys, err := ReadTrustFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewTrust(keys...); err != nil {
		t.Fatal(err)
	}
	for name, prep := range map[string]func() error{
		"group writable": func() error { return os.Chmod(p, 0o664) },
		"too large":      func() error { return os.WriteFile(p, bytes.Repeat([]byte("#\n"), MaxTrustFileBytes), 0o644) },
		"symlink": func() error {
			os.Remove(p)
			return os.Symlink(filepath.Join(dir, "elsewhere"), p)
		},
	} {
		t.Run(name, func(t *testing.T) {
			os.Remove(p)
			if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "elsewhere"), []byte(data), 0o644)
			if err := prep(); err != nil {
				t.Fatal(err)
			}
			_, err := ReadTrustFile(p)
			if ke, ok := err.(*KeyError); !ok || ke.File != p {
				t.Fatalf("error %v, want a *KeyError naming the file", err)
			}
		})
	}
	if os.Geteuid() == 0 {
		os.Remove(p)
		os.WriteFile(p, []byte(data), 0o644)
		if err := os.Chown(p, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadTrustFile(p); err == nil {
			t.Error("a trust file of another user accepted")
		}
	}
}

// TestOpenFile: a refusal of a note file names the file; ParseFile reads
// a route document.
func TestOpenFile(t *testing.T) {
	k, tr := testSigner(t, "file", "reviewer")
	dir := t.TempDir()
	r := irreversibleRoute(t)
	p := filepath.Join(dir, "payments.note")
	if err := os.WriteFile(p, approve(t, k, r), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenFile(p, tr); err != nil {
		t.Fatal(err)
	}
	_, other := testSigner(t, "file-other", "other")
	_, err := OpenFile(p, other)
	e := wantRefusal(t, err, "route")
	if e.File != p || !strings.Contains(err.Error(), p) {
		t.Errorf("error does not name the file: %v", err)
	}
	big := filepath.Join(dir, "big.note")
	os.WriteFile(big, make([]byte, MaxNoteBytes+1), 0o644)
	_, err = OpenFile(big, tr)
	if e := wantRefusal(t, err, "route"); e.File != big {
		t.Errorf("file %q", e.File)
	}
	doc := filepath.Join(dir, "route.json")
	c, _ := Canonical(r)
	os.WriteFile(doc, c, 0o644)
	if got, err := ParseFile(doc); err != nil || got.Name != r.Name {
		t.Fatalf("ParseFile: %v", err)
	}
	bad := cloneRoute(r)
	bad.Schema = "DisclosurePlan@1"
	bc, _ := Canonical(bad)
	os.WriteFile(doc, bc, 0o644)
	_, err = ParseFile(doc)
	if e := wantRefusal(t, err, "schema"); e.File != doc {
		t.Errorf("file %q", e.File)
	}
	if _, err := OpenFile(filepath.Join(dir, "missing"), tr); !os.IsNotExist(err) {
		t.Errorf("missing file: %v", err)
	}
}

// FuzzOpen: a note either refuses with a content-free PLAN_MISMATCH
// *Error, or opens to a route whose canonical form and a newline is the
// note's text, whose digest is S(that form), signed by the trusted key,
// and which this package approves to a note that opens to the same route.
func FuzzOpen(f *testing.F) {
	k, tr := testSigner(f, "fuzz-open", "reviewer")
	outsider, _ := testSigner(f, "fuzz-outsider", "outsider")
	for _, r := range []*receipts.Route{irreversibleRoute(f), reversibleRoute(f)} {
		r.Purpose = canary
		msg := approve(f, k, r)
		f.Add(msg)
		f.Add(bytes.Replace(msg, []byte(`"max_uses":3`), []byte(`"max_uses":9`), 1))
		f.Add(approve(f, outsider, r))
		c, _ := Canonical(r)
		f.Add(c)
	}
	for _, name := range []string{"route.note", "edited.note", "untrusted.note", "unsigned.note", "noncanonical.note"} {
		if b, err := os.ReadFile(filepath.Join(vectorDir, name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		a, err := Open(msg, tr)
		if err != nil {
			checkContentFree(t, err, msg)
			return
		}
		c, err := Canonical(a.Route)
		if err != nil {
			t.Fatal(err)
		}
		n, err := note.Open(msg, note.VerifierList(mustVerifier(t, k.VerifierKey())))
		if err != nil {
			t.Fatalf("note package refuses what Open accepted: %v", err)
		}
		if n.Text != string(c)+"\n" {
			t.Fatal("text is not the canonical form and a newline")
		}
		if a.Digest != receipts.SHA256(c) || a.Digest != mustDigest(t, a.Route) {
			t.Fatal("digest is not S(canonical form)")
		}
		if len(a.Signers) != 1 || a.Signers[0] != "reviewer" {
			t.Fatalf("signers %v", a.Signers)
		}
		again, err := Open(approve(t, k, a.Route), tr)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(a, again); d != "" {
			t.Fatalf("re-approved (-first +second):\n%s", d)
		}
	})
}

// FuzzParseSignerKey: a signer key text is accepted only if the note
// package accepts it as the same key, and only in the one spelling this
// package writes.
func FuzzParseSignerKey(f *testing.F) {
	k, _ := testSigner(f, "fuzz-key", "reviewer")
	text := revealText(f, k)
	f.Add([]byte(text))
	f.Add([]byte(text + "\n"))
	f.Add([]byte(strings.ToUpper(text)))
	f.Add([]byte(k.VerifierKey()))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseSignerKey(b)
		if err != nil {
			if strings.Contains(err.Error(), "+") {
				t.Fatalf("error quotes the text: %v", err)
			}
			return
		}
		s := revealText(t, got)
		if s != strings.TrimSuffix(string(b), "\n") {
			t.Fatal("accepted a second spelling of a key")
		}
		ns, err := note.NewSigner(s)
		if err != nil {
			t.Fatalf("note refuses an accepted key: %v", err)
		}
		if ns.Name() != got.Name() || ns.KeyHash() != got.KeyHash() {
			t.Fatal("another key than note's")
		}
	})
}

func mustVerifier(t testing.TB, vkey string) note.Verifier {
	t.Helper()
	v, err := note.NewVerifier(vkey)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestConcurrentUse: one trust list, route and key serve concurrent
// opens, instantiations and checks (a gateway's requests); run with -race.
func TestConcurrentUse(t *testing.T) {
	k, tr := testSigner(t, "concurrent", "reviewer")
	r := reversibleRoute(t)
	msg := approve(t, k, r)
	in := Instance{ManifestDigest: "hmac-sha256:" + strings.Repeat("a", 64), RestrictedRef: "hmac-sha256:" + strings.Repeat("b", 64),
		VocabularyDigest: r.VocabularyDigest, Now: testNow}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				a, err := Open(msg, tr)
				if err != nil {
					t.Error(err)
					return
				}
				p, err := Instantiate(a.Route, a.Digest, in)
				if err != nil {
					t.Error(err)
					return
				}
				if err := Check(p, a.Route, a.Digest, testNow); err != nil {
					t.Error(err)
				}
				if _, err := Approve(k, msg[:bytes.IndexByte(msg, '\n')]); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
}
