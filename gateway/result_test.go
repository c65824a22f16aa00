package gateway

import (
	"bytes"
	"testing"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// TestEncodeResultIsCanonical: the result written with its answer spliced
// in is byte for byte canon.Marshal of the same result, with an answer and
// without one.
func TestEncodeResultIsCanonical(t *testing.T) {
	answer, err := canon.Canonicalize([]byte(`{"summary":"a \u00e9 \"q\"","findings":[{"owner_module":"tok:module:abc","action":"x"}],"n":1e2}`))
	if err != nil {
		t.Fatal(err)
	}
	lease := "pcl:abcdefghijklmnopqrstuvwxyz"
	for _, r := range []*Result{
		{Schema: SchemaResult, Route: "chat", Answer: answer, Decisions: []receipts.EgressDecision{}, Seal: "evt:1",
			ExportDigest: "sha256:" + string(bytes.Repeat([]byte{'a'}, 64)), Lease: &lease, LeaseState: "CONSUMED"},
		{Schema: SchemaResult, Route: "irr", Decisions: []receipts.EgressDecision{}},
	} {
		want, err := canon.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := encodeResult(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("encodeResult:\n got %s\nwant %s", got, want)
		}
		if !bytes.Equal(r.Answer, answer) && r.Answer != nil {
			t.Error("encodeResult changed the result's answer")
		}
	}
}
