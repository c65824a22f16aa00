package grammar

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/privacycut/privacycut/internal/gen"
)

// TestNFCBelow proves the NFC shortcut: every rune below nfcBelow is a
// starter that is its own NFC form, and no two of them compose, so any
// string of them (with ASCII) is NFC. Composition in NFC only joins a
// starter with an unblocked following character, which for a string of
// starters is its neighbour, so pairs cover every string.
func TestNFCBelow(t *testing.T) {
	var buf [2 * utf8.UTFMax]byte
	for a := rune(0); a < nfcBelow; a++ {
		if p := norm.NFC.PropertiesString(string(a)); p.CCC() != 0 || !p.BoundaryBefore() {
			t.Fatalf("U+%04X: ccc %d, boundary before %v", a, p.CCC(), p.BoundaryBefore())
		}
		for b := rune(0); b < nfcBelow; b++ {
			n := utf8.EncodeRune(buf[:], a)
			n += utf8.EncodeRune(buf[n:], b)
			if !norm.NFC.IsNormal(buf[:n]) {
				t.Fatalf("U+%04X U+%04X is not NFC", a, b)
			}
		}
	}
	// The bound is tight: the first combining mark composes with a letter.
	if norm.NFC.IsNormalString("e\u0300") || norm.NFC.PropertiesString("\u0300").CCC() == 0 {
		t.Fatal("U+0300 does not need the NFC check, the bound is stale")
	}
}

// spare returns b in a buffer with extra capacity holding fill, so that
// reads past len(b) see fill.
func spare(b []byte, fill string) []byte {
	buf := append(append(make([]byte, 0, len(b)+len(fill)), b...), fill...)
	return buf[:len(b)]
}

// TestWordScans checks nextSP, nextEnd, spaceIndex, plainRun and notPlain
// against byte loops, on slices with and without spare capacity; bytes in
// the spare capacity (spaces, LFs, quotes, controls) must never count.
func TestWordScans(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	alphabet := []byte{' ', '\n', 'a', 'Z', '"', '\\', 0x00, 0x1f, 0x7f, 0x80, 0xc3, 0xff, '!', '~', 0x0b}
	for i := 0; i < 200000; i++ {
		b := make([]byte, r.IntN(40))
		for j := range b {
			if r.IntN(3) == 0 {
				b[j] = alphabet[r.IntN(len(alphabet))]
			} else {
				b[j] = byte(0x20 + r.IntN(0x5f))
			}
		}
		from := 0
		if len(b) > 0 {
			from = r.IntN(len(b) + 1)
		}
		wantSP := from
		for wantSP < len(b) && b[wantSP] != ' ' {
			wantSP++
		}
		wantEnd := from
		for wantEnd < len(b) && b[wantEnd] != ' ' && b[wantEnd] != '\n' {
			wantEnd++
		}
		wantPlain := from
		for wantPlain < len(b) && valueByte[b[wantPlain]] == vbPlain {
			wantPlain++
		}
		for _, in := range [][]byte{b, spare(b, "        "), spare(b, "\" \x00\\\xff \n\n ")} {
			if got := nextSP(in, from); got != wantSP {
				t.Fatalf("nextSP(%q, %d) = %d, want %d (cap %d)", b, from, got, wantSP, cap(in))
			}
			if got := nextEnd(in, from); got != wantEnd {
				t.Fatalf("nextEnd(%q, %d) = %d, want %d (cap %d)", b, from, got, wantEnd, cap(in))
			}
			if got := plainRun(in, from); got != wantPlain {
				t.Fatalf("plainRun(%q, %d) = %d, want %d (cap %d)", b, from, got, wantPlain, cap(in))
			}
			wantIdx := -1
			if i := bytes.IndexByte(b, ' '); i >= 0 {
				wantIdx = i
			}
			if got := spaceIndex(in); got != wantIdx {
				t.Fatalf("spaceIndex(%q) = %d, want %d (cap %d)", b, got, wantIdx, cap(in))
			}
		}
	}
	// notPlain: the lowest flagged byte is exactly the first non-plain byte.
	var w [8]byte
	for i := 0; i < 300000; i++ {
		for j := range w {
			if r.IntN(4) == 0 {
				w[j] = byte(r.IntN(256))
			} else {
				w[j] = alphabet[r.IntN(len(alphabet))]
			}
		}
		want := 8
		for j, c := range w {
			if valueByte[c] != vbPlain {
				want = j
				break
			}
		}
		if got := bits.TrailingZeros64(notPlain(binary.LittleEndian.Uint64(w[:]))) >> 3; got != want {
			t.Fatalf("notPlain(%q): first non-plain byte %d, want %d", w, got, want)
		}
	}
}

// TestAsciiSpace: asciiSpace is isSpaceRune on every ASCII byte.
func TestAsciiSpace(t *testing.T) {
	for c := 0; c < utf8.RuneSelf; c++ {
		if asciiSpace(byte(c)) != isSpaceRune(rune(c)) {
			t.Fatalf("asciiSpace(%#x) = %v", c, asciiSpace(byte(c)))
		}
	}
}

// TestOwnerPatterns: every category but credential has its pattern, found
// from its own first word; credential and near misses find none.
func TestOwnerPatterns(t *testing.T) {
	word := func(s string) (uint64, uint64) {
		var b [16]byte
		copy(b[:], s)
		return binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])
	}
	match := func(s string) (Category, int) {
		head, tail := word(s)
		p := &ownerPatterns[ownerSlot(head)]
		if head != p.head || tail&p.mask != p.tail || p.cat == CategoryNone {
			return CategoryNone, 0
		}
		return p.cat, p.n
	}
	for _, c := range Categories() {
		text := "owner." + c.String() + `="value"`
		got, n := match(text)
		if c == CategoryCredential {
			if got != CategoryNone {
				t.Fatalf("credential matched %v", got)
			}
			continue
		}
		if got != c || n != len("owner."+c.String()+`="`) {
			t.Fatalf("%s: matched %v, %d bytes", c, got, n)
		}
		for _, bad := range []string{
			"owner." + c.String() + `=x"`, "owner." + c.String() + `"="`, "Owner." + c.String() + `="`,
			"owner." + strings.ToUpper(c.String()) + `="`, "owner." + c.String()[:len(c.String())-1] + `="`,
			"owner." + c.String() + c.String()[:1] + `="`, "owner " + c.String() + `="`,
		} {
			if got, _ := match(bad); got != CategoryNone {
				t.Fatalf("%q matched %v", bad, got)
			}
		}
	}
}

// TestFindMatchesLookup: strset.find agrees with lookup on every key of a
// vulndb-sized vocabulary, on near misses of them, and in every set mode.
func TestFindMatchesLookup(t *testing.T) {
	v, err := LoadVocabulary(gen.NewVocab().JSON())
	if err != nil {
		t.Fatal(err)
	}
	var same [][]byte
	for _, c := range "abcdefghij" {
		same = append(same, []byte("0123456789abcdef"+string(c)+"----------------0123456789abcdef"))
	}
	sets := []*strset{v.diagnostics, v.modules, v.deps, v.statuses, v.citations, v.questions, v.all,
		newStrset(same, false), testVocab(t).diagnostics}
	var probes [][]byte
	for _, s := range sets {
		for i := 0; i < s.len(); i++ {
			k := s.keyAt(int32(i))
			probes = append(probes, k, append([]byte("x"), k...), append(append([]byte(nil), k...), 'x'), k[:len(k)-1])
			for _, at := range []int{0, len(k) / 2, len(k) - 1} {
				m := append([]byte(nil), k...)
				m[at] ^= 1
				probes = append(probes, m)
			}
		}
	}
	for si, s := range sets {
		for _, k := range probes {
			if got, want := s.find(k), s.lookup(k); got != want {
				t.Fatalf("set %d: find(%q) = %d, lookup = %d", si, k, got, want)
			}
			if got, want := s.find(spare(k, "        ")), s.lookup(k); got != want {
				t.Fatalf("set %d: find(%q) with spare capacity = %d, lookup = %d", si, k, got, want)
			}
		}
	}
}

// TestMayHold: the hash-free filter of the all-items set never rejects an
// item (of any class, versions included) and filters generated owner values.
func TestMayHold(t *testing.T) {
	gv := gen.NewVocab()
	v, err := LoadVocabulary(gv.JSON())
	if err != nil {
		t.Fatal(err)
	}
	// Every item of every class: the sets' keys, and the version of each
	// "module@version" (which itself is no item).
	var items []string
	for _, s := range []*strset{v.diagnostics, v.modules, v.statuses, v.citations, v.questions, v.all} {
		for i := 0; i < s.len(); i++ {
			items = append(items, string(s.keyAt(int32(i))))
		}
	}
	for i := 0; i < v.deps.len(); i++ {
		_, ver, _ := strings.Cut(string(v.deps.keyAt(int32(i))), "@")
		items = append(items, ver)
	}
	for _, it := range items {
		if !v.all.mayHold([]byte(it)) {
			t.Fatalf("filter rejects item %q", it)
		}
	}
	rv := newRefVocab(v)
	passed, n := 0, 0
	for _, c := range []string{"module", "package", "function", "file", "team", "person", "host"} {
		for i := 0; i < 2000; i++ {
			val := []byte(gen.OwnerValue(c, i))
			n++
			if v.all.mayHold(val) {
				passed++
			}
			if _, in := rv.all[string(val)]; in != v.Contains(val) {
				t.Fatalf("Contains(%q) = %v", val, !in)
			}
		}
	}
	for _, it := range items {
		for _, near := range []string{it + "x", "x" + it, it[:len(it)-1], it[1:]} {
			if _, in := rv.all[near]; in != v.Contains([]byte(near)) {
				t.Fatalf("Contains(%q) = %v", near, !in)
			}
		}
	}
	if passed > n/10 {
		t.Errorf("filter passes %d of %d generated owner values", passed, n)
	}
}
