package seal

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

// FuzzOpen: Open takes a request as a client sends it over the socket —
// clear categories, indices and lengths, and a sealed message. Whatever
// the fuzzer makes of a real request, Open never panics, refuses with a
// typed *Error, leaves the arena as it found it, and opens only the
// request exactly as sealed (all of it is bound: AEAD and associated data).
func FuzzOpen(f *testing.F) {
	a0 := newArena(f)
	kp, err := NewKeyPair(a0)
	if err != nil {
		f.Fatal(err)
	}
	orig, err := Seal(kp.Public(), pairs())
	if err != nil {
		f.Fatal(err)
	}
	lens := func(ls []uint32) []byte {
		var b []byte
		for _, l := range ls {
			b = binary.BigEndian.AppendUint32(b, l)
		}
		return b
	}
	f.Add(orig.Ephemeral[:], strings.Join(orig.Categories, ","), orig.Index, lens(orig.Lengths), orig.Sealed)
	f.Add(orig.Ephemeral[:], "module", []byte{0}, []byte{0, 0, 0, 1}, orig.Sealed[:17])
	f.Add([]byte{}, "", []byte{}, []byte{}, []byte{})
	f.Fuzz(func(t *testing.T, eph []byte, cats string, index, lengths, sealed []byte) {
		req := Request{Recipient: orig.Recipient, Index: index, Sealed: sealed}
		copy(req.Ephemeral[:], eph)
		if cats != "" {
			req.Categories = strings.Split(cats, ",")
		}
		for len(lengths) >= 4 {
			req.Lengths = append(req.Lengths, binary.BigEndian.Uint32(lengths))
			lengths = lengths[4:]
		}
		same := bytes.Equal(req.Ephemeral[:], orig.Ephemeral[:]) && len(eph) == len(orig.Ephemeral) &&
			cats == strings.Join(orig.Categories, ",") && bytes.Equal(index, orig.Index) &&
			equalU32(req.Lengths, orig.Lengths) && len(lengths) == 0 && bytes.Equal(sealed, orig.Sealed)
		base := a0.Used()
		s, err := kp.Open(a0, req)
		if err == nil {
			defer s.Wipe()
			if !same {
				t.Fatalf("opened a request that is not the one sealed: %+v", req)
			}
			return
		}
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("untyped error %v", err)
		}
		if same {
			t.Fatalf("the request as sealed did not open: %v", err)
		}
		if a0.Used() != base {
			t.Fatalf("arena use %d after a refusal, %d before", a0.Used(), base)
		}
	})
}

func equalU32(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
