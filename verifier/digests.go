package verifier

import (
	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// keyedDigests are the digests of source-derived material, other than the
// source digest, keyed under the evidence key: "" with an error when they
// cannot be computed. plan-match and receipt-chain compare them.
type keyedDigests struct {
	manifest, label, candidate          string
	manifestErr, labelErr, candidateErr error
}

// keyedDigests computes c.dig, each digest when its inputs are there. It
// runs beside the walk and reads only what decode wrote.
func (c *check) keyedDigests() {
	if c.key == nil || c.src == nil {
		return
	}
	c.dig.manifest, c.dig.manifestErr = c.manifestDigest()
	c.dig.label, c.dig.labelErr = keyedCanonical(c.key, joinLabels(c.src))
	if c.exp != nil && len(c.exp) == len(c.src.Parts) {
		c.dig.candidate, c.dig.candidateErr = c.candidateDigest()
	}
}

// manifest is the Manifest@1 whose keyed digest the plan binds.
type manifest struct {
	Schema string         `json:"schema"`
	Parts  []manifestPart `json:"parts"`
}

type manifestPart struct {
	Kind       string `json:"kind"`
	Key        string `json:"key"`
	TextDigest string `json:"text_digest"`
}

// manifestDigest returns H(Manifest@1) of the source.
func (c *check) manifestDigest() (string, error) {
	m := manifest{Schema: "Manifest@1", Parts: make([]manifestPart, len(c.src.Parts))}
	for i := range c.src.Parts {
		pt := &c.src.Parts[i]
		d, err := keyed(c.key, pt.Text)
		if err != nil {
			return "", err
		}
		m.Parts[i] = manifestPart{Kind: pt.Kind, Key: pt.Key, TextDigest: d}
	}
	return keyedCanonical(c.key, m)
}

// candidateDigest returns H(Candidate@1):
// {"schema":"Candidate@1","parts":[{"kind":…,"key":…,"text":…}…]}, made of
// the source parts' kinds and keys and the export's texts: the candidate
// the export was cut from.
func (c *check) candidateDigest() (string, error) {
	elems := make([]canon.Value, len(c.src.Parts))
	for i := range elems {
		p := &c.src.Parts[i]
		elems[i] = canon.Value{Kind: canon.Object, Members: []canon.Member{
			member("kind", strValue([]byte(p.Kind))),
			member("key", strValue([]byte(p.Key))),
			member("text", strValue(c.exp[i].text)),
		}}
	}
	tree := &canon.Value{Kind: canon.Object, Members: []canon.Member{
		member("parts", canon.Value{Kind: canon.Array, Elems: elems}),
		member("schema", strValue([]byte("Candidate@1"))),
	}}
	return keyedTree(c.key, tree)
}

func strValue(b []byte) canon.Value { return canon.Value{Kind: canon.String, Str: b} }

func member(key string, v canon.Value) canon.Member {
	return canon.Member{Key: []byte(key), Value: v}
}

// keyed returns the HMAC digest of b, or an error if the key cannot be used.
func keyed(k *receipts.EvidenceKey, b []byte) (d string, err error) {
	defer func() {
		if recover() != nil {
			d, err = "", receipts.ErrKeyWiped
		}
	}()
	return k.HMAC(b), nil
}

// keyedCanonical returns the HMAC digest of the canonical form of v.
func keyedCanonical(k *receipts.EvidenceKey, v any) (string, error) {
	if k == nil {
		return "", errNoKey
	}
	return k.HMACCanonical(v)
}

// keyedTree returns H(tree): the HMAC of its canonical form, streamed into
// the hash without building it.
func keyedTree(k *receipts.EvidenceKey, tree *canon.Value) (d string, err error) {
	if k == nil {
		return "", errNoKey
	}
	defer func() {
		if recover() != nil {
			d, err = "", receipts.ErrKeyWiped
		}
	}()
	h := k.NewHMAC()
	if err := tree.WriteCanonical(h); err != nil {
		return "", err
	}
	return receipts.FormatHMAC(h.Sum(nil)), nil
}
