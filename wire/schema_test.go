package wire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/wire"
)

// TestStrip: reserved members go at every depth, in objects within arrays
// too; everything else stays, in canonical form.
func TestStrip(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"nothing reserved", `{ "type":"string" , "maxLength":5 }`, `{"maxLength":5,"type":"string"}`},
		{"top level", `{"type":"object","x-privacycut-rehydrate":{"category":"module"}}`, `{"type":"object"}`},
		{"deep", `{"properties":{"a":{"items":{"type":"string","x-privacycut-rehydrate":{"max":1}}}}}`, `{"properties":{"a":{"items":{"type":"string"}}}}`},
		{"inside an array", `{"anyOf":[{"x-privacycut-z":1,"type":"string"},{"enum":[{"x-privacycut-q":true}]}]}`, `{"anyOf":[{"type":"string"},{"enum":[{}]}]}`},
		{"prefix only", `{"x-privacycut":1,"x-privacycut-":2,"X-privacycut-a":3}`, `{"X-privacycut-a":3,"x-privacycut":1}`},
		{"escaped key", `{"x-privacycut\u002da":1,"b":2}`, `{"b":2}`},
		{"reserved inside a reserved member", `{"x-privacycut-a":{"x-privacycut-b":1}}`, `{}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.Strip([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("S′ (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSchemaDigest: the digest is of the document as given, markings
// included: stripping does not change what the plan binds.
func TestSchemaDigest(t *testing.T) {
	doc := readTestdata(t, "schema.json")
	s, err := wire.ParseSchema(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Digest(), schemaDigest(t, doc); got != want {
		t.Errorf("Digest = %s, want %s", got, want)
	}
	if s.Digest() == receipts.SHA256(s.Stripped()) {
		t.Error("the digest is S′'s: markings would not be bound")
	}
	out := s.Stripped()
	out[0] = 'X'
	if s.Stripped()[0] != '{' {
		t.Error("Stripped shares memory with the schema")
	}
}

// TestStrictness: the strict rules, with the path and reason of the first
// object schema that breaks one.
func TestStrictness(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want wire.Strictness
	}{
		{"example schema", string(readTestdata(t, "schema.json")),
			wire.Strictness{Path: "$.properties.findings.items.properties.owner_module", Reason: wire.StrictUnlisted}},
		{"strict", `{"type":"object","additionalProperties":false,"required":["a","b"],"properties":{
			"a":{"type":"string","x-privacycut-rehydrate":{}},
			"b":{"type":"array","items":{"type":"object","properties":{},"additionalProperties":false}}}}`,
			wire.Strictness{Strict: true}},
		{"string root", `{"type":"string"}`, wire.Strictness{Strict: true}},
		{"no additionalProperties", `{"type":"object","properties":{}}`, wire.Strictness{Path: "$", Reason: wire.StrictAdditional}},
		{"additionalProperties true", `{"type":"object","additionalProperties":true}`, wire.Strictness{Path: "$", Reason: wire.StrictAdditional}},
		{"additionalProperties schema", `{"type":"object","additionalProperties":{"type":"string"}}`, wire.Strictness{Path: "$", Reason: wire.StrictAdditional}},
		{"properties without type", `{"properties":{"a":{"type":"string"}},"required":["a"]}`, wire.Strictness{Path: "$", Reason: wire.StrictAdditional}},
		{"type list", `{"type":["object","null"]}`, wire.Strictness{Path: "$", Reason: wire.StrictAdditional}},
		{"required not an array", `{"type":"object","additionalProperties":false,"required":"a"}`, wire.Strictness{Path: "$", Reason: wire.StrictRequired}},
		{"required holds a number", `{"type":"object","additionalProperties":false,"required":[1]}`, wire.Strictness{Path: "$", Reason: wire.StrictRequired}},
		{"unlisted property", `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string"},"b":{"type":"string"}}}`,
			wire.Strictness{Path: "$.properties.b", Reason: wire.StrictUnlisted}},
		{"odd property name", `{"type":"object","additionalProperties":false,"properties":{"a b\n":{"type":"string"}}}`,
			wire.Strictness{Path: `$.properties["a b\n"]`, Reason: wire.StrictUnlisted}},
		{"nested in items", `{"type":"array","items":{"type":"object"}}`, wire.Strictness{Path: "$.items", Reason: wire.StrictAdditional}},
		{"first in canonical order", `{"type":"object","additionalProperties":false,"properties":{"b":{"type":"string"},"a":{"type":"string"}}}`,
			wire.Strictness{Path: "$.properties.a", Reason: wire.StrictUnlisted}},
		{"nested in anyOf", `{"anyOf":[{"type":"string"},{"type":"object"}]}`, wire.Strictness{Path: "$.anyOf[1]", Reason: wire.StrictAdditional}},
		{"nested in $defs", `{"type":"string","$defs":{"x":{"type":"object"}}}`, wire.Strictness{Path: "$.$defs.x", Reason: wire.StrictAdditional}},
		{"nested in prefixItems", `{"type":"array","prefixItems":[{"type":"object","additionalProperties":false},{"properties":{}}]}`,
			wire.Strictness{Path: "$.prefixItems[1]", Reason: wire.StrictAdditional}},
		{"keyword values are not schemas", `{"type":"string","enum":[{"type":"object"}],"default":{"type":"object"}}`, wire.Strictness{Strict: true}},
		{"marking removed first", `{"type":"object","additionalProperties":false,"properties":{},"x-privacycut-rehydrate":{"type":"object"}}`, wire.Strictness{Strict: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := wire.CheckStrict([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Strictness (-want +got):\n%s", diff)
			}
		})
	}
	if s := (wire.Strictness{Path: "$.items", Reason: wire.StrictAdditional}).String(); s != "not strict: $.items: additionalProperties is not false" {
		t.Errorf("String = %q", s)
	}
}

// TestParseSchemaRefusals: refusals are positioned *Errors of field
// output_schema that quote nothing.
func TestParseSchemaRefusals(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		code receipts.Code
		line int
	}{
		{"syntax", "{\n\"type\": CANARY}", receipts.MalformedRecord, 2},
		{"duplicate", `{"a":"CANARY","a":1}`, receipts.MalformedRecord, 1},
		{"invalid UTF-8", "{\"a\":\"CANARY\xff\"}", receipts.InvalidUTF8, 1},
		{"too deep", strings.Repeat(`{"a":`, 65) + `"CANARY"` + strings.Repeat("}", 65), receipts.LimitExceeded, 1},
		{"not an object", "\n\n\"CANARY\"", receipts.PlanMismatch, 3},
		{"reserved property", "{\"properties\":{\n \"x-privacycut-CANARY\":{}}}", receipts.PlanMismatch, 2},
		{"reserved property deep", `{"items":{"properties":{"ok":{"properties":{"x-privacycut-CANARY":{}}}}}}`, receipts.PlanMismatch, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := wire.ParseSchema([]byte(tc.doc))
			var we *wire.Error
			if !errors.As(err, &we) {
				t.Fatalf("ParseSchema: %v, want *wire.Error", err)
			}
			if we.Code != tc.code || we.Field != "output_schema" || we.Line != tc.line {
				t.Errorf("got %+v, want code %s line %d", we, tc.code, tc.line)
			}
			if strings.Contains(err.Error(), "CANARY") {
				t.Errorf("error %q quotes the schema", err)
			}
		})
	}
}

// FuzzStrip: S′ of any accepted document is canonical, holds no reserved
// member at any depth, is a fixed point of Strip, and equals the
// document's canonical form when the document has no reserved member;
// strictness is deterministic. Refusals are *Errors quoting nothing.
func FuzzStrip(f *testing.F) {
	f.Add(readTestdata(f, "schema.json"))
	f.Add([]byte(`{"x-privacycut-a":{"x-privacycut-b":[1,{"x-privacycut-c":2}]},"a":[{"x-privacycut-d":null}]}`))
	f.Add([]byte(`{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string"}}}`))
	f.Add([]byte(`{"properties":{"x-privacycut-a":{}}}`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		s, err := wire.ParseSchema(doc)
		if err != nil {
			var we *wire.Error
			if !errors.As(err, &we) || we.Field != "output_schema" || we.Reason == "" {
				t.Fatalf("refusal %v is not an output_schema *wire.Error", err)
			}
			if len(doc) >= 8 && bytes.Contains([]byte(err.Error()), doc) {
				t.Fatalf("error quotes the document")
			}
			return
		}
		out := s.Stripped()
		tree, err := canon.Parse(out, canon.Options{})
		if err != nil {
			t.Fatalf("S′ does not parse: %v", err)
		}
		if c, _ := tree.Canonical(); !bytes.Equal(c, out) {
			t.Fatal("S′ is not canonical")
		}
		if hasReserved(tree) {
			t.Fatal("S′ holds a reserved member")
		}
		again, err := wire.Strip(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("S′ is not a fixed point: %v", err)
		}
		orig, _ := canon.Parse(doc, canon.Options{MaxBytes: wire.MaxSchemaBytes, MaxDepth: wire.MaxSchemaDepth})
		if c, _ := orig.Canonical(); !hasReserved(orig) && !bytes.Equal(c, out) {
			t.Fatal("stripping a document without reserved members changed it")
		}
		if receipts.SHA256(must(orig.Canonical())) != s.Digest() {
			t.Fatal("digest is not S(canonical document)")
		}
		st := s.Strictness()
		if st2, _ := wire.CheckStrict(out); st2 != st {
			t.Fatalf("strictness of S′ %v differs from the document's %v", st2, st)
		}
		if st.Strict != (st.Path == "" && st.Reason == "") {
			t.Fatalf("inconsistent strictness %+v", st)
		}
	})
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func hasReserved(v *canon.Value) bool {
	for i := range v.Elems {
		if hasReserved(&v.Elems[i]) {
			return true
		}
	}
	for i := range v.Members {
		if bytes.HasPrefix(v.Members[i].Key, []byte(wire.ReservedPrefix)) || hasReserved(&v.Members[i].Value) {
			return true
		}
	}
	return false
}
