package rehydrate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

func TestParseSchemaPaths(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	want := []MarkedPath{
		{Path: "$.audit_owner", Marking: Marking{Category: "module", Purpose: "audit", Max: 1}},
		{Path: "$.findings[*].owner_module", Marking: Marking{Category: "module", Purpose: "dependency-triage", Max: 3}},
		{Path: "$.findings[*].owner_team", Marking: Marking{Category: "team", Purpose: "dependency-triage", Max: 5}},
		{Path: "$.owners[*]", Marking: Marking{Category: "person", Purpose: "dependency-triage", Max: 4}},
	}
	if diff := cmp.Diff(want, s.Paths()); diff != "" {
		t.Errorf("Paths (-want +got):\n%s", diff)
	}
	// Paths returns a copy.
	s.Paths()[0].Max = 99
	if s.Paths()[0].Max != 1 {
		t.Error("Paths exposes the schema's own slice")
	}
	// A root string can be marked.
	root := mustSchema(t, `{"type":"string","x-privacycut-rehydrate":{"category":"host","purpose":"p","max":1}}`)
	if diff := cmp.Diff([]MarkedPath{{Path: "$", Marking: Marking{"host", "p", 1}}}, root.Paths()); diff != "" {
		t.Errorf("root Paths (-want +got):\n%s", diff)
	}
}

func TestSchemaDigest(t *testing.T) {
	s := mustSchema(t, testSchemaDoc)
	canonical, err := canon.Canonicalize([]byte(testSchemaDoc))
	if err != nil {
		t.Fatal(err)
	}
	if want := receipts.SHA256(canonical); s.Digest() != want {
		t.Errorf("Digest = %s, want SHA-256 of the canonical form %s", s.Digest(), want)
	}
	if mustSchema(t, string(canonical)).Digest() != s.Digest() {
		t.Error("reformatting changed the digest")
	}
	reordered := `{"properties":{"summary":{"title":"Summary","type":"string"},` +
		`"audit_owner":{"x-privacycut-rehydrate":{"max":1,"purpose":"audit","category":"module"},"type":"string"},` +
		`"owners":{"items":{"x-privacycut-rehydrate":{"max":4,"category":"person","purpose":"dependency-triage"},"type":"string"},"maxItems":3,"type":"array"},` +
		`"findings":{"items":{"properties":{"advice":{"description":"free text","maxLength":4000,"type":"string"},` +
		`"owner_team":{"x-privacycut-rehydrate":{"purpose":"dependency-triage","category":"team","max":5},"type":"string"},` +
		`"owner_module":{"maxLength":64,"type":"string","x-privacycut-rehydrate":{"category":"module","purpose":"dependency-triage","max":3}}},` +
		`"required":["owner_module"],"type":"object"},"maxItems":50,"type":"array"}},` +
		`"required":["findings"],"additionalProperties":false,"type":"object"}`
	if mustSchema(t, reordered).Digest() != s.Digest() {
		t.Error("reordering members changed the digest")
	}
	for _, change := range [][2]string{
		{`"max": 3`, `"max": 4`},
		{`"purpose": "audit"`, `"purpose": "audit2"`},
		{`"free text"`, `"free text!"`},
		{`"maxItems": 50,`, ``},
	} {
		if mustSchema(t, strings.Replace(testSchemaDoc, change[0], change[1], 1)).Digest() == s.Digest() {
			t.Errorf("changing %s did not change the digest", change[0])
		}
	}
}

func TestParseSchemaRefusals(t *testing.T) {
	str := func(extra string) string { return `{"type":"string"` + extra + `}` }
	mark := func(m string) string { return str(`,"x-privacycut-rehydrate":` + m) }
	obj := func(extra string) string { return `{"type":"object"` + extra + `}` }
	for _, c := range []struct {
		name, doc string
		code      receipts.Code
		at        string // the refused key or value starts here (first occurrence)
	}{
		{"not an object", `"string"`, receipts.MalformedRecord, `"string"`},
		{"missing type", `{"properties":{}}`, receipts.MalformedRecord, `{`},
		{"unknown type integer", `{"type":"integer"}`, receipts.MalformedRecord, `"integer"`},
		{"unknown type number", obj(`,"properties":{"n":{"type":"number"}}`), receipts.MalformedRecord, `"number"`},
		{"unknown type boolean", `{"type":"boolean"}`, receipts.MalformedRecord, `"boolean"`},
		{"unknown type null", `{"type":"null"}`, receipts.MalformedRecord, `"null"`},
		{"type list", `{"type":["string","null"]}`, receipts.MalformedRecord, `[`},
		{"unknown keyword $schema", obj(`,"$schema":"https://json-schema.org/draft/2020-12/schema"`), receipts.MalformedRecord, `"$schema"`},
		{"unknown keyword pattern", str(`,"pattern":"^pcv:"`), receipts.MalformedRecord, `"pattern"`},
		{"unknown keyword enum", str(`,"enum":["a"]`), receipts.MalformedRecord, `"enum"`},
		{"unknown keyword $ref", obj(`,"properties":{"a":{"$ref":"#"}}`), receipts.MalformedRecord, `{"$ref"`},
		{"unknown keyword minLength", str(`,"minLength":1`), receipts.MalformedRecord, `"minLength"`},
		{"patternProperties", obj(`,"patternProperties":{}`), receipts.MalformedRecord, `"patternProperties"`},
		{"keyword of another form (items on string)", str(`,"items":{"type":"string"}`), receipts.MalformedRecord, `"items"`},
		{"keyword of another form (maxLength on array)", `{"type":"array","items":{"type":"string"},"maxLength":3}`, receipts.MalformedRecord, `"maxLength"`},
		{"marking on an object", obj(`,"x-privacycut-rehydrate":{"category":"module","purpose":"p","max":1}`), receipts.MalformedRecord, `"x-privacycut-rehydrate"`},
		{"marking on an array", `{"type":"array","items":{"type":"string"},"x-privacycut-rehydrate":{"category":"module","purpose":"p","max":1}}`, receipts.MalformedRecord, `"x-privacycut-rehydrate"`},
		{"additionalProperties true", obj(`,"additionalProperties":true`), receipts.MalformedRecord, `true`},
		{"additionalProperties schema", obj(`,"additionalProperties":{"type":"string"}`), receipts.MalformedRecord, `{"type":"string"}`},
		{"properties not an object", obj(`,"properties":[]`), receipts.MalformedRecord, `[]`},
		{"property name with a dot", obj(`,"properties":{"a.b":{"type":"string"}}`), receipts.MalformedRecord, `"a.b"`},
		{"property name with a colon", obj(`,"properties":{"pcv:x":{"type":"string"}}`), receipts.MalformedRecord, `"pcv:x"`},
		{"property name empty", obj(`,"properties":{"":{"type":"string"}}`), receipts.MalformedRecord, `""`},
		{"property name starting with a digit", obj(`,"properties":{"1a":{"type":"string"}}`), receipts.MalformedRecord, `"1a"`},
		{"property name too long", obj(`,"properties":{"` + strings.Repeat("a", 129) + `":{"type":"string"}}`), receipts.MalformedRecord, `"aaa`},
		{"required undeclared", obj(`,"properties":{"a":{"type":"string"}},"required":["b"]`), receipts.MalformedRecord, `"b"`},
		{"required twice", obj(`,"properties":{"a":{"type":"string"}},"required":["a","a"]`), receipts.MalformedRecord, `"a"]`},
		{"required not strings", obj(`,"properties":{"a":{"type":"string"}},"required":[1]`), receipts.MalformedRecord, `1]`},
		{"required not an array", obj(`,"required":"a"`), receipts.MalformedRecord, `"a"`},
		{"array without items", `{"type":"array"}`, receipts.MalformedRecord, `{`},
		{"items not a schema", `{"type":"array","items":[]}`, receipts.MalformedRecord, `[]`},
		{"maxItems negative", `{"type":"array","items":{"type":"string"},"maxItems":-1}`, receipts.MalformedRecord, `-1`},
		{"maxItems fraction", `{"type":"array","items":{"type":"string"},"maxItems":1.5}`, receipts.MalformedRecord, `1.5`},
		{"maxLength exponent", str(`,"maxLength":1e3`), receipts.MalformedRecord, `1e3`},
		{"maxLength string", str(`,"maxLength":"10"`), receipts.MalformedRecord, `"10"`},
		{"maxLength too large", str(`,"maxLength":9007199254740992`), receipts.MalformedRecord, `9007`},
		{"description not a string", str(`,"description":1`), receipts.MalformedRecord, `1}`},
		{"title not a string", str(`,"title":null`), receipts.MalformedRecord, `null`},
		{"marking not an object", mark(`"module"`), receipts.MalformedRecord, `"module"`},
		{"marking without max", mark(`{"category":"module","purpose":"p"}`), receipts.MalformedRecord, `{"category"`},
		{"marking without purpose", mark(`{"category":"module","max":1}`), receipts.MalformedRecord, `{"category"`},
		{"marking without category", mark(`{"purpose":"p","max":1}`), receipts.MalformedRecord, `{"purpose"`},
		{"marking unknown member", mark(`{"category":"module","purpose":"p","max":1,"min":0}`), receipts.MalformedRecord, `"min"`},
		{"marking max zero", mark(`{"category":"module","purpose":"p","max":0}`), receipts.MalformedRecord, `0}`},
		{"marking max fraction", mark(`{"category":"module","purpose":"p","max":2.0}`), receipts.MalformedRecord, `2.0`},
		{"marking max string", mark(`{"category":"module","purpose":"p","max":"1"}`), receipts.MalformedRecord, `"1"`},
		{"marking purpose empty", mark(`{"category":"module","purpose":"","max":1}`), receipts.MalformedRecord, `""`},
		{"marking purpose with space", mark(`{"category":"module","purpose":"a b","max":1}`), receipts.MalformedRecord, `"a b"`},
		{"marking purpose too long", mark(`{"category":"module","purpose":"` + strings.Repeat("p", 129) + `","max":1}`), receipts.MalformedRecord, `"ppp`},
		{"marking category not a string", mark(`{"category":1,"purpose":"p","max":1}`), receipts.MalformedRecord, `1,`},
		{"marking unknown category", mark(`{"category":"email","purpose":"p","max":1}`), receipts.UnknownCategory, `"email"`},
		{"marking category wrong case", mark(`{"category":"Module","purpose":"p","max":1}`), receipts.UnknownCategory, `"Module"`},
		{"marking category prefix", mark(`{"category":"mod","purpose":"p","max":1}`), receipts.UnknownCategory, `"mod"`},
		{"marking credential", mark(`{"category":"credential","purpose":"p","max":1}`), receipts.ProhibitedCategory, `"credential"`},
		{"maxLength below the token", `{"type":"string","maxLength":41,"x-privacycut-rehydrate":{"category":"module","purpose":"p","max":1}}`, receipts.MalformedRecord, `{`},
		{"duplicate key", `{"type":"string","type":"string"}`, receipts.MalformedRecord, `"type":"string"}`},
		{"trailing data", `{"type":"string"} x`, receipts.MalformedRecord, `x`},
		{"invalid UTF-8", "{\"type\":\"string\",\"title\":\"\xff\"}", receipts.InvalidUTF8, "\xff"},
		{"too deep", strings.Repeat(`{"type":"array","items":`, 70) + `{"type":"string"}` + strings.Repeat(`}`, 70), receipts.LimitExceeded, ""},
		{"too large", `{"type":"string","title":"` + strings.Repeat("a", MaxSchemaBytes) + `"}`, receipts.LimitExceeded, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseSchema([]byte(c.doc))
			var se *receipts.Refusal
			if !errors.As(err, &se) {
				t.Fatalf("ParseSchema = %v, %v; want a *receipts.Refusal", s, err)
			}
			if se.Code != c.code {
				t.Errorf("code = %s, want %s (%v)", se.Code, c.code, err)
			}
			if c.at != "" {
				off := offsetOf(c.doc, se.Line, se.Column)
				if off < 0 || !strings.HasPrefix(c.doc[off:], c.at) {
					t.Errorf("refusal at line %d col %d, want at %q in %s (%v)", se.Line, se.Column, c.at, c.doc, err)
				}
			}
			if strings.Contains(err.Error(), "pcv:") || strings.Contains(err.Error(), "email") {
				t.Errorf("error quotes the schema: %v", err)
			}
		})
	}
}

func TestParseSchemaAccepts(t *testing.T) {
	for _, doc := range []string{
		`{"type":"string"}`,
		`{"type":"object"}`,
		`{"type":"object","properties":{},"required":[],"additionalProperties":false}`,
		`{"type":"array","items":{"type":"array","items":{"type":"string"}},"maxItems":0}`,
		`{"type":"string","maxLength":0}`,
		`{"type":"string","maxLength":42,"x-privacycut-rehydrate":{"category":"module","purpose":"p","max":1}}`,
		`{"type":"string","maxLength":40,"x-privacycut-rehydrate":{"category":"host","purpose":"p","max":9007199254740991}}`,
		`{"type":"object","properties":{"_a-B9":{"type":"string"}},"title":"t","description":"d"}`,
	} {
		if _, err := ParseSchema([]byte(doc)); err != nil {
			t.Errorf("ParseSchema(%s): %v", doc, err)
		}
	}
}

func TestTokenShape(t *testing.T) {
	mac := strings.Repeat("a2", 10)
	for _, c := range []struct {
		s   string
		cat string // "" when not a token
	}{
		{"pcv:abcdefghij:module:" + mac, "module"},
		{"pcv:abcdefghij:file:" + mac, "file"},
		{"pcv:abcdefghij:credential:" + mac, "credential"},
		{"pcv:abcdefghij:function:" + mac, "function"},
		{"pcv:abcdefghij:modules:" + mac, ""},
		{"pcv:abcdefghij:modul:" + mac, ""},
		{"pcv:abcdefghij::" + mac, ""},
		{"pcv:abcdefghij:module:" + mac[:19], ""},
		{"pcv:abcdefghij:module:" + mac + "a", ""},
		{"pcv:abcdefghi1:module:" + mac, ""},
		{"pcv:abcdefghij:module:" + mac[:19] + "8", ""},
		{"pcv:abcdefghij:module:" + mac[:19] + "=", ""},
		{"pcv:abcdefghijk:team:" + mac, ""},
		{"pcv:abcdefghij:teamm" + mac, ""},
		{"PCV:abcdefghij:module:" + mac, ""},
		{"xpcv:abcdefghij:host:" + mac, ""},
		{"redacted:module:1", ""},
		{"", ""},
		// Near misses of the separators: a token's length, prefix, category
		// and base32 fields, with one colon wrong.
		{"pcv:abcdefghijXmodule:" + mac, ""},
		{"pcv:abcdefghij;module:" + mac, ""},
		{"pcv:abcdefghij:module;" + mac, ""},
		{"pcv:abcdefghij:moduleX" + mac, ""},
		{"pcv:abcdefghijkfile:" + mac, ""},
		{"pcv:abcdefghij:file" + mac + ":", ""},
		{"pcv:abcdefghij:file:" + mac[:19] + ":", ""},
		{"pcv;abcdefghij:host:" + mac, ""},
		{"pcv:abcdefghij:credential" + mac + "a", ""},
		// Case and length near misses.
		{"pcv:ABCDEFGHIJ:module:" + mac, ""},
		{"pcv:abcdefghij:Module:" + mac, ""},
		{"pcv:abcdefghij:module:" + strings.ToUpper(mac), ""},
		{"pcv:abcdefghij:file:" + mac[:19], ""},
		{"pcv:abcdefghij:credential:" + mac + "a", ""},
		{" pcv:abcdefghij:host:" + mac, ""},
		{"pcv:abcdefghij:host:" + mac + " ", ""},
		{"pcv:abcdefghij:host:" + mac, "host"},
		{"pcv:a2b3c4d5e6:package:" + mac, "package"},
	} {
		ns, ci, ok := parseToken([]byte(c.s))
		got := ""
		if ok {
			got = categories[ci]
		}
		if got != c.cat {
			t.Errorf("parseToken(%q) category = %q, want %q", c.s, got, c.cat)
		}
		if ok && string(ns) != c.s[len("pcv:"):len("pcv:")+10] {
			t.Errorf("parseToken(%q) namespace = %q", c.s, ns)
		}
		if !ok && (ns != nil || ci != -1) {
			t.Errorf("parseToken(%q) refused with namespace %q, category %d", c.s, ns, ci)
		}
		if ok && len(c.s) != TokenLen(got) {
			t.Errorf("TokenLen(%s) = %d, token is %d bytes", got, TokenLen(got), len(c.s))
		}
	}
	if diff := cmp.Diff([]string{"module", "package", "function", "file", "team", "person", "host"}, Categories()); diff != "" {
		t.Errorf("Categories (-want +got):\n%s", diff)
	}
	if TokenLen("credentials") != 0 {
		t.Error("TokenLen of a non-category")
	}
}
