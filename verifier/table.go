package verifier

import "hash/maphash"

// byteTable is an open-addressing hash set of (tag, bytes) keys that
// numbers its keys 0, 1, 2… in order of insertion. It stands where a Go map
// keyed by string(bytes) would: a lookup hashes the bytes once and
// allocates nothing, and the keys are copied into one arena, so that
// comparing a key reads a few compact megabytes, not a random place in a
// 64 MiB text. The tag tells keys of different kinds apart (an owner
// category, a kind of vocabulary item, a module).
//
// The seed is random per table, so that no input can be crafted to make
// its probes long. Keys are bounded by the documents they come from (at
// most 1 GiB each, receipts.DefaultMaxBytes), so arena offsets fit in 32
// bits.
type byteTable struct {
	seed  maphash.Seed
	slots []tableSlot // power-of-two length; at most half full
	keys  []tableKey  // by key number
	arena []byte      // the keys' bytes, in order of insertion
}

// tableSlot is one slot: the key number plus one (0: empty), the low 32
// bits of the key's hash, and the key itself, so that a probe reads one
// slot and the arena.
type tableSlot struct {
	id, hash uint32
	tableKey
}

// tableKey locates a key: arena[off : off+n], and its tag.
type tableKey struct {
	off, n uint32
	tag    int32
}

func newByteTable() *byteTable {
	return &byteTable{seed: maphash.MakeSeed(), slots: make([]tableSlot, 64)}
}

func (t *byteTable) hash(b []byte) uint64 { return maphash.Bytes(t.seed, b) }

// bytes returns the bytes of key id.
func (t *byteTable) bytes(id int) []byte {
	k := t.keys[id]
	return t.arena[k.off : k.off+k.n : k.off+k.n]
}

// find returns the number of (tag, b), or -1 and the slot where it would be
// inserted. h is t.hash(b).
func (t *byteTable) find(tag int, b []byte, h uint64) (int, int) {
	mask := len(t.slots) - 1
	for i := int(h>>32) & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.id == 0 {
			return -1, i
		}
		if s.hash == uint32(h) && int(s.tag) == tag && string(t.arena[s.off:s.off+s.n]) == string(b) {
			return int(s.id - 1), i
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
	id := len(t.keys)
	k := tableKey{off: uint32(len(t.arena)), n: uint32(len(b)), tag: int32(tag)}
	t.arena = append(t.arena, b...)
	t.keys = append(t.keys, k)
	t.slots[slot] = tableSlot{id: uint32(id + 1), hash: uint32(h), tableKey: k}
	if 2*len(t.keys) > len(t.slots) {
		t.grow()
	}
	return id
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
	t.slots = make([]tableSlot, 2*len(t.slots))
	mask := len(t.slots) - 1
	for id, k := range t.keys {
		h := t.hash(t.arena[k.off : k.off+k.n])
		i := int(h>>32) & mask
		for t.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = tableSlot{id: uint32(id + 1), hash: uint32(h), tableKey: k}
	}
}

// len returns the number of keys.
func (t *byteTable) len() int { return len(t.keys) }

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
