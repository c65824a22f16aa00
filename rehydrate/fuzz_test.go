package rehydrate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

func FuzzSchema(f *testing.F) {
	for _, seed := range []string{
		testSchemaDoc, propSchemaDoc,
		`{"type":"string"}`,
		`{"type":"array","items":{"type":"string","maxLength":50,"x-privacycut-rehydrate":{"category":"host","purpose":"p","max":2}},"maxItems":3}`,
		`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false,"title":"t"}`,
		`{"type":"string","x-privacycut-rehydrate":{"category":"credential","purpose":"p","max":1}}`,
		`{"type":"integer"}`, `{"type":"object","properties":{"a.b":{"type":"string"}}}`, `[]`, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSchema(data)
		if err != nil {
			var se *receipts.Refusal
			if !errors.As(err, &se) || !se.Code.Valid() || se.Line < 1 || se.Column < 1 {
				t.Fatalf("refusal is not a positioned *receipts.Refusal: %#v", err)
			}
			return
		}
		canonical, err := canon.Canonicalize(data)
		if err != nil {
			t.Fatalf("accepted a schema with no canonical form: %v", err)
		}
		if s.Digest() != receipts.SHA256(canonical) {
			t.Fatal("digest is not SHA-256 of the canonical form")
		}
		again, err := ParseSchema(canonical)
		if err != nil {
			t.Fatalf("canonical form refused: %v", err)
		}
		if again.Digest() != s.Digest() {
			t.Fatal("canonical form has another digest")
		}
		if diff := cmp.Diff(s.Paths(), again.Paths()); diff != "" {
			t.Fatalf("canonical form marks other paths (-orig +canonical):\n%s", diff)
		}
		for _, p := range s.Paths() {
			if !strings.HasPrefix(p.Path, "$") || TokenLen(p.Category) == 0 || p.Category == credential || p.Max < 1 || p.Purpose == "" {
				t.Fatalf("invalid marked path %+v", p)
			}
		}
	})
}

// FuzzRehydrate: never panics; a refused return yields no output and reads
// no value; an accepted one is canonical and differs from the return only
// where a string was exactly a disclosed token, replaced by its value.
func FuzzRehydrate(f *testing.F) {
	s := mustSchema(f, testSchemaDoc)
	fx := newFixture()
	for _, c := range nearMissCorpus(fx) {
		f.Add([]byte(c.doc))
	}
	f.Add([]byte(`{"findings":[{"owner_module":` + jq(fx.mod) + `,"owner_team":` + jq(fx.team) + `,"advice":"see ` + fx.mod + `"}],"owners":[` + jq(fx.person) + `],"summary":"ok"}`))
	f.Add([]byte(`{"findings":[],"summary":"` + fx.otherMod + `"}`))
	f.Add([]byte(`{"findings":[{"owner_module":"` + strings.ReplaceAll(fx.mod, ":", `\u003a`) + `"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		iss := &fakeIssued{m: fx.iss.m}
		res, err := Rehydrate(data, s, testLease, iss)
		if err != nil {
			var r *receipts.Refusal
			if !errors.As(err, &r) || !r.Code.Valid() {
				t.Fatalf("error is not a *receipts.Refusal: %v", err)
			}
			if res.Output != nil || res.FinalDigest != "" || res.Substitutions != nil {
				t.Fatal("a refused return yielded output")
			}
			if _, appends := iss.counts(); appends != 0 {
				t.Fatal("a refused return read values")
			}
			for _, secret := range fx.secrets {
				if strings.Contains(err.Error(), secret) {
					t.Fatal("refusal text holds a token or value")
				}
			}
			return
		}
		canonical, err := canon.Canonicalize(res.Output)
		if err != nil || string(canonical) != string(res.Output) {
			t.Fatalf("output is not canonical: %v", err)
		}
		in, err := canon.Parse(data, canon.Options{})
		if err != nil {
			t.Fatal(err)
		}
		out, err := canon.Parse(res.Output, canon.Options{})
		if err != nil {
			t.Fatal(err)
		}
		n := checkOnlyTokensChanged(t, in, out, fx.iss, "$")
		total := 0
		for _, k := range res.Substitutions {
			total += k
		}
		if n != total {
			t.Fatalf("%d strings changed, %d substitutions reported", n, total)
		}
	})
}
