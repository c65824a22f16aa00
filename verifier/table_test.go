package verifier

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestByteTableAgainstMap drives the table and a Go map with the same keys,
// across many growths, and compares every answer: numbers in order of
// insertion, tags telling equal bytes apart, keys copied.
func TestByteTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type key struct {
		tag int
		b   string
	}
	tab := newByteTable()
	want := map[key]int{}
	var order []key
	for range 20000 {
		k := key{rng.IntN(3), strconv.Itoa(rng.IntN(5000))}
		if rng.IntN(10) == 0 {
			k.b = "" // the empty key is a key too
		}
		src := []byte(k.b)
		h := tab.hash(src)
		id, slot := tab.find(k.tag, src, h)
		n, ok := want[k]
		switch {
		case ok && id != n:
			t.Fatalf("find %v = %d, want %d", k, id, n)
		case !ok && id >= 0:
			t.Fatalf("find %v = %d, want absent", k, id)
		case !ok:
			id = tab.insert(k.tag, src, h, slot)
			if id != len(order) {
				t.Fatalf("insert %v numbered %d, want %d", k, id, len(order))
			}
			want[k] = id
			order = append(order, k)
			// The table keeps its own copy.
			for i := range src {
				src[i] = 'x'
			}
		}
	}
	if tab.len() != len(order) {
		t.Fatalf("len %d, want %d", tab.len(), len(order))
	}
	for id, k := range order {
		if got := string(tab.bytes(id)); got != k.b {
			t.Fatalf("bytes(%d) = %q, want %q", id, got, k.b)
		}
		if !tab.has(k.tag, []byte(k.b)) || tab.add(k.tag, []byte(k.b)) != id {
			t.Fatalf("key %v lost", k)
		}
	}
	if tab.has(7, []byte("1")) {
		t.Fatal("a tag never used is found")
	}
}

// TestValueTableNumbers: irreversible numbers count first appearances per
// category.
func TestValueTableNumbers(t *testing.T) {
	vt := newValueTable()
	add := func(cat int, v string) int {
		id, slot, h := vt.findValue(cat, []byte(v))
		if id < 0 {
			id = vt.addValue(cat, []byte(v), h, slot)
		}
		return id
	}
	type got struct {
		ID int
		N  int32
	}
	var out []got
	for _, in := range []struct {
		cat int
		v   string
	}{{0, "a"}, {4, "a"}, {0, "b"}, {0, "a"}, {4, "c"}, {4, "a"}, {0, "c"}} {
		id := add(in.cat, in.v)
		out = append(out, got{id, vt.n[id]})
	}
	want := []got{{0, 1}, {1, 1}, {2, 2}, {0, 1}, {3, 2}, {1, 1}, {4, 3}}
	if diff := cmp.Diff(want, out); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
