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

// FuzzOpenOutput: a client opens a sealed output as the socket delivers it.
// Whatever the fuzzer makes of the two pieces of a real output (their
// bytes, which is last, the lease id bound), Open never panics, refuses
// with a typed *Error without appending, and opens only the pieces exactly
// as sealed, in order, under their binding.
func FuzzOpenOutput(f *testing.F) {
	plain := []byte(`{"owner":"VAULTD-CANARY-fuzz-output","team":"payments-core"}`)
	k0, err := NewOutputKey()
	if err != nil {
		f.Fatal(err)
	}
	priv0 := bytes.Clone(k0.priv)
	s, err := NewOutputSealer(k0.Public(), testBinding)
	if err != nil {
		f.Fatal(err)
	}
	p0, _ := s.Seal(nil, plain[:20], false)
	p1, _ := s.Seal(nil, plain[20:], true)
	eph := s.Ephemeral()
	f.Add(p0, p1, false, testBinding.Lease)
	f.Add(p1, p0, true, testBinding.Lease)
	f.Add(p0, p1, false, "pcl:another")
	f.Add(p0[:16], []byte{}, false, "")
	f.Fuzz(func(t *testing.T, q0, q1 []byte, firstLast bool, leaseID string) {
		k := &OutputKey{priv: bytes.Clone(priv0), pub: k0.pub}
		b := testBinding
		b.Lease = leaseID
		o, err := k.Opener(eph, b)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || len(leaseID) <= maxBindingField {
				t.Fatalf("Opener: %v", err)
			}
			return
		}
		dst := []byte("prefix")
		asSealed := leaseID == testBinding.Lease && !firstLast && bytes.Equal(q0, p0)
		out, err := o.Open(dst, q0, firstLast)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || len(out) != len(dst) {
				t.Fatalf("refusal %v appended %d bytes", err, len(out)-len(dst))
			}
			if asSealed {
				t.Fatalf("the first piece as sealed did not open: %v", err)
			}
			return
		}
		if !asSealed {
			t.Fatalf("opened a first piece that is not the one sealed")
		}
		out, err = o.Open(out, q1, true)
		if (err == nil) != bytes.Equal(q1, p1) {
			t.Fatalf("second piece: %v (as sealed: %v)", err, bytes.Equal(q1, p1))
		}
		if err == nil && !bytes.Equal(out[len(dst):], plain) {
			t.Fatalf("opened to other bytes")
		}
	})
}
