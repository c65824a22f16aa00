package verifier

import (
	"math/rand/v2"
	"testing"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// randomText returns a text over an alphabet that needs every kind of
// escape: quotes, backslashes, LF and other controls, DEL, non-ASCII.
func randomText(rng *rand.Rand, n int) []byte {
	alphabet := []string{"a", "b", " ", "\"", "\\", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "€", "redacted:team:1", "@", "="}
	var b []byte
	for range n {
		b = append(b, alphabet[rng.IntN(len(alphabet))]...)
	}
	return b
}

// TestExpectedExportAgainstReceipts writes random documents through
// expectedExport and compares the offsets it finds with the ones the
// receipts encoder streamed into compareCanonical finds, for the document
// itself and for altered copies of it.
func TestExpectedExportAgainstReceipts(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 500 {
		n := rng.IntN(4)
		kinds := make([]string, n)
		tok := make([][][]byte, n) // per part, pieces of the tok document
		irr := make([][][]byte, n)
		for p := range n {
			kinds[p] = string(randomText(rng, rng.IntN(3)))
			for range rng.IntN(6) {
				a := randomText(rng, rng.IntN(8))
				b := a
				if rng.IntN(3) == 0 {
					b = randomText(rng, rng.IntN(8))
				}
				tok[p], irr[p] = append(tok[p], a), append(irr[p], b)
			}
		}
		doc := func(pieces [][][]byte) *canon.Value {
			tree, _ := partsTree(func(i int) []canon.Member {
				var text []byte
				for _, x := range pieces[i] {
					text = append(text, x...)
				}
				return []canon.Member{member("kind", strValue([]byte(kinds[i]))), member("text", strValue(text))}
			}, n, member("profile", strValue([]byte(receipts.ProfileName))))
			return tree
		}
		wantTok, err := doc(tok).Canonical()
		if err != nil {
			t.Fatal(err)
		}
		// The bytes compared against: the tok document, altered or not.
		against := append([]byte{}, wantTok...)
		switch rng.IntN(4) {
		case 1:
			if len(against) > 0 {
				against[rng.IntN(len(against))] ^= 1 << rng.IntN(8)
			}
		case 2:
			against = against[:rng.IntN(len(against)+1)]
		case 3:
			against = append(against, randomText(rng, 1+rng.IntN(3))...)
		}
		x := newExpectedExport(against, true)
		x.begin()
		for p := range n {
			x.beginPart(kinds[p])
			for k := range tok[p] {
				if string(tok[p][k]) == string(irr[p][k]) && rng.IntN(2) == 0 {
					x.text(tok[p][k]) // text common to both documents
				} else {
					x.slot(tok[p][k], irr[p][k])
				}
			}
			x.endPart()
		}
		x.end()
		gotTok, gotIrr := x.results()
		wantT, err := compareCanonical(doc(tok), against)
		if err != nil {
			t.Fatal(err)
		}
		wantI, err := compareCanonical(doc(irr), against)
		if err != nil {
			t.Fatal(err)
		}
		if gotTok != wantT || gotIrr != wantI {
			t.Fatalf("iteration %d: offsets (tok %d, irr %d), receipts finds (%d, %d)", iter, gotTok, gotIrr, wantT, wantI)
		}
	}
}

// TestEscapesAgainstReceipts compares, for every byte, the escape
// canonCompare expects with the one receipts writes, and plainPrefix with
// the bytes receipts leaves alone.
func TestEscapesAgainstReceipts(t *testing.T) {
	for c := range 256 {
		s := []byte{'a', byte(c), 'b'}
		if c >= 0x80 {
			s = []byte{'a', 0xc3, 0xa9, 'b'} // one two-byte character
		}
		want := canon.AppendStringBody(nil, s)
		cc := newCanonCompare(want)
		cc.str(s)
		if got := cc.result(); got != -1 {
			t.Errorf("byte %#x: receipts writes %q, canonCompare differs at %d", c, want, got)
		}
		plain := len(want) == len(s)
		if got := plainPrefix(s) == len(s); got != plain {
			t.Errorf("byte %#x: plainPrefix says plain=%v, receipts %v", c, got, plain)
		}
	}
	// Word-at-a-time: the first byte to escape at every position of a
	// long run.
	for pos := range 40 {
		s := make([]byte, 40)
		for i := range s {
			s[i] = 'x'
		}
		s[pos] = '"'
		if got := plainPrefix(s); got != pos {
			t.Fatalf("plainPrefix with a quote at %d = %d", pos, got)
		}
	}
}

// TestCanonCompareSplit: comparing a text written in one piece gives what
// writing it piece by piece gives, wherever it is cut (the walk writes a
// paired record whole).
func TestCanonCompareSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []byte("ab\"\\\n\x01é")
	for range 2000 {
		text := make([]byte, rng.IntN(24))
		for i := range text {
			text[i] = alphabet[rng.IntN(len(alphabet))]
		}
		want := []byte(`"`)
		for _, c := range text {
			if c < 0x20 || c == '"' || c == '\\' {
				var esc [6]byte
				want = append(want, escapeByte(&esc, c)...)
			} else {
				want = append(want, c)
			}
		}
		// Damage want at a random place, or cut it, or leave it.
		switch k := rng.IntN(3); {
		case k == 0 && len(want) > 1:
			want[1+rng.IntN(len(want)-1)] ^= 1
		case k == 1:
			want = want[:rng.IntN(len(want)+1)]
		}
		whole := newCanonCompare(want)
		whole.raw([]byte(`"`))
		whole.str(text)
		pieces := newCanonCompare(want)
		pieces.raw([]byte(`"`))
		for rest := text; ; {
			n := rng.IntN(len(rest) + 1)
			pieces.str(rest[:n])
			rest = rest[n:]
			if len(rest) == 0 {
				break
			}
		}
		if whole.result() != pieces.result() {
			t.Fatalf("%q against %q: whole %+v, pieces %+v", text, want, whole, pieces)
		}
	}
}
