package censor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"strconv"

	"github.com/privacycut/privacycut/grammar"
	"github.com/privacycut/privacycut/receipts"
)

// Revisions of the two stages; they appear in every receipt.
const (
	RevisionCensor = "censor/1"
	RevisionExport = "export/1"
)

// Pair is one distinct owner value of a cut: its category and its decoded value.
type Pair struct {
	Category grammar.Category
	Value    receipts.Plaintext
}

// TokenSource issues the tokens of a cut: one per distinct pair, in the order
// given. Pairs arrive in order of first appearance; sourceDigest is the keyed
// digest of the projection they come from (a reversible source binds its
// lease to it).
type TokenSource interface {
	Mode() string // receipts.ModeIrreversible or receipts.ModeReversible
	Issue(ctx context.Context, sourceDigest string, pairs []Pair) ([]string, error)
}

// Irreversible is the token source of irreversible cuts: the n-th distinct
// value of a category becomes `redacted:<category>:<n>`. It keeps nothing.
type Irreversible struct{}

var _ TokenSource = Irreversible{}

func (Irreversible) Mode() string { return receipts.ModeIrreversible }

func (Irreversible) Issue(_ context.Context, _ string, pairs []Pair) ([]string, error) {
	var n [16]int
	out := make([]string, len(pairs))
	for i, p := range pairs {
		n[p.Category]++
		out[i] = "redacted:" + p.Category.String() + ":" + strconv.Itoa(n[p.Category])
	}
	return out, nil
}

// Input is everything one cut needs.
type Input struct {
	Doc        *grammar.Document
	Vocabulary *grammar.Vocabulary
	Plan       *receipts.Plan
	Key        *receipts.EvidenceKey
	Tokens     TokenSource // nil: Irreversible
	Limits     grammar.Limits

	// Binding, when it is Bind's of Doc under Key, gives the projection's
	// manifest digest and source digest (its restricted reference), which
	// Cut then does not compute again. Any other Binding is not used.
	Binding *Binding

	// Buffer, when set, returns the buffer of at least n bytes that the
	// export is written into: Output.Export then shares its memory, and
	// the caller decides how long it lives (a text that escapes to more
	// than its size and an eighth moves the export to the heap). When nil,
	// the Go heap.
	Buffer func(n int) []byte
}

// Output is a prepared cut.
type Output struct {
	Export          []byte // canonical Export@1
	ExportDigest    string
	SourceDigest    string
	ManifestDigest  string
	CandidateDigest string
	LabelDigest     string
	PlanDigest      string
	Receipts        []receipts.TransformationReceipt
	Label           grammar.Label
	Stats           grammar.Stats
	Pairs           int // distinct owner values
}

// RefusedError is a cut refused by policy: the grammar, the lineage rules or
// the plan. It carries positions and codes only.
type RefusedError struct {
	Refusals []receipts.Refusal
	Field    string // for plan refusals: the plan field that did not match
}

func (e *RefusedError) Error() string {
	if len(e.Refusals) == 0 {
		return "censor: refused"
	}
	r := e.Refusals[0]
	msg := "censor: refused: " + r.Where() + ": " + string(r.Code)
	if e.Field != "" {
		msg = "censor: refused: plan " + e.Field + ": " + string(r.Code)
	}
	if len(e.Refusals) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(e.Refusals)-1)
	}
	return msg
}

func planRefusal(code receipts.Code, field string) *RefusedError {
	return &RefusedError{Refusals: []receipts.Refusal{{Code: code, Part: -1, Kind: "plan"}}, Field: field}
}

// ErrNoKey is returned when no evidence key is given.
var ErrNoKey = errors.New("censor: no evidence key")

type ownerRef struct {
	part, off, n int32
	pair         int32
}

// bound is Bind's answer, sent from another goroutine.
type bound struct {
	b   *Binding
	err error
}

// Cut applies the censor. A *RefusedError means the input was refused by
// policy; any other error is operational (for example the token source failed).
func Cut(ctx context.Context, in Input) (*Output, error) {
	if in.Key == nil {
		return nil, ErrNoKey
	}
	src := in.Tokens
	if src == nil {
		src = Irreversible{}
	}
	plan := in.Plan
	if plan == nil {
		return nil, errors.New("censor: no plan")
	}
	allowed, err := CheckPlan(plan, in.Vocabulary, src.Mode())
	if err != nil {
		return nil, err
	}
	out := &Output{}
	if out.PlanDigest, err = receipts.DigestCanonical(plan); err != nil {
		return nil, err
	}

	// The keyed digests of the source (its canonical form, and each text for
	// the manifest) are computed on another CPU while the grammar runs.
	dch := make(chan bound, 1)
	if b := in.Binding; b != nil && b.doc == in.Doc && b.key == in.Key {
		dch <- bound{b: b}
	} else {
		go func() {
			b, err := Bind(in.Doc, in.Key)
			dch <- bound{b, err}
		}()
	}

	// Parse everything, collecting owner spans and distinct pairs.
	parser := grammar.NewParser(in.Vocabulary, grammar.Options{Limits: in.Limits, Allowed: allowed})
	var pairs []Pair
	// The decoded values are copies made for the token source, which has
	// sealed or dropped them when Cut returns: they are cleared then, on
	// every path.
	defer func() {
		for i := range pairs {
			clear(pairs[i].Value)
		}
	}()
	index := newValueIndex()
	res, owners := grammar.CheckOwners(in.Doc, parser, plan.MaxParents)
	total := 0
	for i := range owners {
		total += owners[i].Len()
	}
	refs := make([]ownerRef, 0, total)
	for part := range owners {
		text := in.Doc.Parts[part].Text
		for s := range owners[part].All() {
			raw := text[s.Off : s.Off+s.Len]
			id, h := index.find(s.Category, raw)
			if id < 0 {
				id = int32(len(pairs))
				index.add(h, s.Category, raw)
				pairs = append(pairs, Pair{Category: s.Category, Value: grammar.Unescape(raw)})
			}
			refs = append(refs, ownerRef{part: int32(part), off: int32(s.Off), n: int32(s.Len), pair: id})
		}
	}
	dg := <-dch
	if !res.OK() {
		return nil, &RefusedError{Refusals: res.Refusals}
	}
	if dg.err != nil {
		return nil, dg.err
	}
	out.ManifestDigest, out.SourceDigest = dg.b.manifest, dg.b.ref
	// The plan binds exactly this projection (checked after the grammar, so
	// that an edited projection is refused for what is wrong in it first).
	if out.ManifestDigest != plan.ManifestDigest {
		return nil, planRefusal(receipts.PlanMismatch, "manifest_digest")
	}
	// restricted_ref is the keyed digest of the whole projection, labels
	// and lineage included, which the manifest leaves out: a relabelled
	// projection is refused here, before any token is asked for, not only
	// by the verifier after a lease was granted.
	if out.SourceDigest != plan.RestrictedRef {
		return nil, planRefusal(receipts.PlanMismatch, "restricted_ref")
	}
	if err := checkUtility(plan, res.Stats); err != nil {
		return nil, err
	}
	out.Stats, out.Label, out.Pairs = res.Stats, res.Label, len(pairs)

	var exp *exportWriter
	if _, local := src.(Irreversible); local {
		// Irreversible tokens are computed at once: the export is
		// written in one pass, the tokens put in as the text is escaped.
		tokens, err := issue(ctx, src, out.SourceDigest, pairs)
		if err != nil {
			return nil, err
		}
		exp = writeExport(in.Doc, refs, tokens, in.Buffer)
	} else {
		// Other tokens are asked for on another goroutine (from a vault, a
		// round trip and a durable write) while the text around the owner
		// values is escaped into a template; the export is then the
		// template with each token put in its gap.
		type issued struct {
			tokens []string
			err    error
		}
		ich := make(chan issued, 1)
		go func() {
			t, err := issue(ctx, src, out.SourceDigest, pairs)
			ich <- issued{t, err}
		}()
		tm := newTemplate(in.Doc, refs)
		is := <-ich
		if is.err != nil {
			return nil, is.err
		}
		exp = tm.fill(refs, is.tokens, in.Buffer)
	}
	out.Export = exp.buf
	if r := escapedResidual(in.Doc, refs, pairs, out.Export); r != nil {
		return nil, &RefusedError{Refusals: []receipts.Refusal{*r}}
	}
	// The export's plain digest and the candidate's keyed one, on two CPUs.
	done := make(chan string, 1)
	go func() { done <- receipts.SHA256(out.Export) }()
	out.CandidateDigest = exp.candidateDigest(in.Key)
	out.ExportDigest = <-done
	if out.LabelDigest, err = LabelDigest(out.Label, in.Key); err != nil {
		return nil, err
	}
	if out.Receipts, err = chain(out, in.Vocabulary.Digest(), len(in.Doc.Parts)); err != nil {
		return nil, err
	}
	return out, nil
}

// issue asks src for the tokens of pairs and checks that there is one per
// pair and that each can sit inside owner quotes unescaped.
func issue(ctx context.Context, src TokenSource, sourceDigest string, pairs []Pair) ([]string, error) {
	tokens, err := src.Issue(ctx, sourceDigest, pairs)
	if err != nil {
		return nil, fmt.Errorf("censor: token source: %w", err)
	}
	if len(tokens) != len(pairs) {
		return nil, errors.New("censor: token source returned the wrong number of tokens")
	}
	for _, t := range tokens {
		if !tokenSafe(t) {
			return nil, errors.New("censor: token source returned a token outside [A-Za-z0-9._:-]")
		}
	}
	return tokens, nil
}

// tokenSafe reports whether t is a non-empty token of [A-Za-z0-9._:-]: such a
// token can sit inside owner quotes without escaping.
func tokenSafe(t string) bool {
	if t == "" {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// checkUtility refuses a cut that would carry nothing its declared task needs:
// with preserve-diagnostics among the invariants, at least one finding record
// must be disclosed (docs/FORMATS.md#plan, LOST_UTILITY).
func checkUtility(plan *receipts.Plan, st grammar.Stats) error {
	for _, inv := range plan.Invariants {
		if inv == "preserve-diagnostics" && st.Findings == 0 {
			return planRefusal(receipts.LostUtility, "invariants")
		}
	}
	return nil
}

// chain builds the two receipts of DESIGN.md.
func chain(o *Output, vocabDigest string, parts int) ([]receipts.TransformationReceipt, error) {
	var ops []receipts.Operation
	for _, c := range grammar.Categories() {
		if n := o.Stats.Owners[c]; n > 0 {
			ops = append(ops, receipts.Operation{Op: "replace-owner", Category: c.String(), Count: n})
		}
	}
	if ops == nil {
		ops = []receipts.Operation{}
	}
	r0 := receipts.TransformationReceipt{
		Schema: receipts.SchemaTransformation, Stage: "censor", Revision: RevisionCensor, Index: 0,
		InputDigest: o.SourceDigest, OutputDigest: o.CandidateDigest,
		PlanDigest: o.PlanDigest, VocabularyDigest: vocabDigest, LabelDigest: o.LabelDigest,
		Parents: []string{}, Operations: ops,
	}
	d0, err := r0.Digest()
	if err != nil {
		return nil, err
	}
	r1 := receipts.TransformationReceipt{
		Schema: receipts.SchemaTransformation, Stage: "export", Revision: RevisionExport, Index: 1,
		InputDigest: o.CandidateDigest, OutputDigest: o.ExportDigest,
		PlanDigest: o.PlanDigest, VocabularyDigest: vocabDigest, LabelDigest: o.LabelDigest,
		Parents:    []string{d0},
		Operations: []receipts.Operation{{Op: "drop-metadata", Category: "part", Count: parts}},
		Terminal:   true, ExportDigest: o.ExportDigest,
	}
	return []receipts.TransformationReceipt{r0, r1}, nil
}

// valueIndex finds the distinct owner values of a cut by a keyed hash of
// their written bytes (and category), comparing candidates with the bytes
// of the first occurrence where they stand in the source. It makes no Go
// string of a value: a map keyed by one would keep a copy that is never
// cleared.
type valueIndex struct {
	seed maphash.Seed
	head map[uint64]int32 // hash → the latest pair with that hash
	next []int32          // per pair: the previous pair with its hash, or -1
	cat  []grammar.Category
	raw  [][]byte // per pair: its written bytes, a slice of the source
}

func newValueIndex() *valueIndex {
	return &valueIndex{seed: maphash.MakeSeed(), head: map[uint64]int32{}}
}

func (x *valueIndex) hash(c grammar.Category, raw []byte) uint64 {
	return maphash.Bytes(x.seed, raw) ^ uint64(c)*0x9e3779b97f4a7c15
}

// find returns the number of the pair (c, raw), or -1, and raw's hash.
func (x *valueIndex) find(c grammar.Category, raw []byte) (int32, uint64) {
	h := x.hash(c, raw)
	id, ok := x.head[h]
	for ok && id >= 0 {
		if x.cat[id] == c && bytes.Equal(x.raw[id], raw) {
			return id, h
		}
		id = x.next[id]
	}
	return -1, h
}

// add numbers (c, raw), known to be absent, as the next pair.
func (x *valueIndex) add(h uint64, c grammar.Category, raw []byte) {
	prev, ok := x.head[h]
	if !ok {
		prev = -1
	}
	x.head[h] = int32(len(x.next))
	x.next = append(x.next, prev)
	x.cat = append(x.cat, c)
	x.raw = append(x.raw, raw)
}
