package route

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/mod/sumdb/note"
)

// revealText returns k's signer key text.
func revealText(t testing.TB, k *SignerKey) string {
	t.Helper()
	var s string
	if err := k.Reveal(func(b []byte) error { s = string(b); return nil }); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGenerateKeyIsNotes: from the same randomness, GenerateKey writes
// exactly the signer and verifier key texts note.GenerateKey writes, and
// its signatures are the note package's.
func TestGenerateKeyIsNotes(t *testing.T) {
	k, err := GenerateKey(newFixedRand("reviewer"), "reviewer.example")
	if err != nil {
		t.Fatal(err)
	}
	skey, vkey, err := note.GenerateKey(newFixedRand("reviewer"), "reviewer.example")
	if err != nil {
		t.Fatal(err)
	}
	if got := revealText(t, k); got != skey {
		t.Errorf("signer key text differs from note.GenerateKey's")
	}
	if k.VerifierKey() != vkey {
		t.Errorf("verifier key %q, note says %q", k.VerifierKey(), vkey)
	}
	ns, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	if k.Name() != ns.Name() || k.KeyHash() != ns.KeyHash() {
		t.Errorf("name/hash %s/%08x, note says %s/%08x", k.Name(), k.KeyHash(), ns.Name(), ns.KeyHash())
	}
	msg := []byte("text\n")
	a, err := noteSigner{k}.Sign(msg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ns.Sign(msg)
	if !bytes.Equal(a, b) {
		t.Error("signatures differ from note's")
	}
	k2, err := ParseSignerKey([]byte(skey + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	if revealText(t, k2) != skey || k2.VerifierKey() != vkey {
		t.Error("parsed key is not the key")
	}
	for _, name := range []string{"", "a b", "a+b", "-a", strings.Repeat("n", 65), "a/b", "é"} {
		_, err := GenerateKey(newFixedRand("x"), name)
		wantRefusal(t, err, "key")
	}
	if _, err := GenerateKey(bytes.NewReader(make([]byte, 31)), "short"); err == nil {
		t.Error("short randomness accepted")
	}
}

// TestParseSignerKeyRefuses: malformed texts refuse with a *KeyError
// wrapping ErrKeyFile that quotes no byte of the text.
func TestParseSignerKeyRefuses(t *testing.T) {
	k, err := GenerateKey(newFixedRand("p"), "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	good := revealText(t, k)
	other, _ := GenerateKey(newFixedRand("q"), "reviewer")
	otherText := revealText(t, other)
	b64 := good[strings.LastIndex(good, "+")+1:]
	hash := good[len("PRIVATE+KEY+reviewer+"):][:8]
	cases := map[string]string{
		"empty":               "",
		"verifier key":        k.VerifierKey(),
		"no prefix":           strings.TrimPrefix(good, "PRIVATE+"),
		"two newlines":        good + "\n\n",
		"trailing space":      good + " ",
		"upper-case hash":     strings.Replace(good, hash, strings.ToUpper(hash), 1),
		"short hash":          strings.Replace(good, "+"+hash+"+", "+"+hash[:7]+"+", 1),
		"other key's hash":    strings.Replace(good, "+"+hash+"+", "+"+otherText[len("PRIVATE+KEY+reviewer+"):][:8]+"+", 1),
		"bad base64":          strings.Replace(good, b64, b64[:len(b64)-2]+"!!", 1),
		"stray padding":       good + "==",
		"short key":           strings.Replace(good, b64, "AQID", 1),
		"long key":            strings.Replace(good, b64, b64[:len(b64)-1]+"AAAA", 1),
		"other algorithm":     strings.Replace(good, b64, "Ag"+b64[2:], 1),
		"extra field":         good + "+x",
		"name with space":     strings.Replace(good, "reviewer", "a b", 1),
		"name too long":       strings.Replace(good, "reviewer", strings.Repeat("r", 65), 1),
		"overlong text":       good + strings.Repeat("A", 200),
		"text with a newline": strings.Replace(good, "+", "\n+", 1),
	}
	if strings.ToUpper(hash) == hash {
		delete(cases, "upper-case hash") // all digits: nothing to upper-case
	}
	for name, text := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSignerKey([]byte(text))
			var ke *KeyError
			if !errors.As(err, &ke) || !errors.Is(err, ErrKeyFile) {
				t.Fatalf("error %v, want a *KeyError wrapping ErrKeyFile", err)
			}
			if strings.Contains(err.Error(), b64[:12]) {
				t.Fatalf("error quotes the key: %v", err)
			}
		})
	}
}

// TestSignerKeyRedacts: no formatter, logger or encoder shows a signer
// key's secret, also inside a struct.
func TestSignerKeyRedacts(t *testing.T) {
	k, err := GenerateKey(newFixedRand("redact"), "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	text := revealText(t, k)
	secret := text[strings.LastIndex(text, "+")+1:]
	type holder struct {
		Key  *SignerKey
		Val  SignerKey
		Name string
	}
	h := holder{Key: k, Val: *k, Name: "x"}
	outs := []string{k.String(), k.GoString()}
	if k.String() != "SignerKey(REDACTED)" || k.GoString() != "SignerKey(REDACTED)" {
		t.Errorf("String/GoString: %s %s", k.String(), k.GoString())
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		outs = append(outs, fmt.Sprintf(verb, k), fmt.Sprintf(verb, *k), fmt.Sprintf(verb, h), fmt.Sprintf(verb, &h))
	}
	var buf bytes.Buffer
	for _, hd := range []slog.Handler{slog.NewJSONHandler(&buf, nil), slog.NewTextHandler(&buf, nil)} {
		slog.New(hd).Info("key", "key", k, "val", *k, "holder", h)
	}
	outs = append(outs, buf.String())
	if b, err := json.Marshal(k); err == nil {
		t.Errorf("json.Marshal encoded the key: %s", b)
	}
	if b, err := json.Marshal(h); err == nil {
		t.Errorf("json.Marshal encoded a struct holding the key: %s", b)
	}
	if _, err := k.MarshalText(); err == nil {
		t.Error("MarshalText succeeded")
	}
	var gb bytes.Buffer
	if err := gob.NewEncoder(&gb).Encode(h); err == nil {
		t.Error("gob encoded the key")
	}
	outs = append(outs, gb.String())
	for _, o := range outs {
		if strings.Contains(o, secret) || strings.Contains(o, secret[:16]) {
			t.Fatalf("output shows the key: %q", o)
		}
	}
}

// TestSignerKeyWipe: a wiped key signs nothing and reveals nothing; Wipe
// is idempotent; concurrent use and Wipe are race-free.
func TestSignerKeyWipe(t *testing.T) {
	k, err := GenerateKey(newFixedRand("wipe"), "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := Canonical(irreversibleRoute(t))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 20 {
				if _, err := Approve(k, doc); err != nil && !errors.Is(err, ErrKeyWiped) {
					t.Error(err)
				}
			}
		})
	}
	wg.Go(k.Wipe)
	wg.Wait()
	k.Wipe()
	if _, err := Approve(k, doc); !errors.Is(err, ErrKeyWiped) {
		t.Errorf("Approve with a wiped key: %v", err)
	}
	if err := k.Reveal(func([]byte) error { return nil }); !errors.Is(err, ErrKeyWiped) {
		t.Errorf("Reveal of a wiped key: %v", err)
	}
	if _, err := Approve(nil, doc); !errors.Is(err, ErrKeyWiped) {
		t.Errorf("Approve with no key: %v", err)
	}
	if err := WriteSignerKey(filepath.Join(t.TempDir(), "k"), k); !errors.Is(err, ErrKeyWiped) {
		t.Errorf("WriteSignerKey of a wiped key: %v", err)
	}
}

// TestSignerKeyFile: the key is written 0600 and read back; an existing
// file is never overwritten; a file that is not the user's private
// regular file is refused.
func TestSignerKeyFile(t *testing.T) {
	dir := t.TempDir()
	k, err := GenerateKey(newFixedRand("file"), "reviewer")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "reviewer.key")
	if err := WriteSignerKey(path, k); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	if string(data) != revealText(t, k)+"\n" {
		t.Error("file is not the key text and a newline")
	}
	back, err := ReadSignerKey(path)
	if err != nil {
		t.Fatal(err)
	}
	if revealText(t, back) != revealText(t, k) {
		t.Error("key read back differs")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}

	// Never overwritten.
	other, _ := GenerateKey(newFixedRand("other"), "reviewer")
	err = WriteSignerKey(path, other)
	if !errors.Is(err, fs.ErrExist) || !errors.Is(err, ErrKeyFile) {
		t.Fatalf("second write: %v, want fs.ErrExist and ErrKeyFile", err)
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, data) {
		t.Fatal("existing key overwritten")
	}
	link := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), link); err != nil {
		t.Fatal(err)
	}
	if err := WriteSignerKey(link, other); !errors.Is(err, fs.ErrExist) {
		t.Errorf("write through a dangling symlink: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "nowhere")); err == nil {
		t.Error("the symlink was followed")
	}

	refusals := map[string]func(p string) error{
		"group readable": func(p string) error { return os.Chmod(p, 0o640) },
		"symlink": func(p string) error {
			os.Remove(p)
			return os.Symlink(path, p)
		},
		"directory": func(p string) error { os.Remove(p); return os.Mkdir(p, 0o700) },
		"fifo":      func(p string) error { os.Remove(p); return syscall.Mkfifo(p, 0o600) },
		"too large": func(p string) error { return os.WriteFile(p, append(data, bytes.Repeat([]byte("A"), 200)...), 0o600) },
		"not a key": func(p string) error { return os.WriteFile(p, []byte("PRIVATE+KEY+"+canary+"\n"), 0o600) },
	}
	if os.Geteuid() == 0 {
		refusals["other owner"] = func(p string) error { return os.Chown(p, 65534, 65534) }
	} else {
		t.Log("not root: the owner check is not exercised")
	}
	for name, prep := range refusals {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "k")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := prep(p); err != nil {
				t.Fatal(err)
			}
			_, err := ReadSignerKey(p)
			var ke *KeyError
			if !errors.As(err, &ke) || !errors.Is(err, ErrKeyFile) || ke.File != p {
				t.Fatalf("error %v, want a *KeyError naming the file", err)
			}
			if strings.Contains(err.Error(), canary) || bytes.Contains([]byte(err.Error()), data[20:40]) {
				t.Fatalf("error quotes the file: %v", err)
			}
		})
	}
	if _, err := ReadSignerKey(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
