package verifier

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

// Revision names this verifier in every CutVerification@1 it writes.
const Revision = "verifier/1"

// Request is everything the verifier is given about one cut. The verifier
// reads it and never modifies it.
type Request struct {
	Source       []byte                // the Projection@1 document, as read from disk
	Export       []byte                // the export bytes
	ExportDigest string                // the digest the bundle claims for them
	Plan         []byte                // DisclosurePlan@1 document
	Vocabulary   []byte                // Vocabulary@1 document
	Receipts     []byte                // JSON array of TransformationReceipt@1
	EvidenceKey  *receipts.EvidenceKey // keys the digests of source-derived material
	Now          time.Time             // the plan must expire after Now

	// Wire is the wire body as sent: the provider request of the plan's
	// wire profile. Empty means none is given: for export@1 the body is
	// then the export; for another profile wire-match fails.
	Wire []byte
	// OutputSchema is the output schema document the wire body was
	// rendered with, for a profile other than export@1: its digest is the
	// plan's output_schema_digest.
	OutputSchema []byte

	// For a reversible cut: Issuer is asked whether each token of the
	// export is the one issued under Lease for its slot's (category,
	// value). A verifier in another process cannot be given an Issuer: it
	// dials its own at VaultSocket (package verifier/plugin).
	Issuer      Issuer
	Lease       string
	VaultSocket string
}

// Checker verifies a cut, in this process ([InProcess]) or in another one
// (package verifier/plugin). An error means no verification was made.
type Checker interface {
	Verify(ctx context.Context, req Request) (receipts.Verification, error)
}

var _ Checker = inProcess{}

// InProcess returns a Checker that runs Verify in the calling process.
func InProcess() Checker { return inProcess{} }

type inProcess struct{}

func (inProcess) Verify(ctx context.Context, req Request) (receipts.Verification, error) {
	if err := ctx.Err(); err != nil {
		return receipts.Verification{}, err
	}
	return VerifyContext(ctx, req), nil
}

// Verify checks one cut and returns its CutVerification@1. It lists every
// claim, in order; the verdict is "pass" only when every claim holds. Verify
// never panics on any input, and no Detail ever holds input bytes: only
// counts, codes, field names and positions.
func Verify(req Request) receipts.Verification { return VerifyContext(context.Background(), req) }

// VerifyContext is Verify with a context for the call to req.Issuer.
func VerifyContext(ctx context.Context, req Request) (v receipts.Verification) {
	defer func() {
		if recover() != nil {
			v = failAll(req, "verifier: internal error")
		}
	}()
	return verifyCtx(ctx, req)
}

// The claims, by index into check.out, in the order receipts.Claims lists
// them.
const (
	cExport = iota
	cCoverage
	cPublic
	cOwners
	cTokens
	cResidual
	cPlan
	cChain
	cWire
	nClaims
)

// verify is Verify without the recovery from a panic; verifyCtx is
// VerifyContext's. This is the whole run, in order:
//
//  1. decode reads every input (inputs.go); what cannot be read is kept as
//     an error for the claims that depend on it;
//  2. the keyed digests of the source, manifest, label and candidate
//     (digests.go), and the wire body of the plan's profile (renderWire),
//     are computed on other goroutines while
//  3. walk reads the source and the export record by record (walk.go) and
//     records what each record shows for coverage, public-preserved,
//     owners-replaced and token-consistency;
//  4. every claim is concluded, in the order of receipts.Claims, by its own
//     function (one file each: claim_*.go).
func verify(req Request) receipts.Verification { return verifyCtx(context.Background(), req) }

func verifyCtx(ctx context.Context, req Request) receipts.Verification {
	c := &check{req: req, ctx: ctx}
	// Even when a panic unwinds, every goroutine the check started ends
	// before its buffers are freed, and before Verify returns: nothing may
	// read the inputs after that (the plugin clears or unmaps them).
	defer func() {
		c.end()
		warm.Store(true)
	}()
	c.decode()
	digests := c.start(c.keyedDigests)
	wire := c.start(c.renderWire)
	c.walk()
	digests.wait()
	wire.wait()

	c.exportCanonical(&c.out[cExport])
	c.coverage(&c.out[cCoverage])
	c.publicPreserved(&c.out[cPublic])
	c.ownersReplaced(&c.out[cOwners])
	c.tokenConsistency(&c.out[cTokens])
	c.noResidual(&c.out[cResidual])
	c.planMatch(&c.out[cPlan])
	c.receiptChain(&c.out[cChain])
	c.wireMatch(&c.out[cWire])
	return c.verification()
}

// verification writes the CutVerification@1 of a completed run.
func (c *check) verification() receipts.Verification {
	v := receipts.Verification{
		Schema:           receipts.SchemaVerification,
		Verdict:          receipts.VerdictPass,
		Verifier:         Revision,
		Mode:             c.mode,
		SourceDigest:     c.srcDigest,
		ExportDigest:     c.exportDigest,
		PlanDigest:       c.planDigest,
		VocabularyDigest: c.vocDigest,
		WireDigest:       c.wire.digest,
	}
	if n := len(c.recDigests); n > 0 {
		v.ReceiptsDigest = c.recDigests[n-1]
	}
	names := receipts.Claims()
	if len(names) != nClaims {
		panic("verifier: claim list out of step with receipts.Claims")
	}
	for i, name := range names {
		o := &c.out[i]
		v.Claims = append(v.Claims, receipts.Claim{Name: name, OK: o.ok(), Detail: o.detail()})
		if !o.ok() {
			v.Verdict = receipts.VerdictFail
		}
	}
	return v
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

// outcome collects the findings of one claim. A claim holds when nothing
// failed; facts is its detail then.
type outcome struct {
	problems []string
	count    int
	facts    string
}

// fail records a problem; only the first few are kept in the detail.
// Every argument must be content-free: counts, codes, names of fields,
// claims and categories, positions.
func (o *outcome) fail(format string, args ...any) {
	o.count++
	if len(o.problems) < 4 {
		o.problems = append(o.problems, fmt.Sprintf(format, args...))
	}
}

// failEach records the same problem in every outcome of os.
func failEach(os []*outcome, format string, args ...any) {
	for _, o := range os {
		o.fail(format, args...)
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

func itoa(n int) string { return strconv.Itoa(n) }

// errText renders an error for a Detail. Every error reaching it comes from
// canon, receipts or this package, whose messages are content-free by
// contract.
func errText(err error) string { return err.Error() }
