package verifier

// export-canonical: the export is strict JSON, byte-equal to its RFC 8785
// form, shaped {"parts":[{"kind","text"}…],"profile":"closed-diagnostic@1"},
// and the bundle's export digest is the SHA-256 of its bytes.

// exportCanonical concludes the claim from what decode read.
func (c *check) exportCanonical(o *outcome) {
	if c.expErr != nil {
		o.fail("export: %s", errText(c.expErr))
	}
	if c.expCanon >= 0 {
		o.fail("export is not in canonical form (differs at byte %d)", c.expCanon)
	}
	if c.req.ExportDigest != c.exportDigest {
		o.fail("export_digest does not match the export bytes")
	}
	o.facts = "parts=" + itoa(len(c.exp)) + " bytes=" + itoa(len(c.req.Export))
}
