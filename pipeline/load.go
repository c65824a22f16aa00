package pipeline

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// Size limits of the documents the pipeline reads.
const (
	MaxPlanBytes   = 1 << 20  // a DisclosurePlan@1
	MaxSchemaBytes = 1 << 20  // an output schema
	MaxAnswerBytes = 64 << 20 // a remote answer
)

// Vocabulary is a loaded Vocabulary@1: the public items of closed-diagnostic@1
// and the document they were read from (the verifier reads it again).
type Vocabulary struct {
	g   *grammar.Vocabulary
	doc []byte
}

// LoadVocabulary reads a Vocabulary@1 document. The document is kept, not
// copied: the caller must not modify it.
func LoadVocabulary(doc []byte) (*Vocabulary, error) {
	g, err := grammar.LoadVocabulary(doc)
	if err != nil {
		return nil, err
	}
	return &Vocabulary{g: g, doc: doc}, nil
}

// Digest returns the vocabulary's digest (sha256 of its canonical form).
func (v *Vocabulary) Digest() string { return v.g.Digest() }

// Grammar returns the vocabulary as the grammar reads it.
func (v *Vocabulary) Grammar() *grammar.Vocabulary { return v.g }

// Plan is a DisclosurePlan@1 read from its document.
type Plan struct {
	fields receipts.Plan
	doc    []byte
}

// ErrPlanNotCanonical: the plan document holds a member its fields leave
// out (an explicit empty, zero or null value).
var ErrPlanNotCanonical = errors.New("plan: holds a member its fields leave out (an explicit empty, zero or null value); remove it")

// ParsePlan strictly decodes a DisclosurePlan@1 document. The document must
// be its fields' canonical form, up to white space and member order: the
// censor and the seal digest the plan's fields, the verifier the document,
// and the two must be one digest.
func ParsePlan(doc []byte) (*Plan, error) {
	if len(doc) > MaxPlanBytes {
		return nil, fmt.Errorf("plan: larger than %d bytes", MaxPlanBytes)
	}
	var p receipts.Plan
	if err := canon.Unmarshal(doc, &p, canon.Options{MaxBytes: MaxPlanBytes}); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	c, err := canon.Canonicalize(doc)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	fields, err := canon.Marshal(&p)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	if !bytes.Equal(c, fields) {
		return nil, ErrPlanNotCanonical
	}
	return &Plan{fields: p, doc: doc}, nil
}

// NewPlan returns the Plan of p's fields, as its canonical document.
func NewPlan(p *receipts.Plan) (*Plan, error) {
	doc, err := canon.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return &Plan{fields: *p, doc: doc}, nil
}

// Fields returns a copy of the plan's fields.
func (p *Plan) Fields() receipts.Plan {
	f := p.fields
	f.Invariants = append([]string(nil), f.Invariants...)
	f.Categories.Allowed = append([]string(nil), f.Categories.Allowed...)
	f.Categories.Prohibited = append([]string(nil), f.Categories.Prohibited...)
	if f.Wire != nil {
		w := *f.Wire
		f.Wire = &w
	}
	return f
}

// Document returns the plan document as read.
func (p *Plan) Document() []byte { return p.doc }

// Digest returns the plan's digest, S(plan).
func (p *Plan) Digest() (string, error) { return receipts.DigestCanonical(&p.fields) }
