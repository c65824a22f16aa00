package verifier

import (
	"encoding/binary"
	"hash/maphash"
)

// byteTable is an open-addressing hash set of (tag, bytes) keys that
// numbers its keys 0, 1, 2… in order of insertion. It stands where a Go map
// keyed by string(bytes) would: a lookup hashes the bytes once and
// allocates nothing, and the keys are copied into one arena, so that
// comparing a key reads a few compact megabytes, not a random place in a
// 64 MiB text. The tag tells keys of different kinds apart (an owner
// category, a kind of vocabulary item, a module).
//
// Its memory is three byte buffers from newBuffer, little-endian encoded,
// so that in a fresh process (the plugin) it is mapped in at once rather
// than faulted in page by page; release frees them, and the buffers they
// outgrew, when the check ends. The seed is random per
// table, so that no input can be crafted to make its probes long. Keys are
// bounded by the documents they come from (at most 1 GiB each,
// canon.DefaultMaxBytes), so offsets fit in 32 bits.
type byteTable struct {
	seed  maphash.Seed
	slots growBuf // slotSize bytes per slot: key number+1 (0: empty), low 32 bits of the hash, key offset, key length
	nslot int     // a power of two; at most half the slots are used
	keys  growBuf // 4 bytes per key number: the key's offset in the arena
	arena growBuf // per key: its tag (4 bytes), then its bytes
	n     int     // keys
}

const slotSize = 16

func newByteTable() *byteTable {
	t := &byteTable{seed: maphash.MakeSeed(), nslot: 64}
	t.slots.reset(64 * slotSize)
	return t
}

func (t *byteTable) hash(b []byte) uint64 { return maphash.Bytes(t.seed, b) }

// bytes returns the bytes of key id.
func (t *byteTable) bytes(id int) []byte {
	off := int(le32(t.keys.b, 4*id))
	return t.key(off)
}

// tag returns the tag of key id.
func (t *byteTable) tag(id int) int {
	off := int(le32(t.keys.b, 4*id))
	return int(int32(le32(t.arena.b, off)))
}

// key returns the bytes of the key whose record starts at off.
func (t *byteTable) key(off int) []byte {
	n := int(le32(t.arena.b, off+4))
	return t.arena.b[off+8 : off+8+n : off+8+n]
}

// find returns the number of (tag, b), or -1 and the slot where it would be
// inserted. h is t.hash(b).
func (t *byteTable) find(tag int, b []byte, h uint64) (int, int) {
	mask := t.nslot - 1
	slots, arena := t.slots.b, t.arena.b
	for i := int(h>>32) & mask; ; i = (i + 1) & mask {
		s := slots[i*slotSize : i*slotSize+slotSize : i*slotSize+slotSize]
		id := le32(s, 0)
		if id == 0 {
			return -1, i
		}
		if le32(s, 4) != uint32(h) {
			continue
		}
		off := int(le32(s, 8))
		if int32(le32(arena, off)) == int32(tag) && string(t.key(off)) == string(b) {
			return int(id - 1), i
		}
	}
}

// has reports whether (tag, b) is in the table.
func (t *byteTable) has(tag int, b []byte) bool {
	id, _ := t.find(tag, b, t.hash(b))
	return id >= 0
}

// insert adds (tag, b), known to be absent, at slot (from find) and returns
// its number.
func (t *byteTable) insert(tag int, b []byte, h uint64, slot int) int {
	id := t.n
	t.n++
	off := len(t.arena.b)
	rec := t.arena.extend(8 + len(b))
	put32(rec, 0, uint32(int32(tag)))
	put32(rec, 4, uint32(len(b)))
	copy(rec[8:], b)
	put32(t.keys.extend(4), 0, uint32(off))
	t.setSlot(slot, id, h, off)
	if 2*t.n > t.nslot {
		t.grow()
	}
	return id
}

func (t *byteTable) setSlot(i, id int, h uint64, off int) {
	s := t.slots.b[i*slotSize:]
	put32(s, 0, uint32(id+1))
	put32(s, 4, uint32(h))
	put32(s, 8, uint32(off))
}

// add inserts (tag, b) unless it is there, and returns its number.
func (t *byteTable) add(tag int, b []byte) int {
	h := t.hash(b)
	id, slot := t.find(tag, b, h)
	if id < 0 {
		id = t.insert(tag, b, h, slot)
	}
	return id
}

// grow doubles the slots and re-inserts every key.
func (t *byteTable) grow() {
	t.nslot *= 2
	t.slots.reset(t.nslot * slotSize)
	mask := t.nslot - 1
	for id := range t.n {
		off := int(le32(t.keys.b, 4*id))
		h := t.hash(t.key(off))
		i := int(h>>32) & mask
		for le32(t.slots.b, i*slotSize) != 0 {
			i = (i + 1) & mask
		}
		t.setSlot(i, id, h, off)
	}
}

// len returns the number of keys.
func (t *byteTable) len() int { return t.n }

// release frees the table's memory; the table must not be used after.
func (t *byteTable) release() {
	t.slots.release()
	t.keys.release()
	t.arena.release()
}

func le32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i:]) }

func put32(b []byte, i int, v uint32) { binary.LittleEndian.PutUint32(b[i:], v) }

// growBuf is a byte slice whose memory comes from newBuffer: it doubles by
// copying into a new buffer. The buffers it outgrew are only freed with the
// last one, by release, so that a slice of them taken before a growth stays
// valid until then.
type growBuf struct {
	b     []byte // len: used; cap: the buffer
	frees []func()
}

// extend lengthens the slice by n zero bytes and returns them.
func (g *growBuf) extend(n int) []byte {
	l := len(g.b)
	if l+n > cap(g.b) {
		nb, free := newBuffer(max(2*cap(g.b), l+n, 256))
		copy(nb, g.b)
		g.b, g.frees = nb[:l], append(g.frees, free)
	}
	g.b = g.b[:l+n]
	return g.b[l : l+n : l+n]
}

// reset replaces the slice with n zero bytes.
func (g *growBuf) reset(n int) {
	nb, free := newBuffer(n)
	g.b, g.frees = nb, append(g.frees, free)
}

// release frees every buffer; nothing may use a slice of them after.
func (g *growBuf) release() {
	for _, free := range g.frees {
		free()
	}
	g.b, g.frees = nil, nil
}

// valueTable numbers the cut's owner values, keyed by category and the
// value as written in the source (escapes kept), and gives each its
// irreversible number: the order of its first appearance among the values
// of its category in the cut, from 1.
type valueTable struct {
	byteTable
	n    []int32  // irreversible number, by value number
	next [8]int32 // last irreversible number given, per category
}

func newValueTable() *valueTable {
	return &valueTable{byteTable: *newByteTable()}
}

// findValue returns the number of the value v of category cat, or -1 and
// the slot and hash for addValue.
func (t *valueTable) findValue(cat int, v []byte) (id, slot int, h uint64) {
	h = t.hash(v)
	id, slot = t.find(cat, v, h)
	return id, slot, h
}

// addValue adds the value v of category cat at slot, with the next
// irreversible number of its category, and returns its number.
func (t *valueTable) addValue(cat int, v []byte, h uint64, slot int) int {
	t.next[cat]++
	t.n = append(t.n, t.next[cat])
	return t.insert(cat, v, h, slot)
}
