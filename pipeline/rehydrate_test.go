package pipeline_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/examples"
	"github.com/privacycut/privacycut/pipeline"
	"github.com/privacycut/privacycut/receipts"
)

// TestSchemaDigestFailsClosed: a lease reference without the plan's schema
// digest, or with another digest, licenses no schema: the rehydration is
// refused PLAN_MISMATCH (kind schema) before the vault is asked anything.
func TestSchemaDigestFailsClosed(t *testing.T) {
	key, _ := receipts.NewEvidenceKey(bytes.Repeat([]byte{3}, 32))
	p, err := pipeline.New(pipeline.Options{EvidenceKey: key})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	schema := examples.Schema
	c, err := p.CheckSchema(receipts.SHA256([]byte("x")), schema)
	if c != nil || err == nil {
		t.Fatal("CheckSchema accepted a schema of another digest")
	}
	digest := mustSchemaDigest(t, p, schema)
	ref := pipeline.LeaseRef{Lease: "pcl:x", ExpiresAt: "2999-01-01T00:00:00Z", OutputSchemaDigest: digest}
	if _, err := p.Rehydrate(context.Background(), ref, schema, []byte(`{}`)); !errors.Is(err, pipeline.ErrNoVault) {
		t.Fatalf("the plan's schema: %v, want to reach the vault", err)
	}
	for _, d := range []string{"", "sha256:" + string(bytes.Repeat([]byte{'b'}, 64))} {
		ref.OutputSchemaDigest = d
		_, err := p.Rehydrate(context.Background(), ref, schema, []byte(`{}`))
		var re *pipeline.RefusedError
		if !errors.As(err, &re) || len(re.Document.Reasons) != 1 || re.Document.Reasons[0].Code != receipts.PlanMismatch ||
			re.Document.Reasons[0].Kind != "schema" || re.Field != "output_schema_digest" {
			t.Errorf("reference digest %q: %v, want a PLAN_MISMATCH schema refusal", d, err)
		}
	}
}

// mustSchemaDigest is the schema's digest, S(canonical form), and
// CheckSchema accepts the schema under it.
func mustSchemaDigest(t *testing.T, p *pipeline.Pipeline, schema []byte) string {
	t.Helper()
	c, err := canon.Canonicalize(schema)
	if err != nil {
		t.Fatal(err)
	}
	d := receipts.SHA256(c)
	if _, err := p.CheckSchema(d, schema); err != nil {
		t.Fatalf("CheckSchema refuses the schema's own digest: %v", err)
	}
	return d
}
