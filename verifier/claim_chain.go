package verifier

import (
	"slices"

	"github.com/privacycut/privacycut/receipts"
)

// expectedOperations returns the censor receipt's operations: one
// replace-owner per category with at least one span, in category order.
func expectedOperations(counts [8]int) []receipts.Operation {
	ops := []receipts.Operation{}
	for i := range credential {
		if counts[i] > 0 {
			ops = append(ops, receipts.Operation{Op: "replace-owner", Category: categories[i], Count: counts[i]})
		}
	}
	return ops
}

// receiptChain concludes receipt-chain: exactly the censor and export
// receipts of docs/DESIGN.md, in order, with every digest recomputed.
func (c *check) receiptChain(o *outcome) {
	if c.recErr != nil {
		o.fail("receipts: not decodable: %s", errText(c.recErr))
		return
	}
	if len(c.recs) != 2 {
		o.fail("chain has %d receipts, want 2", len(c.recs))
		return
	}
	exportDigest := c.exportDigest
	if c.req.ExportDigest != exportDigest {
		o.fail("bundle export_digest does not match the export bytes")
	}

	// Digests recomputed from the inputs; "" when they cannot be.
	var srcDigest, candDigest, labelDigest string
	switch {
	case c.key == nil:
		o.fail("keyed digests: %s", errText(c.keyErr))
	case c.src == nil:
		o.fail("source: not decodable")
	default:
		var err error
		srcDigest = c.srcDigest
		if labelDigest, err = c.dig.label, c.dig.labelErr; err != nil {
			o.fail("label digest: %s", errText(err))
		}
		if c.exp == nil || len(c.exp) != len(c.src.Parts) {
			o.fail("candidate digest: export parts do not pair with source parts")
		} else if candDigest, err = c.dig.candidate, c.dig.candidateErr; err != nil {
			o.fail("candidate digest: %s", errText(err))
		}
	}

	r0, r1 := &c.recs[0], &c.recs[1]
	for i, r := range []*receipts.TransformationReceipt{r0, r1} {
		if r.Schema != receipts.SchemaTransformation {
			o.fail("receipt %d: schema", i)
		}
		if r.Index != i {
			o.fail("receipt %d: index", i)
		}
		if c.vocDigest == "" || r.VocabularyDigest != c.vocDigest {
			o.fail("receipt %d: vocabulary_digest", i)
		}
		if labelDigest == "" || r.LabelDigest != labelDigest {
			o.fail("receipt %d: label_digest", i)
		}
	}

	// Receipt 0: the censor.
	if r0.Stage != "censor" || r0.Revision != "censor/1" {
		o.fail("receipt 0: stage or revision")
	}
	if srcDigest == "" || r0.InputDigest != srcDigest {
		o.fail("receipt 0: input_digest is not the source digest")
	}
	if candDigest == "" || r0.OutputDigest != candDigest {
		o.fail("receipt 0: output_digest is not the candidate digest")
	}
	if len(r0.Parents) != 0 || r0.Parents == nil {
		o.fail("receipt 0: parents must be []")
	}
	if r0.Terminal || r0.ExportDigest != "" {
		o.fail("receipt 0: must not be terminal")
	}
	switch {
	case !c.w.walked:
		o.fail("receipt 0: operations cannot be recomputed")
	case !c.w.sourceRecognized:
		o.fail("receipt 0: operations cannot be recomputed: source not recognized")
	case !slices.Equal(r0.Operations, expectedOperations(c.w.counts)):
		o.fail("receipt 0: operations do not count the owner spans")
	}

	// Receipt 1: the export.
	if r1.Stage != "export" || r1.Revision != "export/1" {
		o.fail("receipt 1: stage or revision")
	}
	if candDigest == "" || r1.InputDigest != candDigest {
		o.fail("receipt 1: input_digest is not the candidate digest")
	}
	if r1.OutputDigest != exportDigest {
		o.fail("receipt 1: output_digest is not the export digest")
	}
	if !r1.Terminal || r1.ExportDigest != exportDigest {
		o.fail("receipt 1: terminal receipt does not bind the export digest")
	}
	if len(r1.Parents) != 1 || r1.Parents[0] != c.recDigests[0] {
		o.fail("receipt 1: parents are not [digest of receipt 0]")
	}
	wantOps := []receipts.Operation{{Op: "drop-metadata", Category: "part", Count: len(c.exp)}}
	if c.exp == nil || !slices.Equal(r1.Operations, wantOps) {
		o.fail("receipt 1: operations do not count the parts")
	}
	o.facts = "receipts=2"
}
