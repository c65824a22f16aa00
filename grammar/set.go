package grammar

import (
	"bytes"

	"github.com/cespare/xxhash/v2"
)

// strset is an immutable open-addressing hash set of byte strings, built once
// from a vocabulary. A probe hashes the candidate with xxhash and compares
// bytes only where the full 64-bit hash and the length agree; a hash match is
// never trusted on its own. Lookups are O(1) in the size of the vocabulary,
// O(n) in the length of the probe, and never allocate. Keys live in one
// contiguous buffer for cache locality.
type strset struct {
	mask  uint64
	slots []slot
	data  []byte     // all keys, concatenated
	keys  [][]byte   // keys[i] aliases data
	offs  [][2]int32 // offset and length of keys[i] in data
}

type slot struct {
	hash uint64
	idx  int32 // index into keys, plus one; 0 marks an empty slot
	n    int32 // key length
}

func newStrset(keys [][]byte) *strset {
	n := 8
	for n < 2*len(keys) {
		n <<= 1
	}
	total := 0
	for _, k := range keys {
		total += len(k)
	}
	s := &strset{mask: uint64(n - 1), slots: make([]slot, n), data: make([]byte, 0, total)}
	for _, k := range keys {
		s.insert(k)
	}
	s.keys = make([][]byte, len(s.offs))
	for i, o := range s.offs {
		s.keys[i] = s.data[o[0] : o[0]+o[1] : o[0]+o[1]]
	}
	return s
}

// insert adds k if absent. Used only while building.
func (s *strset) insert(k []byte) {
	h := xxhash.Sum64(k)
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		sl := &s.slots[i]
		if sl.idx == 0 {
			s.offs = append(s.offs, [2]int32{int32(len(s.data)), int32(len(k))})
			s.data = append(s.data, k...)
			sl.hash, sl.idx, sl.n = h, int32(len(s.offs)), int32(len(k))
			return
		}
		if sl.hash == h && int(sl.n) == len(k) {
			o := s.offs[sl.idx-1]
			if bytes.Equal(s.data[o[0]:o[0]+o[1]], k) {
				return
			}
		}
	}
}

// lookup returns the index of k, or -1.
func (s *strset) lookup(k []byte) int32 {
	h := xxhash.Sum64(k)
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		sl := &s.slots[i]
		if sl.idx == 0 {
			return -1
		}
		if sl.hash == h && int(sl.n) == len(k) {
			o := s.offs[sl.idx-1]
			if string(s.data[o[0]:o[0]+o[1]]) == string(k) {
				return sl.idx - 1
			}
		}
	}
}

func (s *strset) has(k []byte) bool { return s.lookup(k) >= 0 }

func (s *strset) len() int { return len(s.offs) }
