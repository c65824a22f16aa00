package verifier

import (
	"bytes"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// parseCanary is planted in the seeds of the parser targets; no error text
// may hold any piece of it.
const parseCanary = "CANARY-9c1e-payroll"

// quotedPiece returns an 8-byte piece of in that msg quotes, or "". msg is
// cut at digits, white space and the punctuation of positions and paths
// (line and column numbers, "[3]", "x: y"), and a piece inside one of the
// fixed texts msg is made of (its framing, schema names, the fixed reasons)
// is not a quote: the fuzzer finds those texts by comparison tracing.
func quotedPiece(msg string, in []byte, fixed ...string) string {
	const n = 8
	seg := func(r rune) bool { return r >= '0' && r <= '9' || strings.ContainsRune(" \t\n:[]*().,", r) }
	for _, s := range strings.FieldsFunc(msg, seg) {
		for i := 0; i+n <= len(s); i++ {
			w := s[i : i+n]
			if !bytes.Contains(in, []byte(w)) || slices.ContainsFunc(fixed, func(f string) bool { return strings.Contains(f, w) }) {
				continue
			}
			return w
		}
	}
	return ""
}

// checkContentFree fails if err's text holds a piece of the canary or
// quotes a piece of in: it may hold only the framing given, the JSON field
// names of schema's type, and the fixed reason of a *canon.SyntaxError.
func checkContentFree(t *testing.T, err error, in []byte, schema any, framing ...string) {
	t.Helper()
	msg := err.Error()
	for i := 0; i+6 <= len(parseCanary); i++ {
		if strings.Contains(msg, parseCanary[i:i+6]) {
			t.Fatalf("error holds canary piece %q: %s", parseCanary[i:i+6], msg)
		}
	}
	fixed := append(jsonNames(reflect.TypeOf(schema)), "receipts", "json", "offset")
	fixed = append(fixed, framing...)
	var se *canon.SyntaxError
	if errors.As(err, &se) {
		fixed = append(fixed, se.Reason) // a closed set (receipts)
	}
	if p := quotedPiece(msg, in, fixed...); p != "" {
		t.Fatalf("error quotes the input (%q): %s", p, msg)
	}
}

// jsonNames returns the JSON field names of the struct types in t.
func jsonNames(t reflect.Type) []string {
	var out []string
	var walk func(t reflect.Type)
	seen := map[reflect.Type]bool{}
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out = append(out, name)
			walk(f.Type)
		}
	}
	walk(t)
	return out
}

// FuzzParseVocabulary: parseVocabularyTree never panics. It refuses exactly
// what canon.Unmarshal refuses, with the same error word for word, or
// a document whose schema is not Vocabulary@1 (errVocabSchema); the tree it
// returns gives what Canonicalize gives. Its errors quote no piece of the
// document. In an accepted vocabulary every listed item is found under its
// kind (a version under its module) and in the ambiguity table, each table
// holds exactly the distinct items, and a string next to an item is found
// only if it is itself listed. The verifier does not check the items
// themselves (grammar.LoadVocabulary does: an empty item or one with a
// space is accepted here), so this target asserts no agreement with the
// grammar's loader.
func FuzzParseVocabulary(f *testing.F) {
	f.Add([]byte(testVocab))
	doc := func(diag, mod, ver string) []byte {
		return []byte(`{"schema":"Vocabulary@1","revision":"r","diagnostics":["` + diag + `"],"modules":{"` + mod +
			`":["` + ver + `"]},"statuses":["affected"],"citations":["https://x.example/1"],"questions":["q"]}`)
	}
	f.Add(doc("GO-1", "m.example/a", "v1.0.0"))
	f.Add(doc("", "m", ""))
	f.Add(doc("GO-1", "m", "GO-1")) // one item in two kinds
	f.Add(doc("a b "+parseCanary, "m@"+parseCanary, "v1@"+parseCanary))
	f.Add([]byte(strings.Replace(testVocab, "Vocabulary@1", parseCanary, 1)))
	f.Add([]byte(strings.Replace(testVocab, `"revision"`, `"`+parseCanary+`":1,"revision"`, 1)))
	f.Add([]byte(strings.Replace(testVocab, `"statuses":["affected","fixed"]`, `"statuses":"`+parseCanary+`"`, 1)))
	f.Add([]byte(strings.Replace(testVocab, `"revision":"t/1"`, `"revision":"t/1","revision":"`+parseCanary+`"`, 1)))
	f.Add([]byte(strings.Replace(testVocab, `"revision":"t/1"`, `"revision":1e400`, 1)))
	f.Add([]byte(testVocab + parseCanary))
	f.Add([]byte(`{"schema":"Vocabulary@1","diagnostics":["\ud800` + parseCanary + `"]}`))
	f.Add([]byte("{\"schema\":\"Vocabulary@1\",\"diagnostics\":[\"\xff" + parseCanary + "\"]}"))
	f.Add([]byte(`{"schema":"Vocabulary@1","modules":{"m":null,"n":[]},"diagnostics":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		v, tree, err := parseVocabularyTree(data)
		if v != nil {
			defer v.release()
		}
		var d vocabDoc
		want := canon.Unmarshal(data, &d, canon.Options{})
		if want == nil && d.Schema != "Vocabulary@1" {
			want = errVocabSchema
		}
		if (err == nil) != (want == nil) || err != nil && err.Error() != want.Error() {
			t.Fatalf("error %v, Unmarshal says %v", err, want)
		}
		if (v != nil) != (err == nil) {
			t.Fatalf("vocabulary %v with error %v", v != nil, err)
		}
		if _, perr := canon.Parse(data, canon.Options{}); (tree != nil) != (perr == nil) {
			t.Fatalf("tree %v, Parse error %v", tree != nil, perr)
		}
		if tree != nil {
			canonical, cerr := canon.Canonicalize(data)
			got, gerr := tree.Canonical()
			if (gerr == nil) != (cerr == nil) || !bytes.Equal(got, canonical) {
				t.Fatalf("canonical form %q (%v), Canonicalize gives %q (%v)", got, gerr, canonical, cerr)
			}
		}
		if err != nil {
			if !errors.Is(err, errVocabSchema) {
				var se *canon.SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("error %T is not a *canon.SyntaxError: %v", err, err)
				}
			}
			checkContentFree(t, err, data, vocabDoc{}, "verifier", "vocabulary", "Vocabulary@1")
			return
		}

		listed := map[string]bool{}
		items := 0
		kinds := []struct {
			tag   int
			items []string
		}{{tagDiagnostic, d.Diagnostics}, {tagStatus, d.Statuses}, {tagCitation, d.Citations}, {tagQuestion, d.Questions}}
		distinct := func(tag int, list []string) {
			seen := map[string]bool{}
			for _, it := range list {
				listed[it] = true
				if !seen[it] {
					seen[it] = true
					items++
				}
				if !v.items.has(tag, []byte(it)) || !v.all.has(0, []byte(it)) {
					t.Fatalf("listed item %q (tag %d) not found", it, tag)
				}
			}
		}
		for _, k := range kinds {
			distinct(k.tag, k.items)
		}
		mods := make([]string, 0, len(d.Modules))
		for m := range d.Modules {
			mods = append(mods, m)
		}
		distinct(tagModule, mods)
		for _, m := range mods {
			id, _ := v.items.find(tagModule, []byte(m), v.items.hash([]byte(m)))
			if id < 0 {
				t.Fatalf("module %q not found", m)
			}
			distinct(tagVersions+id, d.Modules[m])
		}
		if v.items.len() != items || v.all.len() != len(listed) {
			t.Fatalf("tables hold %d and %d keys, want %d and %d", v.items.len(), v.all.len(), items, len(listed))
		}
		for it := range listed {
			for _, p := range []string{it + "-", "x" + it} {
				if v.all.has(0, []byte(p)) != listed[p] {
					t.Fatalf("ambiguity table has %q: %v, listed %v", p, !listed[p], listed[p])
				}
			}
			if it != "" && v.all.has(0, []byte(it[:len(it)-1])) != listed[it[:len(it)-1]] {
				t.Fatalf("ambiguity table has %q: %v", it[:len(it)-1], !listed[it[:len(it)-1]])
			}
		}
	})
}

// The token shapes of DESIGN.md "Tokens", written independently of
// tokens.go. An irreversible token's number is at most 15 digits (what
// parseIrreversible takes; the censor numbers owners from 1).
var (
	irreversibleShape = regexp.MustCompile(`^redacted:(module|package|function|file|team|person|host|credential):[1-9][0-9]{0,14}$`)
	reversibleShape   = regexp.MustCompile(`^pcv:[a-z2-7]{10}:(module|package|function|file|team|person|host|credential):[a-z2-7]{20}$`)
)

// FuzzTokens: parseIrreversible and parseReversible accept exactly the
// documented token shapes. An accepted irreversible token is what
// appendIrreversible writes for its category and number; an accepted
// reversible token is "pcv:" + its namespace + ":" + its category + ":" +
// a 20-character MAC. tokenOfCategory names exactly the parsed category,
// and appendIrreversible's output for any category and number in range
// parses back to them.
func FuzzTokens(f *testing.F) {
	for _, s := range []string{
		"redacted:module:1", "redacted:person:1234", "redacted:credential:999999999999999",
		"redacted:team:1000000000000000", "redacted:team:0", "redacted:team:01", "redacted:team:", "redacted:team:-1",
		"redacted:email:1", "redacted::1", "redacted:team:1 ", "redacted:team:1\n", "Redacted:team:1",
		"pcv:abcdefghij:team:abcdefghijklmnopqrst", "pcv:abcdefghij:credential:234567abcdefghijklmn",
		"pcv:abcdefghij::abcdefghijklmnopqrst", "pcv:ABCDEFGHIJ:team:abcdefghijklmnopqrst",
		"pcv:abcdefghij:team:abcdefghijklmnopqrs1", "pcv:abcdefghij:team:team:abcdefghijklmnopqrst",
		"pcv:abcdefghijk:team:abcdefghijklmnopqrst", "pcv:abcdefghij:teamxabcdefghijklmnopqrst",
		"pcv:abcdefghij:team:abcdefghijklmnopqrstu", "pcv:", "redacted:", "",
	} {
		f.Add([]byte(s), uint8(4), uint64(1))
	}
	f.Add([]byte("redacted:host:7"), uint8(6), uint64(999999999999999))
	f.Add([]byte("pcv:aaaaaaaaaa:file:aaaaaaaaaaaaaaaaaaaa"), uint8(200), uint64(1)<<63)
	f.Fuzz(func(t *testing.T, tok []byte, c uint8, n uint64) {
		cat, num, ok := parseIrreversible(tok)
		if ok != irreversibleShape.Match(tok) {
			t.Fatalf("parseIrreversible(%q) = %v, shape says %v", tok, ok, !ok)
		}
		if ok {
			if got := appendIrreversible(nil, cat, num); !bytes.Equal(got, tok) {
				t.Fatalf("parseIrreversible(%q) = %s %d, which writes %q", tok, categories[cat], num, got)
			}
		}
		ns, rcat, rok := parseReversible(tok)
		if rok != reversibleShape.Match(tok) {
			t.Fatalf("parseReversible(%q) = %v, shape says %v", tok, rok, !rok)
		}
		if rok {
			want := "pcv:" + string(ns) + ":" + categories[rcat] + ":" + string(tok[len(tok)-macLen:])
			if want != string(tok) {
				t.Fatalf("parseReversible(%q) = %q %s", tok, ns, categories[rcat])
			}
		}
		if ok && rok {
			t.Fatalf("%q has both shapes", tok)
		}
		for k := range categories {
			if got := tokenOfCategory(tok, k); got != (ok && cat == k || rok && rcat == k) {
				t.Fatalf("tokenOfCategory(%q, %s) = %v", tok, categories[k], got)
			}
		}

		k := int(c) % len(categories)
		m := int(n%999999999999999) + 1
		w := appendIrreversible(nil, k, m)
		if gk, gm, ok := parseIrreversible(w); !ok || gk != k || gm != m {
			t.Fatalf("appendIrreversible(%s, %d) = %q parses as %d %d %v", categories[k], m, w, gk, gm, ok)
		}
	})
}

// cutSeeds returns the plans and receipts of honest cuts, both modes.
func cutSeeds(f *testing.F) (plans, recs [][]byte) {
	for _, mode := range []string{receipts.ModeIrreversible, receipts.ModeReversible} {
		req := makeCut(f, sampleParts, cutOptions{Mode: mode})
		plans = append(plans, req.Plan)
		recs = append(recs, req.Receipts)
	}
	return plans, recs
}

// FuzzParsePlan: parsePlan never panics and refuses exactly what
// canon.Unmarshal refuses, with errors that quote no piece of the
// document. An accepted plan marshals (canon.Marshal), parses back to
// the same plan and marshals again to the same bytes, and the document's
// digest S(plan) can be computed.
func FuzzParsePlan(f *testing.F) {
	plans, _ := cutSeeds(f)
	for _, p := range plans {
		f.Add(p)
		f.Add(bytes.Replace(p, []byte(`"purpose":"`), []byte(`"purpose":"`+parseCanary), 1))
		f.Add(bytes.Replace(p, []byte(`"purpose":`), []byte(`"`+parseCanary+`":1,"purpose":`), 1))
		f.Add(bytes.Replace(p, []byte(`"max_uses":`), []byte(`"max_uses":"`+parseCanary+`","x":`), 1))
		f.Add(bytes.Replace(p, []byte(`"max_uses":1`), []byte(`"max_uses":1e400`), 1))
		f.Add(bytes.Replace(p, []byte(`"max_uses":1`), []byte(`"max_uses":9007199254740993`), 1))
		f.Add(bytes.Replace(p, []byte(`"max_uses":1`), []byte(`"max_uses":-0`), 1))
		f.Add(bytes.Replace(p, []byte(`"max_uses":1`), []byte(`"max_uses":1.0`), 1))
		f.Add(append(bytes.Clone(p), parseCanary...))
	}
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"schema":null,"invariants":null,"categories":{"allowed":null}}`))
	f.Add([]byte(`{"purpose":"\ud800` + parseCanary + `"}`))
	f.Add([]byte("{\"purpose\":\"\xff" + parseCanary + "\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := parsePlan(data)
		var ref receipts.Plan
		want := canon.Unmarshal(data, &ref, canon.Options{})
		if (err == nil) != (want == nil) || err != nil && err.Error() != want.Error() {
			t.Fatalf("error %v, Unmarshal says %v", err, want)
		}
		if err != nil {
			if p != nil {
				t.Fatal("a plan with an error")
			}
			var se *canon.SyntaxError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *canon.SyntaxError: %v", err, err)
			}
			checkContentFree(t, err, data, receipts.Plan{})
			return
		}
		if _, err := digestDoc(data); err != nil {
			t.Fatalf("accepted plan has no digest: %v", err)
		}
		b, err := canon.Marshal(p)
		if err != nil {
			t.Fatalf("accepted plan does not marshal: %v", err)
		}
		p2, err := parsePlan(b)
		if err != nil {
			t.Fatalf("marshaled plan refused: %v\n%s", err, b)
		}
		if diff := cmp.Diff(p, p2); diff != "" {
			t.Fatalf("plan changed through Marshal (-parsed +re-parsed):\n%s", diff)
		}
		if b2, err := canon.Marshal(p2); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("marshal is not stable: %q, then %q (%v)", b, b2, err)
		}
	})
}

// FuzzParseReceipts: parseReceipts never panics and its errors quote no
// piece of the document; each digest it returns is S(canonical form) of
// its element, and a refusal of an element keeps the digests up to it
// (the later ones are ""). An
// accepted array marshals (canon.Marshal), parses back to the same
// receipts, and then each digest is the receipt's own Digest.
func FuzzParseReceipts(f *testing.F) {
	_, recs := cutSeeds(f)
	for _, r := range recs {
		f.Add(r)
		f.Add(bytes.Replace(r, []byte(`"stage":"`), []byte(`"stage":"`+parseCanary), 1))
		f.Add(bytes.Replace(r, []byte(`"stage":`), []byte(`"`+parseCanary+`":1,"stage":`), 1))
		f.Add(bytes.Replace(r, []byte(`"index":`), []byte(`"index":"`+parseCanary+`","x":`), 1))
		f.Add(bytes.Replace(r, []byte(`"index":0`), []byte(`"index":1e400`), 1))
		f.Add(bytes.Replace(r, []byte(`"parents":[`), []byte(`"parents":[1,`), 1))
		f.Add(append(bytes.Clone(r), parseCanary...))
	}
	f.Add([]byte(`[]`))
	f.Add([]byte(`[{}]`))
	f.Add([]byte(`[{},1]`))
	f.Add([]byte(`{"schema":"` + parseCanary + `"}`))
	f.Add([]byte(`"` + parseCanary + `"`))
	f.Add([]byte(`[{"stage":"\ud800` + parseCanary + `"}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, digests, err := parseReceipts(data)
		if err != nil {
			if recs != nil {
				t.Fatal("receipts with an error")
			}
			checkContentFree(t, err, data, receipts.TransformationReceipt{}, "verifier", "not a JSON array", "element")
		}
		if digests != nil {
			tree, perr := canon.Parse(data, canon.Options{})
			if perr != nil || tree.Kind != canon.Array || len(digests) > len(tree.Elems) {
				t.Fatalf("%d digests for a document that is not an array of as many elements (%v)", len(digests), perr)
			}
			// Refused at element k: the digests of elements 0…k are
			// there, the later ones "".
			n := len(digests)
			if err != nil {
				n = 0
				for n < len(digests) && digests[n] != "" {
					n++
				}
				if n == 0 || slices.ContainsFunc(digests[n:], func(d string) bool { return d != "" }) {
					t.Fatalf("digests of a refused element: %q", digests)
				}
			}
			for i, d := range digests[:n] {
				c, cerr := tree.Elems[i].Canonical()
				if cerr != nil || d != receipts.SHA256(c) {
					t.Fatalf("digest %d is %s, not S(canonical form) (%v)", i, d, cerr)
				}
			}
		}
		if err != nil {
			return
		}
		if len(digests) != len(recs) {
			t.Fatalf("%d receipts, %d digests", len(recs), len(digests))
		}
		b, err := canon.Marshal(recs)
		if err != nil {
			t.Fatalf("accepted receipts do not marshal: %v", err)
		}
		recs2, digests2, err := parseReceipts(b)
		if err != nil {
			t.Fatalf("marshaled receipts refused: %v\n%s", err, b)
		}
		if diff := cmp.Diff(recs, recs2); diff != "" {
			t.Fatalf("receipts changed through Marshal (-parsed +re-parsed):\n%s", diff)
		}
		for i := range recs2 {
			if d, err := recs2[i].Digest(); err != nil || d != digests2[i] {
				t.Fatalf("receipt %d: Digest %s (%v), digest of its element %s", i, d, err, digests2[i])
			}
		}
	})
}
