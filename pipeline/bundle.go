package pipeline

import (
	"context"
	"io"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/verifier"
)

// MaxBundleBytes caps a bundle (2 GiB: a 1 GiB export plus receipts).
const MaxBundleBytes = 2 << 30

// BundleParts returns the bundle of c in canonical form, and a newline, as
// pieces to write in order. The export is not re-encoded nor copied: the
// censor wrote it canonically and the verifier checked it byte for byte,
// and "export" is the first key of the canonical bundle, so the bundle is
// `{"export":` EXPORT `,` and the rest of the canonical bundle without its
// `{`.
func (c *Cut) BundleParts() ([][]byte, error) {
	b := c.Bundle()
	export := b.Export
	b.Export = nil
	rest, err := canon.Marshal(struct {
		receipts.Bundle
		Export []byte `json:"export,omitempty"`
	}{Bundle: b})
	if err != nil {
		return nil, err
	}
	nl := []byte{'\n'}
	if len(export) == 0 {
		return [][]byte{rest, nl}, nil
	}
	return [][]byte{[]byte(`{"export":`), export, []byte(","), rest[1:], nl}, nil
}

// WriteBundle writes c's bundle (BundleParts) to w.
func (c *Cut) WriteBundle(w io.Writer) error {
	parts, err := c.BundleParts()
	if err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// Reverify is what `cut verify` checks: a CutBundle@1 against the source
// projection, the plan and the vocabulary documents it was cut from.
type Reverify struct {
	Bundle, Source, Plan, Vocabulary []byte
}

// VerifyBundle re-verifies a bundle's export, receipts, wire body and
// output schema, as the exact bytes the bundle holds, with the pipeline's
// verifier.
//
// A bundle that is not a strict CutBundle@1 does not verify (every claim
// failed): it is what a reviewer is given, and changing its structure is
// tampering as much as changing its export. Nor does one whose label_digest
// is not its receipts', or that holds a lease for an irreversible plan. Its
// verification and seal are prepare's records, which the new verification
// replaces; they are not inputs.
func (p *Pipeline) VerifyBundle(ctx context.Context, in Reverify) (receipts.Verification, error) {
	tree, err := canon.Parse(in.Bundle, canon.Options{MaxBytes: MaxBundleBytes})
	if err != nil {
		return verifier.Unverifiable("bundle: " + err.Error()), nil
	}
	var b receipts.Bundle
	if err := tree.DecodeShared(&b); err != nil {
		return verifier.Unverifiable("bundle: " + err.Error()), nil
	}
	if b.Schema != receipts.SchemaBundle {
		return verifier.Unverifiable("bundle: schema is not " + receipts.SchemaBundle), nil
	}
	if n := len(b.Receipts); n == 0 || b.LabelDigest != b.Receipts[n-1].LabelDigest {
		return verifier.Unverifiable("bundle: label_digest is not the terminal receipt's"), nil
	}
	if (b.Wire == nil) != (b.WireDigest == "") || (b.Wire != nil && b.WireDigest != receipts.SHA256(b.Wire)) {
		return verifier.Unverifiable("bundle: wire_digest is not the sha256 of its wire"), nil
	}
	// A plan that does not decode fails the verifier's plan claim.
	var plan receipts.Plan
	if b.Lease != nil && canon.Unmarshal(in.Plan, &plan, canon.Options{}) == nil && plan.Mode != receipts.ModeReversible {
		return verifier.Unverifiable("bundle: a lease for an irreversible plan"), nil
	}
	req := verifier.Request{Source: in.Source, Plan: in.Plan, Vocabulary: in.Vocabulary,
		EvidenceKey: p.opt.EvidenceKey, Now: p.opt.Now(), ExportDigest: b.ExportDigest}
	// The strict decoder has checked every member; the verifier reads the
	// export and the receipts as written, not as decoded.
	for _, m := range tree.Members {
		switch string(m.Key) {
		case "export":
			req.Export = in.Bundle[m.Value.Off:m.Value.End]
		case "receipts":
			req.Receipts = in.Bundle[m.Value.Off:m.Value.End]
		case "wire":
			req.Wire = in.Bundle[m.Value.Off:m.Value.End]
		case "output_schema":
			req.OutputSchema = in.Bundle[m.Value.Off:m.Value.End]
		}
	}
	if b.Lease != nil {
		// The vault that issued a reversible bundle's tokens is asked about
		// them; without one, token-consistency fails saying so.
		p.issuerFor(&req, *b.Lease, nil)
	}
	vs, err := p.verifier.begin(ctx, p.budget())
	if err != nil {
		return receipts.Verification{}, err
	}
	defer vs.close()
	v, err := vs.verify(ctx, req)
	if err != nil {
		return receipts.Verification{}, err
	}
	return v.Verification(), nil
}
