package grammar

import (
	"bytes"

	"github.com/cespare/xxhash/v2"
)

// strset is an immutable open-addressing hash set of byte strings, built once
// from a vocabulary. Lookups hash the probe with xxhash and compare at most a
// few candidates, so a lookup is O(1) in the size of the vocabulary and O(n) in
// the length of the probe. It never allocates on lookup.
type strset struct {
	mask  uint64
	slots []slot
	keys  [][]byte
}

type slot struct {
	hash uint64
	idx  int32 // index into keys, plus one; 0 marks an empty slot
}

func newStrset(keys [][]byte) *strset {
	n := 8
	for n < 2*len(keys) {
		n <<= 1
	}
	s := &strset{mask: uint64(n - 1), slots: make([]slot, n)}
	for _, k := range keys {
		s.insert(k)
	}
	return s
}

// insert adds k if absent and returns its index.
func (s *strset) insert(k []byte) int32 {
	h := xxhash.Sum64(k)
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		sl := &s.slots[i]
		if sl.idx == 0 {
			s.keys = append(s.keys, k)
			sl.hash, sl.idx = h, int32(len(s.keys))
			return sl.idx - 1
		}
		if sl.hash == h && bytes.Equal(s.keys[sl.idx-1], k) {
			return sl.idx - 1
		}
	}
}

// lookup returns the index of k, or -1.
func (s *strset) lookup(k []byte) int32 {
	h := xxhash.Sum64(k)
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		sl := s.slots[i]
		if sl.idx == 0 {
			return -1
		}
		if sl.hash == h && bytes.Equal(s.keys[sl.idx-1], k) {
			return sl.idx - 1
		}
	}
}

func (s *strset) has(k []byte) bool { return s.lookup(k) >= 0 }

func (s *strset) len() int { return len(s.keys) }
