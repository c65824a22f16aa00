package seal

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

var testBinding = OutputBinding{Lease: "pcl:0123456789abcdef0123456789abcdef", ReturnDigest: "sha256:" + strings.Repeat("ab", 32)}

// sealPieces seals plain in pieces of n bytes (one empty piece if plain is
// empty) to recipient.
func sealPieces(t *testing.T, recipient [KeySize]byte, b OutputBinding, plain []byte, n int) ([KeySize]byte, [][]byte) {
	t.Helper()
	s, err := NewOutputSealer(recipient, b)
	if err != nil {
		t.Fatalf("NewOutputSealer: %v", err)
	}
	var pieces [][]byte
	for first := true; first || len(plain) > 0; first = false {
		k := min(n, len(plain))
		p, err := s.Seal(nil, plain[:k], k == len(plain))
		if err != nil {
			t.Fatalf("Seal: %v", err)
		}
		pieces, plain = append(pieces, p), plain[k:]
	}
	if _, err := s.Seal(nil, []byte("more"), true); !errors.Is(err, ErrOrder) {
		t.Errorf("a piece after the last: %v, want ErrOrder", err)
	}
	return s.Ephemeral(), pieces
}

// openPieces opens pieces in order with k under b, marking the last one
// as the last.
func openPieces(k *OutputKey, eph [KeySize]byte, b OutputBinding, pieces [][]byte) ([]byte, error) {
	o, err := k.Opener(eph, b)
	if err != nil {
		return nil, err
	}
	var out []byte
	for i, p := range pieces {
		prev := len(out)
		if out, err = o.Open(out, p, i == len(pieces)-1); err != nil {
			if len(out) != prev {
				return out, errors.New("a refused piece was appended")
			}
			return out, err
		}
	}
	if !o.Done() {
		return out, errors.New("not done after the last piece")
	}
	return out, nil
}

// TestOutputRoundTrip: an output sealed in pieces to a client's ephemeral
// key opens to the same bytes with that key, and no piece holds a run of
// the plaintext.
func TestOutputRoundTrip(t *testing.T) {
	plain := bytes.Repeat([]byte(`{"owner":"VAULTD-CANARY-output-0001"},`), 1000)
	for _, tc := range []struct {
		name  string
		plain []byte
		n     int
	}{{"pieces", plain, 4096}, {"one piece", plain, len(plain)}, {"ragged", plain, 4097}, {"empty", nil, 4096}} {
		t.Run(tc.name, func(t *testing.T) {
			k, err := NewOutputKey()
			if err != nil {
				t.Fatal(err)
			}
			eph, pieces := sealPieces(t, k.Public(), testBinding, tc.plain, tc.n)
			for i, p := range pieces {
				if bytes.Contains(p, []byte("VAULTD-CANARY")) {
					t.Errorf("piece %d holds plaintext", i)
				}
			}
			out, err := openPieces(k, eph, testBinding, pieces)
			if err != nil || !bytes.Equal(out, tc.plain) {
				t.Fatalf("open: %v (%d bytes, want %d)", err, len(out), len(tc.plain))
			}
			if k.priv != nil {
				t.Errorf("the private scalar survives Opener")
			}
			if _, err := k.Opener(eph, testBinding); !errors.Is(err, ErrKey) {
				t.Errorf("a second Opener: %v, want ErrKey (the key opens one output)", err)
			}
		})
	}
}

// TestOutputRefused: the output opens only with the key it was sealed to,
// for the lease and return it was sealed for, whole and in order.
func TestOutputRefused(t *testing.T) {
	plain := bytes.Repeat([]byte("restored owner value "), 600)
	k0, _ := NewOutputKey()
	pub := k0.Public()
	eph, pieces := sealPieces(t, pub, testBinding, plain, 4096)
	if len(pieces) < 3 {
		t.Fatalf("%d pieces", len(pieces))
	}
	other := func(f func(*OutputBinding)) OutputBinding { b := testBinding; f(&b); return b }
	swapped := append([][]byte{pieces[1], pieces[0]}, pieces[2:]...)
	flipped := append([][]byte(nil), pieces...)
	flipped[1] = append([]byte(nil), flipped[1]...)
	flipped[1][7] ^= 1
	tests := []struct {
		name   string
		key    func() *OutputKey
		eph    [KeySize]byte
		b      OutputBinding
		pieces [][]byte
	}{
		{"another client key", func() *OutputKey { k, _ := NewOutputKey(); return k }, eph, testBinding, pieces},
		{"the client's key, another vault ephemeral", func() *OutputKey { k := *k0; k.priv = bytes.Clone(k0.priv); return &k }, pub, testBinding, pieces},
		{"another lease", nil, eph, other(func(b *OutputBinding) { b.Lease = "pcl:ffffffffffffffffffffffffffffffff" }), pieces},
		{"another return", nil, eph, other(func(b *OutputBinding) { b.ReturnDigest = "sha256:" + strings.Repeat("cd", 32) }), pieces},
		{"pieces swapped", nil, eph, testBinding, swapped},
		{"a piece altered", nil, eph, testBinding, flipped},
		{"truncated", nil, eph, testBinding, pieces[:len(pieces)-1]},
		{"a piece dropped", nil, eph, testBinding, append(append([][]byte(nil), pieces[:1]...), pieces[2:]...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var k *OutputKey
			if tc.key != nil {
				k = tc.key()
			} else {
				k = &OutputKey{priv: bytes.Clone(k0.priv), pub: pub}
			}
			_, err := openPieces(k, tc.eph, tc.b, tc.pieces)
			var se *Error
			if !errors.Is(err, ErrAuth) || !errors.As(err, &se) || se.Code == "" {
				t.Errorf("open: %v, want ErrAuth", err)
			}
		})
	}
	// The control: the same pieces open with the right key.
	if out, err := openPieces(k0, eph, testBinding, pieces); err != nil || !bytes.Equal(out, plain) {
		t.Fatalf("control: %v", err)
	}
}

// TestOutputKeyRefused: the vault refuses to seal to a client key that is
// not a usable X25519 public key (ECDH would yield the all-zero secret).
func TestOutputKeyRefused(t *testing.T) {
	var zero, one [KeySize]byte
	one[0] = 1
	// A point of order 8 (RFC 7748 §6.1 lists the small-order points).
	order8 := [KeySize]byte{0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a,
		0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00}
	for name, k := range map[string][KeySize]byte{"zero": zero, "order 1": one, "order 8": order8} {
		if s, err := NewOutputSealer(k, testBinding); s != nil || !errors.Is(err, ErrKey) {
			t.Errorf("%s: %v, want ErrKey", name, err)
		}
	}
	long := OutputBinding{Lease: strings.Repeat("x", maxBindingField+1)}
	k, _ := NewOutputKey()
	if _, err := NewOutputSealer(k.Public(), long); !errors.Is(err, ErrLimit) {
		t.Errorf("an overlong binding: %v", err)
	}
}
