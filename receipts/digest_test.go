package receipts

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/canon"
)

func TestSHA256(t *testing.T) {
	// FIPS 180-2 test vector "abc".
	const want = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	if got := SHA256([]byte("abc")); got != want {
		t.Errorf("SHA256(abc) = %s", got)
	}
	h := NewSHA256()
	h.Write([]byte("a"))
	h.Write([]byte("bc"))
	if got := FormatSHA256(h.Sum(nil)); got != want {
		t.Errorf("streaming = %s", got)
	}
}

func TestFormatSHA256WrongLength(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("FormatSHA256 accepted a 31-byte sum")
		}
	}()
	FormatSHA256(make([]byte, 31))
}

func TestParseDigest(t *testing.T) {
	hex64 := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	for _, prefix := range []string{PrefixSHA256, PrefixHMAC} {
		alg, sum, err := ParseDigest(prefix + hex64)
		if err != nil || alg != prefix || FormatSHA256(sum[:]) != "sha256:"+hex64 {
			t.Errorf("ParseDigest(%s…) = %q, %x, %v", prefix, alg, sum, err)
		}
	}
	tests := []struct {
		name string
		in   string
		want DigestError
	}{
		{"empty", "", DigestError{MalformedRecord, 0, "unknown digest algorithm"}},
		{"no prefix", hex64, DigestError{MalformedRecord, 0, "unknown digest algorithm"}},
		{"upper-case prefix", "SHA256:" + hex64, DigestError{MalformedRecord, 0, "unknown digest algorithm"}},
		{"other algorithm", "sha512:" + hex64, DigestError{MalformedRecord, 0, "unknown digest algorithm"}},
		{"prefix only", "sha256:", DigestError{MalformedRecord, 7, "digest is not 64 hex digits"}},
		{"short", "sha256:" + hex64[:63], DigestError{MalformedRecord, 70, "digest is not 64 hex digits"}},
		{"long", "hmac-sha256:" + hex64 + "0", DigestError{MalformedRecord, 76, "digest is not 64 hex digits"}},
		{"upper-case hex", "sha256:" + strings.ToUpper(hex64), DigestError{MalformedRecord, 7, "digest is not lower-case hex"}},
		{"non-hex", "sha256:" + hex64[:10] + "g" + hex64[11:], DigestError{MalformedRecord, 17, "digest is not lower-case hex"}},
		{"space", "sha256: " + hex64[1:], DigestError{MalformedRecord, 7, "digest is not lower-case hex"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseDigest(tt.in)
			var de *DigestError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *DigestError", err)
			}
			if diff := cmp.Diff(tt.want, *de); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if len(tt.in) > 8 && strings.Contains(err.Error(), tt.in[7:]) {
				t.Errorf("error quotes the digest: %v", err)
			}
		})
	}
}

func TestDigestCanonical(t *testing.T) {
	// Independent value: Python hashlib.sha256(b'{"a":1,"b":[true]}').
	const want = "sha256:90eddf64b875cb5fa184bb12503cc7309b6ce21b175521a80bd8d83082bae604"
	type doc struct {
		B []bool `json:"b"`
		A int    `json:"a"`
	}
	for _, v := range []any{doc{A: 1, B: []bool{true}}, map[string]any{"b": []any{true}, "a": 1.0}} {
		got, err := DigestCanonical(v)
		if err != nil || got != want {
			t.Errorf("DigestCanonical(%#v) = %s, %v", v, got, err)
		}
	}
	// Reformatting and reordering a document does not change its digest.
	c, err := canon.Canonicalize([]byte("{ \"b\" : [ true ],\n \"a\" : 1.0e0 }"))
	if err != nil || SHA256(c) != want {
		t.Errorf("digest of reformatted document = %s, %v", SHA256(c), err)
	}
	if _, err := DigestCanonical(map[string]any{"x": "\xff"}); err == nil {
		t.Error("DigestCanonical accepted invalid UTF-8")
	}
}

// TestChunkedDigests: the chunked writes of SHA256 and HMAC give the
// digests of a single write, at and around the chunk boundary.
func TestChunkedDigests(t *testing.T) {
	key, _ := NewEvidenceKey(bytes.Repeat([]byte{7}, 32))
	buf := make([]byte, 3*hashChunk+5)
	for i := range buf {
		buf[i] = byte(i * 31)
	}
	for _, n := range []int{0, 1, hashChunk - 1, hashChunk, hashChunk + 1, 2 * hashChunk, len(buf)} {
		b := buf[:n]
		sum := sha256.Sum256(b)
		if got, want := SHA256(b), "sha256:"+hex.EncodeToString(sum[:]); got != want {
			t.Errorf("SHA256 of %d bytes = %s, want %s", n, got, want)
		}
		m := hmac.New(sha256.New, bytes.Repeat([]byte{7}, 32))
		m.Write(b)
		if got, want := key.HMAC(b), "hmac-sha256:"+hex.EncodeToString(m.Sum(nil)); got != want {
			t.Errorf("HMAC of %d bytes = %s, want %s", n, got, want)
		}
	}
}

// digestShape is a digest as documented, written independently of
// ParseDigest.
var digestShape = regexp.MustCompile(`^(sha256|hmac-sha256):[0-9a-f]{64}$`)

// FuzzParseDigest: ParseDigest accepts exactly "sha256:" or "hmac-sha256:"
// and 64 lower-case hex digits, and an accepted digest is what
// FormatSHA256 or FormatHMAC writes for its sum. A refusal is a
// *DigestError with code MALFORMED_RECORD, one of the fixed reasons and an
// offset within the string, and its text is made of those two alone. Any
// 32-byte sum, formatted, parses back to itself.
func FuzzParseDigest(f *testing.F) {
	const canary = "c0ffee1dcafe" // hex, but no digest
	hex64 := "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
	for _, s := range []string{
		PrefixSHA256 + hex64, PrefixHMAC + hex64, "", hex64, "sha256:", "hmac-sha256:", "SHA256:" + hex64,
		"sha512:" + hex64, "sha256:" + hex64[:63], "sha256:" + hex64 + "0", "sha256:" + strings.ToUpper(hex64),
		"sha256: " + hex64[1:], "sha256:" + hex64[:52] + canary, "sha256:" + canary + "-" + canary,
		"hmac-sha256:" + hex64[:40] + "\xff" + canary, "sha256:" + hex64 + "\n",
	} {
		f.Add(s, make([]byte, 32))
	}
	f.Add(PrefixSHA256+hex64, bytes.Repeat([]byte{0xff}, 32))
	reasons := []string{"unknown digest algorithm", "digest is not lower-case hex", "digest is not 64 hex digits"}
	f.Fuzz(func(t *testing.T, s string, sum []byte) {
		if len(sum) == 32 {
			for _, d := range []string{FormatSHA256(sum), FormatHMAC(sum)} {
				if _, g, err := ParseDigest(d); err != nil || !bytes.Equal(g[:], sum) {
					t.Fatalf("%s parses as %x, %v", d, g, err)
				}
			}
		}
		alg, got, err := ParseDigest(s)
		if (err == nil) != digestShape.MatchString(s) {
			t.Fatalf("ParseDigest(%q) error %v, shape says %v", s, err, digestShape.MatchString(s))
		}
		if err != nil {
			var de *DigestError
			if !errors.As(err, &de) || de.Code != MalformedRecord || !slices.Contains(reasons, de.Reason) ||
				de.Offset < 0 || de.Offset > len(s) {
				t.Fatalf("ParseDigest(%q) error %#v", s, err)
			}
			if alg != "" || got != [32]byte{} {
				t.Fatalf("refused digest gave %q %x", alg, got)
			}
			// The text is made of the fixed reason and the offset only.
			if msg := err.Error(); msg != "receipts: digest: "+de.Reason+" at byte "+strconv.Itoa(de.Offset) {
				t.Fatalf("error text %q", msg)
			}
			return
		}
		var back string
		switch alg {
		case PrefixSHA256:
			back = FormatSHA256(got[:])
		case PrefixHMAC:
			back = FormatHMAC(got[:])
		default:
			t.Fatalf("algorithm %q", alg)
		}
		if back != s {
			t.Fatalf("ParseDigest(%q) formats back as %q", s, back)
		}
	})
}
