package verifier

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
)

// Revision names this verifier in every CutVerification@1 it writes.
const Revision = "verifier/1"

const (
	cExport = iota
	cCoverage
	cPublic
	cOwners
	cTokens
	cResidual
	cPlan
	cChain
	nClaims
)

// Request is everything the verifier is given about one cut. The verifier
// reads it and never modifies it.
type Request struct {
	Source       []byte                // the Projection@1 document, as read from disk
	Export       []byte                // the export bytes as sent
	ExportDigest string                // the digest the bundle claims for them
	Plan         []byte                // DisclosurePlan@1 document
	Vocabulary   []byte                // Vocabulary@1 document
	Receipts     []byte                // JSON array of TransformationReceipt@1
	EvidenceKey  *receipts.EvidenceKey // keys the digests of source-derived material
	Now          time.Time             // the plan must expire after Now
}

// Verify checks one cut and returns its CutVerification@1. It lists every
// claim, in order; the verdict is "pass" only when every claim holds. Verify
// never panics on any input, and no Detail ever holds input bytes: only
// counts, codes, field names and positions.
func Verify(req Request) (v receipts.Verification) {
	c := &check{req: req}
	defer func() {
		if recover() != nil {
			v = failAll(req, "verifier: internal error")
		}
	}()
	return c.run()
}

// Unverifiable is the verification of inputs that never reached a check
// (a bundle that is not a CutBundle@1): every claim fails with detail, which
// must hold no input bytes, and no digest is given.
func Unverifiable(detail string) receipts.Verification {
	v := failAll(Request{}, detail)
	v.ExportDigest = ""
	return v
}

// failAll is the verification of a run that could not complete.
func failAll(req Request, detail string) receipts.Verification {
	v := receipts.Verification{
		Schema: receipts.SchemaVerification, Verdict: receipts.VerdictFail, Verifier: Revision,
		ExportDigest: receipts.SHA256(req.Export),
	}
	for _, n := range receipts.Claims() {
		v.Claims = append(v.Claims, receipts.Claim{Name: n, OK: false, Detail: detail})
	}
	return v
}

// outcome collects the findings of one claim. A claim holds when it was
// evaluated and nothing failed.
type outcome struct {
	problems []string
	count    int
	facts    string
}

// fail records a problem; only the first few are kept in the detail.
func (o *outcome) fail(format string, args ...any) {
	o.count++
	if len(o.problems) < 4 {
		o.problems = append(o.problems, fmt.Sprintf(format, args...))
	}
}

func (o *outcome) ok() bool { return o.count == 0 }

func (o *outcome) detail() string {
	if o.ok() {
		return o.facts
	}
	d := strings.Join(o.problems, "; ")
	if o.count > len(o.problems) {
		d += "; " + strconv.Itoa(o.count-len(o.problems)) + " more"
	}
	return d
}

// exportPart is one part of the export as parsed.
type exportPart struct {
	kind string
	text []byte
}

// check holds one verification run.
type check struct {
	req Request
	out [nClaims]outcome

	key    *receipts.EvidenceKey // nil when absent or wiped
	keyErr error

	src       *projection
	srcErr    error
	srcDigest string // H(source), "" without a usable key

	exportDigest string // S(export bytes)

	expParts []exportPart // nil when the export has no usable parts
	expErr   error
	expCanon int // first offset where the export differs from its canonical form, or -1

	plan       *receipts.Plan
	planErr    error
	planDigest string
	mode       string // the plan's mode, when valid

	voc       *vocabulary
	vocErr    error
	vocDigest string

	recs       []receipts.TransformationReceipt
	recDigests []string
	recErr     error

	w *walkResult

	// dig are the keyed digests plan-match and receipt-chain compare,
	// computed on another CPU during the walk.
	dig keyedDigests

	tasks []*task // started on other goroutines
	// frees and expFree free the buffers the check decoded into, once
	// nothing runs any more.
	frees   []func()
	expFree func()
}

// task is work running on another goroutine. A panic in it is carried to
// wait, which panics again on the verifying goroutine, where Verify
// recovers it.
type task struct {
	done   chan any
	waited bool
}

// start runs fn on another goroutine.
func (c *check) start(fn func()) *task {
	t := &task{done: make(chan any, 1)}
	c.tasks = append(c.tasks, t)
	go func() {
		defer func() { t.done <- recover() }()
		fn()
	}()
	return t
}

// wait waits for t to end and panics again if it panicked.
func (t *task) wait() {
	if t.waited {
		return
	}
	t.waited = true
	if p := <-t.done; p != nil {
		panic(p)
	}
}

// end waits for every task started, whatever its end, then frees the
// check's buffers.
func (c *check) end() {
	for _, t := range c.tasks {
		if !t.waited {
			t.waited = true
			<-t.done
		}
	}
	if c.expFree != nil {
		c.frees = append(c.frees, c.expFree)
	}
	for _, free := range c.frees {
		free()
	}
	c.frees, c.expFree = nil, nil
}

// keyedDigests are the digests of source-derived material keyed under the
// evidence key, other than the source digest: "" with an error when they
// cannot be computed.
type keyedDigests struct {
	manifest, label, candidate          string
	manifestErr, labelErr, candidateErr error
}

var (
	errNoKey   = errors.New("verifier: no evidence key")
	errNoClock = errors.New("verifier: no clock")
)

// verify is Verify without the recovery from a panic.
func verify(req Request) receipts.Verification {
	return (&check{req: req}).run()
}

// run checks the cut on two CPUs: the export is decoded while the source
// is, and the keyed digests are computed while the texts are walked.
func (c *check) run() receipts.Verification {
	// Even when a panic unwinds, every task ends before the buffers are
	// freed, and before Verify returns: nothing may read the inputs after
	// that (the plugin unmaps them).
	defer c.end()
	c.decode()
	c.checkExport()
	digests := c.start(c.keyedDigests)
	c.w = c.walk()
	digests.wait()
	c.checkPlan()
	c.checkChain()

	v := receipts.Verification{
		Schema:           receipts.SchemaVerification,
		Verdict:          receipts.VerdictPass,
		Verifier:         Revision,
		Mode:             c.mode,
		ExportDigest:     c.exportDigest,
		PlanDigest:       c.planDigest,
		VocabularyDigest: c.vocDigest,
	}
	v.SourceDigest = c.srcDigest
	if n := len(c.recDigests); n > 0 {
		v.ReceiptsDigest = c.recDigests[n-1]
	}
	for i, name := range receipts.Claims() {
		o := &c.out[i]
		v.Claims = append(v.Claims, receipts.Claim{Name: name, OK: o.ok(), Detail: o.detail()})
		if !o.ok() {
			v.Verdict = receipts.VerdictFail
		}
	}
	return v
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

// digestDoc returns S(document): SHA-256 of the document's canonical form.
func digestDoc(data []byte) (string, error) {
	canonical, err := canon.Canonicalize(data)
	if err != nil {
		return "", err
	}
	return receipts.SHA256(canonical), nil
}

// decode parses every input. Each failure is kept for the claims that
// depend on that input.
func (c *check) decode() {
	req := c.req
	if req.EvidenceKey == nil {
		c.keyErr = errNoKey
	} else if err := req.EvidenceKey.Reveal(func([]byte) error { return nil }); err != nil {
		c.keyErr = err
	} else {
		c.key = req.EvidenceKey
	}

	// The export is hashed, decoded and compared with its canonical form on
	// another CPU meanwhile.
	export := c.start(func() {
		c.exportDigest = receipts.SHA256(req.Export)
		c.decodeExport()
	})
	var tree *canon.Value
	var free func()
	c.src, tree, free, c.srcErr = parseSource(req.Source)
	c.frees = append(c.frees, free)
	if c.key != nil && tree != nil {
		if d, err := keyedTree(c.key, tree); err == nil {
			c.srcDigest = d
		} else if errors.Is(err, receipts.ErrKeyWiped) {
			c.key, c.keyErr = nil, err
		} else {
			c.srcErr = err
		}
	}

	c.plan, c.planErr = parsePlan(req.Plan)
	if d, err := digestDoc(req.Plan); err == nil {
		c.planDigest = d
	}
	if c.plan != nil && (c.plan.Mode == receipts.ModeIrreversible || c.plan.Mode == receipts.ModeReversible) {
		c.mode = c.plan.Mode
	}

	var vtree *canon.Value
	c.voc, vtree, c.vocErr = parseVocabularyTree(req.Vocabulary)
	if c.voc != nil {
		c.frees = append(c.frees, c.voc.release)
	}
	// S(vocabulary), from the tree parseVocabularyTree read: what
	// canon.Canonicalize would parse again.
	if vtree != nil {
		if canonical, err := vtree.Canonical(); err == nil {
			c.vocDigest = receipts.SHA256(canonical)
		}
	}

	c.recs, c.recDigests, c.recErr = parseReceipts(req.Receipts)
	export.wait()
}

// keyedDigests computes c.dig: the manifest, label and candidate digests,
// each when its inputs are there. It reads the decoded source and export
// and the key, which nothing changes once decode has returned.
func (c *check) keyedDigests() {
	if c.key == nil || c.src == nil {
		return
	}
	c.dig.manifest, c.dig.manifestErr = c.manifestDigest()
	c.dig.label, c.dig.labelErr = keyedCanonical(c.key, joinLabels(c.src))
	if c.expParts != nil && len(c.expParts) == len(c.src.Parts) {
		c.dig.candidate, c.dig.candidateErr = c.candidateDigest()
	}
}

// parsePlan strictly decodes a DisclosurePlan@1.
func parsePlan(data []byte) (*receipts.Plan, error) {
	var p receipts.Plan
	if err := canon.Unmarshal(data, &p, canon.Options{}); err != nil {
		return nil, err
	}
	return &p, nil
}

// parseReceipts strictly decodes the JSON array of receipts and returns each
// receipt with its digest S(receipt) over the canonical form of the element
// as given.
func parseReceipts(data []byte) ([]receipts.TransformationReceipt, []string, error) {
	tree, err := canon.Parse(data, canon.Options{})
	if err != nil {
		return nil, nil, err
	}
	if tree.Kind != canon.Array {
		return nil, nil, errors.New("verifier: receipts: not a JSON array")
	}
	recs := make([]receipts.TransformationReceipt, len(tree.Elems))
	digests := make([]string, len(tree.Elems))
	for i := range tree.Elems {
		canonical, err := tree.Elems[i].Canonical()
		if err != nil {
			return nil, nil, err
		}
		digests[i] = receipts.SHA256(canonical)
		if err := tree.Elems[i].Decode(&recs[i]); err != nil {
			return nil, digests, fmt.Errorf("verifier: receipts: element %d: %w", i, err)
		}
	}
	return recs, digests, nil
}

// errText renders an error for a Detail. Every error reaching it comes from
// receipts or this package, whose messages are content-free by contract.
func errText(err error) string { return err.Error() }
