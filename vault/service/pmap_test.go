package service

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/privacycut/privacycut/vault/arena"
)

// TestTokenMACKnownAnswer pins the token MAC to DESIGN.md "Tokens": the
// first 100 bits of HMAC-SHA256(nskey, "privacycut/token/v1" 0x00 category
// 0x00 value) as 20 lower-case base32 characters, computed here with the
// standard library alone.
func TestTokenMACKnownAnswer(t *testing.T) {
	a, err := arena.New(64<<10, arena.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	key := bytes.Repeat([]byte{0x42}, 32)
	nskey, _ := a.Alloc(32)
	nskey.Fill(func(d []byte) error { copy(d, key); return nil })
	defer nskey.Wipe()
	h, err := newMAC(nskey)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ cat, value string }{
		{"module", "git.corp.example/payments/ledger"},
		{"team", "x"},
		{"host", strings.Repeat("h", 200)}, // several blocks and a tail
		{"person", strings.Repeat("p", 64-len(tokenDomain)-len("person")-2)}, // exactly one block
	} {
		v, _ := a.Alloc(len(tc.value))
		v.Fill(func(d []byte) error { copy(d, tc.value); return nil })
		scratch, _ := a.Alloc(msgLen(tc.cat, len(tc.value)))
		var got string
		err := scratch.Fill(func(msg []byte) error {
			return v.Reveal(func(value []byte) error {
				var err error
				got, err = tokenMAC(msg, h, tc.cat, value)
				return err
			})
		})
		scratch.Wipe()
		v.Wipe()
		if err != nil {
			t.Fatal(err)
		}
		ref := hmac.New(sha256.New, key)
		ref.Write([]byte("privacycut/token/v1\x00" + tc.cat + "\x00" + tc.value))
		want := b32.EncodeToString(ref.Sum(nil)[:13])[:20]
		if got != want {
			t.Errorf("mac(%s, %d bytes) = %s, want %s", tc.cat, len(tc.value), got, want)
		}
		if !validMAC([]byte(got)) {
			t.Errorf("mac %q is not 20 base32 characters", got)
		}
	}
	if a.Used() != 64 {
		t.Errorf("tokenMAC left %d bytes allocated besides the key", a.Used()-64)
	}
}

// FuzzWalkMap: the map parser never panics or reads out of bounds, and
// what it accepts it re-encodes identically.
func FuzzWalkMap(f *testing.F) {
	f.Add([]byte("PCM1\x00\x00\x00\x00"))
	f.Add([]byte("PCM1\x00\x00\x00\x01\x01aaaaaaaaaaaaaaaaaaaa\x00\x00\x00\x03abc"))
	f.Add([]byte("PCM1\x00\x00\x00\x02\x01aaaaaaaaaaaaaaaaaaaa\x00\x00\x00\x01x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var out []byte
		n := 0
		ok := walkMap(b, func(cat byte, mac, v []byte) bool {
			n++
			out = append(out, cat)
			out = append(out, mac...)
			out = append(out, byte(len(v)>>24), byte(len(v)>>16), byte(len(v)>>8), byte(len(v)))
			out = append(out, v...)
			return true
		})
		if !ok {
			return
		}
		want := append([]byte("PCM1"), byte(n>>24), byte(n>>16), byte(n>>8), byte(n))
		want = append(want, out...)
		if !bytes.Equal(want, b) {
			t.Errorf("accepted map does not re-encode to itself")
		}
	})
}
