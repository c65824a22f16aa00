package grammar

import (
	"crypto/rand"
	"encoding/binary"
	"math/bits"

	"github.com/cespare/xxhash/v2"
)

// strset is an immutable hash set of byte strings, built once from a
// vocabulary, tuned for the parser's hot path (measured: see
// BenchmarkCheck):
//
//   - open addressing over 8-byte slots (32 bits of the hash and the key's
//     number), so the probe table stays small enough for cache;
//   - keys stored contiguously as a 2-byte length and the bytes;
//   - an optional membership filter, used where a miss is the common case
//     (the ambiguity check of owner values): first an 8 KiB bitmap of the
//     (first byte, last byte) pairs of the keys and a word of their lengths,
//     tested before any hashing, then a 32 KiB two-probe Bloom filter on the
//     hash, so a miss rarely hashes and more rarely touches the table;
//   - sets of at most 8 keys (statuses, questions) are scanned linearly;
//   - find, the lookup of the parser's fast path, is one call: it hashes,
//     probes and compares the key a word at a time inline.
//
// The hash is normally a seeded mix of a fixed-size sketch of the key (its
// length and its first, middle and last eight bytes), so hashing costs the same for
// a 10-byte version and a 160-byte citation. A vocabulary in which more than
// maxSketchShare keys share a sketch — which an adversarial vocabulary could
// arrange, whatever the seed — is hashed over all its bytes with xxhash
// instead, so chains stay short either way. A hash match is never trusted on
// its own: every hit compares the bytes. Lookups are O(1) in the size of the
// vocabulary and never allocate.
type strset struct {
	mask   uint64
	seed   uint64
	full   bool     // hash whole keys with xxhash
	slots  []uint64 // top 32 bits of the hash | key offset+1 in data; 0 marks an empty slot
	data   []byte   // [len uint16][number uint32][bytes] per key: one cache line holds all a probe reads
	filter []uint64 // filterBits bits, or nil
	edges  []uint64 // with filter: bit first<<8|last for every key
	lens   uint64   // with filter: bit min(len, 63) for every key
	small  [][]byte // non-nil for sets of at most smallSet keys
	index  []uint32 // key number → offset into data
}

const (
	smallSet       = 8
	filterBits     = 1 << 18
	maxSketchShare = 4
)

// newStrset builds a set; withFilter adds the membership filter.
func newStrset(keys [][]byte, withFilter bool) *strset {
	n := 8
	for n < 2*len(keys) {
		n <<= 1
	}
	var seed [8]byte
	rand.Read(seed[:])
	s := &strset{mask: uint64(n - 1), slots: make([]uint64, n), seed: binary.LittleEndian.Uint64(seed[:]) | 1}
	// Count distinct keys per sketch (a key listed twice, such as a version
	// of several modules in the all-items set, shares nothing with itself).
	share := map[uint64]int{}
	seen := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		if _, dup := seen[string(k)]; dup {
			continue
		}
		seen[string(k)] = struct{}{}
		h := sketch(k, s.seed)
		share[h]++
		if share[h] > maxSketchShare {
			s.full = true
			break
		}
	}
	if withFilter {
		s.filter = make([]uint64, filterBits/64)
		s.edges = make([]uint64, 1<<16/64)
	}
	for _, k := range keys {
		s.insert(k)
	}
	if len(s.index) <= smallSet {
		s.small = [][]byte{}
		for _, off := range s.index {
			s.small = append(s.small, s.key(off))
		}
	}
	return s
}

// sketch mixes the length and the first, middle and last eight bytes of k.
func sketch(k []byte, seed uint64) uint64 {
	var head, mid, tail uint64
	if n := len(k); n >= 8 {
		head = binary.LittleEndian.Uint64(k)
		mid = binary.LittleEndian.Uint64(k[(n-8)/2:])
		tail = binary.LittleEndian.Uint64(k[n-8:])
	} else {
		for i, c := range k {
			head |= uint64(c) << (8 * i)
		}
	}
	return mix(head, mid, tail, len(k), seed)
}

// mix is the sketch of a key of length n with the given words.
func mix(head, mid, tail uint64, n int, seed uint64) uint64 {
	hi, lo := bits.Mul64(head^seed, mid^0x9e3779b97f4a7c15^uint64(n))
	h := hi ^ lo
	hi, lo = bits.Mul64(h^tail, seed^0xbf58476d1ce4e5b9)
	return hi ^ lo
}

func (s *strset) hash(k []byte) uint64 {
	if s.full {
		return xxhash.Sum64(k) ^ s.seed
	}
	return sketch(k, s.seed)
}

func (s *strset) key(off uint32) []byte {
	n := uint32(binary.LittleEndian.Uint16(s.data[off:]))
	return s.data[off+6 : off+6+n : off+6+n]
}

// edge is the bit of k (not empty) in the edges bitmap.
func edge(k []byte) uint {
	return uint(k[0])<<8 | uint(k[len(k)-1])
}

// mayHold is the hash-free part of the filter: false only if no key has k's
// length (or, from 63 bytes on, no key is that long) or its first and last
// bytes. Only sets with a filter have it.
func (s *strset) mayHold(k []byte) bool {
	if s.lens&(1<<min(len(k), 63)) == 0 {
		return false
	}
	if len(k) == 0 {
		return true
	}
	e := edge(k)
	return s.edges[e>>6]&(1<<(e&63)) != 0
}

func (s *strset) filterHas(h uint64) bool {
	a, b := h&(filterBits-1), (h>>18)&(filterBits-1)
	return s.filter[a>>6]&(1<<(a&63)) != 0 && s.filter[b>>6]&(1<<(b&63)) != 0
}

// insert adds k if absent. Used only while building.
func (s *strset) insert(k []byte) {
	if len(k) > 0xffff {
		return // never an item: items are at most maxItem bytes
	}
	h := s.hash(k)
	tag := h >> 32 << 32
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		sl := s.slots[i]
		if sl == 0 {
			off := uint32(len(s.data))
			s.data = binary.LittleEndian.AppendUint16(s.data, uint16(len(k)))
			s.data = binary.LittleEndian.AppendUint32(s.data, uint32(len(s.index)))
			s.data = append(s.data, k...)
			s.index = append(s.index, off)
			s.slots[i] = tag | uint64(off+1)
			if s.filter != nil {
				a, b := h&(filterBits-1), (h>>18)&(filterBits-1)
				s.filter[a>>6] |= 1 << (a & 63)
				s.filter[b>>6] |= 1 << (b & 63)
				if len(k) > 0 {
					e := edge(k)
					s.edges[e>>6] |= 1 << (e & 63)
				}
				s.lens |= 1 << min(len(k), 63)
			}
			return
		}
		if sl&^0xffffffff == tag && string(s.key(uint32(sl)-1)) == string(k) {
			return
		}
	}
}

// lookup returns the number of k (its insertion order), or -1.
func (s *strset) lookup(k []byte) int32 {
	if s.small != nil {
		for i, x := range s.small {
			if string(x) == string(k) {
				return int32(i)
			}
		}
		return -1
	}
	if s.filter != nil && !s.mayHold(k) {
		return -1
	}
	h := s.hash(k)
	if s.filter != nil && !s.filterHas(h) {
		return -1
	}
	tag := h >> 32 << 32
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		sl := s.slots[i]
		if sl == 0 {
			return -1
		}
		if sl&^0xffffffff == tag {
			off := int(uint32(sl) - 1)
			n := int(binary.LittleEndian.Uint16(s.data[off:]))
			if n == len(k) && string(s.data[off+6:off+6+n]) == string(k) {
				return int32(binary.LittleEndian.Uint32(s.data[off+2:]))
			}
		}
	}
}

// find is lookup for the parser's hot path, in one call: for a key of at
// least eight bytes in a set that is hashed by sketch, it hashes, probes and
// compares inline, the bytes word by word (the first and last words, then
// the ones between). Anything else goes to lookup.
func (s *strset) find(k []byte) int32 {
	n := len(k)
	if n < 8 || s.small != nil || s.full || s.filter != nil {
		return s.lookup(k)
	}
	head := binary.LittleEndian.Uint64(k)
	tail := binary.LittleEndian.Uint64(k[n-8:])
	h := mix(head, binary.LittleEndian.Uint64(k[(n-8)/2:]), tail, n, s.seed)
	tag := h >> 32 << 32
probe:
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		sl := s.slots[i]
		if sl == 0 {
			return -1
		}
		if sl&^0xffffffff != tag {
			continue
		}
		e := s.data[uint32(sl)-1:]
		if len(e) < 6+n || int(binary.LittleEndian.Uint16(e)) != n {
			continue
		}
		d := e[6 : 6+n : 6+n]
		if binary.LittleEndian.Uint64(d) != head || binary.LittleEndian.Uint64(d[n-8:]) != tail {
			continue
		}
		for j := 8; j < n-8; j += 8 {
			if binary.LittleEndian.Uint64(d[j:]) != binary.LittleEndian.Uint64(k[j:]) {
				continue probe
			}
		}
		return int32(binary.LittleEndian.Uint32(e[2:]))
	}
}

func (s *strset) has(k []byte) bool { return s.lookup(k) >= 0 }

func (s *strset) len() int { return len(s.index) }

// keyAt returns key number i.
func (s *strset) keyAt(i int32) []byte { return s.key(s.index[i]) }

// spaceIndex returns the index of the first SP in b, or -1. Fields are short,
// so an inline word-at-a-time scan beats a call to bytes.IndexByte. The last
// word may be read from b's spare capacity, whose bytes never count.
func spaceIndex(b []byte) int {
	i := 0
	for ; len(b)-i >= 8; i += 8 {
		if t := zeroBytes(binary.LittleEndian.Uint64(b[i:i+8]) ^ 0x2020202020202020); t != 0 {
			return i + bits.TrailingZeros64(t)>>3
		}
	}
	if i == len(b) {
		return -1
	}
	if cap(b)-i >= 8 {
		if t := zeroBytes(binary.LittleEndian.Uint64(b[i:i+8]) ^ 0x2020202020202020); t != 0 {
			if i += bits.TrailingZeros64(t) >> 3; i < len(b) {
				return i
			}
		}
		return -1
	}
	for ; i < len(b); i++ {
		if b[i] == ' ' {
			return i
		}
	}
	return -1
}

// zeroBytes returns a word whose lowest set bit is the top bit of the first
// (lowest) zero byte of x, or 0 if x has none. Bits above that one are not
// exact: a borrow may flag a byte after a zero byte.
func zeroBytes(x uint64) uint64 {
	return (x - 0x0101010101010101) &^ x & 0x8080808080808080
}
