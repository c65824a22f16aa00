package grammar

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/internal/gen"
	"github.com/privacycut/privacycut/receipts"
)

// diffParsers pairs parsers with the frozen reference over their vocabulary.
type diffParser struct {
	p  *Parser
	rv *refVocab
}

func newDiffParsers(t testing.TB) []diffParser {
	t.Helper()
	gv, err := LoadVocabulary(gen.NewVocab().JSON())
	if err != nil {
		t.Fatal(err)
	}
	tv := testVocab(t)
	var out []diffParser
	for _, v := range []*Vocabulary{tv, gv} {
		rv := newRefVocab(v)
		for _, o := range []Options{
			{},
			{Limits: Limits{MaxRecord: 200, MaxOwners: 2, MaxRefusals: 3}},
			{Allowed: CategorySet(0).With(CategoryTeam).With(CategoryFile)},
			{Candidate: true},
			{Limits: Limits{MaxRecord: math.MaxInt, MaxOwners: math.MaxInt, MaxText: math.MaxInt, MaxRefusals: math.MaxInt}},
		} {
			out = append(out, diffParser{NewParser(v, o), rv})
		}
	}
	return out
}

// spareFill follows a text in its buffer's spare capacity: the parser may
// read there a word at a time, but what it finds must never count.
const spareFill = "\" owner.team=\"x\" \"\\\x00 \n  "

// checkAgainstReference requires Parse (all spans and none), Owners and the
// parallel split to agree exactly with the reference on text, whether or not
// the text's buffer has spare capacity after it.
func checkAgainstReference(t *testing.T, d diffParser, text []byte) {
	t.Helper()
	exact := append(make([]byte, 0, len(text)), text...)
	checkReference(t, d, exact)
	checkReference(t, d, spare(text, spareFill))
	// Parse and Owners cap the text at its length; the record parser itself
	// must not be swayed by what lies past it either.
	if len(text) <= d.p.lim.MaxText {
		in := spare(text, spareFill)
		wantSt, wantSpans, wantRefs := refParse(d.p, d.rv, text, spansAll)
		var spans []Span
		var refs []receipts.Refusal
		rp := recParser{p: d.p, v: d.p.v, text: in, mode: spansAll}
		st := rp.run(0, len(in), 0, func(s []Span) { spans = append(spans, s...) }, &refs)
		if !cmp.Equal(st, wantSt) || !cmp.Equal(refs, wantRefs) || !cmp.Equal(spans, wantSpans) {
			t.Fatalf("record parser over spare capacity differs from the reference on %q:\nstats %s\nrefusals %s\nspans %s",
				text, cmp.Diff(wantSt, st), cmp.Diff(wantRefs, refs), cmp.Diff(wantSpans, spans))
		}
	}
}

func checkReference(t *testing.T, d diffParser, text []byte) {
	t.Helper()
	wantSt, wantSpans, wantRefs := refParse(d.p, d.rv, text, spansAll)
	var spans []Span
	st, refs := d.p.Parse(text, func(s Span) { spans = append(spans, s) })
	if !cmp.Equal(st, wantSt) || !cmp.Equal(refs, wantRefs) || !cmp.Equal(spans, wantSpans) {
		t.Fatalf("Parse with emit differs from the reference on %q:\nstats %s\nrefusals %s\nspans %s", text,
			cmp.Diff(wantSt, st), cmp.Diff(wantRefs, refs), cmp.Diff(wantSpans, spans))
	}
	st, refs = d.p.Parse(text, nil)
	if !cmp.Equal(st, wantSt) || !cmp.Equal(refs, wantRefs) {
		t.Fatalf("Parse without emit differs from the reference on %q:\nstats %s\nrefusals %s", text,
			cmp.Diff(wantSt, st), cmp.Diff(wantRefs, refs))
	}
	wantSt, wantOwners, wantRefs := refParse(d.p, d.rv, text, spansOwners)
	ownerSpans, st, refs := d.p.Owners(text)
	owners := slices.Collect(ownerSpans.All())
	if !cmp.Equal(st, wantSt) || !cmp.Equal(refs, wantRefs) || !cmp.Equal(owners, wantOwners) || ownerSpans.Len() != len(owners) {
		t.Fatalf("Owners differs from the reference on %q:\nstats %s\nrefusals %s\nspans %s", text,
			cmp.Diff(wantSt, st), cmp.Diff(wantRefs, refs), cmp.Diff(wantOwners, owners))
	}
}

// pieces are inserted by the mutator: separators, grammar fragments, the
// boundaries of the byte classes and of the NFC fast path, forbidden runes,
// combining marks and vocabulary items.
var pieces = []string{
	" ", "  ", "\n", "\t", "\r", "\x00", "\x7f", "\"", "\\", "\\\"", "\\\\", "\\x", "@", "=", "fixed=", " fixed=",
	"owner.", " owner.team=\"", " owner.credential=\"", " owner.Team=\"", "owner.module=\"\"", "\"\"",
	"é", "e\u0301", "\u0301", "\u0300", "\u02ff", "\u00a0", "\u00ad", "\u0085", "\u200b", "\u202e", "\u2028",
	"\u3000", "\ufeff", "\ufffd", "\U0001f600", "\xff", "\xc3", "\xed\xa0\x80", "\xef\xbf\xbe", "Å", "\u212b", "ﬀ",
	"v0.15.0", "GO-2023-2102", "golang.org/x/net", "affected", "https://go.dev/issue/63417",
	"triage.rank-by-severity", "GO-2020-0000", "CVE-2018-10000", "https://go.dev/issue/40000",
}

// mutate applies a few random edits to b.
func mutate(r *rand.Rand, b []byte, extra []string) []byte {
	out := append([]byte(nil), b...)
	for k := 1 + r.IntN(3); k > 0; k-- {
		at := 0
		if len(out) > 0 {
			at = r.IntN(len(out) + 1)
		}
		switch r.IntN(5) {
		case 0: // delete a run
			if at < len(out) {
				n := 1 + r.IntN(min(8, len(out)-at))
				out = append(out[:at], out[at+n:]...)
			}
		case 1: // replace a byte
			if at < len(out) {
				out[at] = byte(r.IntN(256))
			}
		case 2, 3: // insert a piece
			p := pieces[r.IntN(len(pieces))]
			if len(extra) > 0 && r.IntN(3) == 0 {
				p = extra[r.IntN(len(extra))]
			}
			out = append(out[:at], append([]byte(p), out[at:]...)...)
		case 4: // duplicate a run
			if at < len(out) {
				n := 1 + r.IntN(min(16, len(out)-at))
				run := append([]byte(nil), out[at:at+n]...)
				out = append(out[:at], append(run, out[at:]...)...)
			}
		}
	}
	return out
}

// vocabItems returns every item of v, versions and dependencies included.
func vocabItems(v *Vocabulary) []string {
	var out []string
	for _, s := range []*strset{v.diagnostics, v.modules, v.deps, v.statuses, v.citations, v.questions, v.all} {
		for i := 0; i < s.len(); i++ {
			out = append(out, string(s.keyAt(int32(i))))
		}
	}
	return out
}

// TestForbiddenRuneMatchesReference: for every Unicode scalar value, the
// parser's forbiddenRune (and, below U+0080, its valueByte table) forbids
// exactly what the reference's reading of docs/FORMATS.md#grammar forbids. The quote and the
// backslash are in the list of docs/FORMATS.md#grammar-chars but are structure to the parser, which
// classifies them before forbiddenRune is asked.
func TestForbiddenRuneMatchesReference(t *testing.T) {
	for r := rune(0); r <= 0x10ffff; r++ {
		if r >= 0xd800 && r <= 0xdfff {
			continue // not a scalar value
		}
		want := refForbidden(r)
		if r == '"' || r == '\\' {
			if !want {
				t.Errorf("reference allows %U", r)
			}
			if r == '"' && valueByte[r] != vbQuote || r == '\\' && valueByte[r] != vbBackslash {
				t.Errorf("valueByte[%U] = %d", r, valueByte[r])
			}
			continue
		}
		if got := forbiddenRune(r); got != want {
			t.Errorf("forbiddenRune(%U) = %v, reference %v", r, got, want)
		}
		if r < 0x80 {
			if got := valueByte[r] == vbForbidden; got != want {
				t.Errorf("valueByte[%U] forbidden = %v, reference %v", r, got, want)
			}
		}
	}
}

// TestParseMatchesReference runs generated records, owner values equal to or
// next to vocabulary items, and random mutations of both, through every
// parser mode and compares with the reference. With -short (local runs) it
// runs a tenth of the cases; CI runs them all.
func TestParseMatchesReference(t *testing.T) {
	items, mutations := 400, 3000
	if testing.Short() {
		items, mutations = 40, 300
	}
	gv := gen.NewVocab()
	texts := gv.Records(gen.Options{Seed: 11, Size: 64 << 10, Parts: 1})
	lines := strings.SplitAfter(texts[0], "\n")
	lines = lines[:len(lines)-1]
	for _, c := range refusalCases {
		lines = append(lines, c.text)
	}
	lines = append(lines, good, "ask triage.rank-by-severity owner.person=\"Zoë Ærøskøbing ĳ ǅ ȷ ʰ ˿\"\n",
		"ask triage.rank-by-severity owner.team=\"redacted:team:2\" owner.host=\"pcv:abcdefghij:host:abcdefghijklmnopqrst\"\n")
	r := rand.New(rand.NewPCG(21, 22))
	for _, d := range newDiffParsers(t) {
		vocab := vocabItems(d.p.v)
		// Owner values that are items, and near misses of items.
		for range items {
			it := vocab[r.IntN(len(vocab))]
			near := []string{it, it + "x", "x" + it, it[:len(it)-1], it[1:], it[:len(it)-1] + "\u00e9", strings.ToUpper(it)}
			for _, n := range near {
				checkAgainstReference(t, d, []byte("ask triage.rank-by-severity owner.team=\""+n+"\"\n"))
				checkAgainstReference(t, d, []byte("ask triage.summarize owner.file=\""+n+"\"\n"))
			}
		}
		checkAgainstReference(t, d, []byte(texts[0]))
		for range mutations {
			base := []byte(lines[r.IntN(len(lines))])
			if r.IntN(4) == 0 {
				base = append(base, lines[r.IntN(len(lines))]...)
			}
			checkAgainstReference(t, d, base)
			checkAgainstReference(t, d, mutate(r, base, vocab))
		}
	}
}

// FuzzParseMatchesReference: on any text, every parser mode agrees exactly
// with the frozen reference parser (stats, spans, refusals).
func FuzzParseMatchesReference(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("ask triage.rank-by-severity owner.team=\"a\\\"b\\\\\" owner.file=\"x y\"\n"))
	f.Add([]byte("ask triage.rank-by-severity owner.person=\"Müller\" owner.team=\"e\u0301\" owner.host=\"v0.15.0\"\n"))
	gv := gen.NewVocab()
	for _, l := range strings.SplitAfter(gv.Records(gen.Options{Seed: 12, Size: 4 << 10, Parts: 1})[0], "\n") {
		f.Add([]byte(l))
	}
	for _, c := range refusalCases {
		if len(c.text) < 4096 {
			f.Add([]byte(c.text))
		}
	}
	ds := newDiffParsers(f)
	f.Fuzz(func(t *testing.T, text []byte) {
		for _, d := range ds {
			checkAgainstReference(t, d, text)
		}
	})
}
