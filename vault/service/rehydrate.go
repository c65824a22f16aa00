package service

import (
	"context"
	"errors"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/crash"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// EvidenceKeyCategory is the category of the one sealed value that carries
// a cut's evidence key to Rehydrate (vaultapi.SealEvidenceKey).
const EvidenceKeyCategory = vaultapi.EvidenceKeyCategory

// The crash points of a rehydration, in the order a rehydration passes
// them (crashpoints builds only; see package vault/crash). Between
// RehydrateConsumed and RehydrateFinished the consume path also passes
// crash.ConsumeCommitted and crash.ConsumeKeyDestroyed.
const (
	// CrashRehydrateClaimed: the claim is committed (a fresh claim, not an
	// idempotent repeat); the return is not yet validated.
	CrashRehydrateClaimed = "rehydrate.claimed"
	// CrashRehydrateApplied: the output and its receipt are built in
	// memory; the lease is still CLAIMED.
	CrashRehydrateApplied = "rehydrate.applied"
	// CrashRehydrateConsumed: CONSUMED is committed; the data key is not
	// yet destroyed and the result is not yet returned.
	CrashRehydrateConsumed = "rehydrate.consumed"
	// CrashRehydrateFinished: the data key is destroyed and its destruction
	// recorded; the result is not yet returned.
	CrashRehydrateFinished = "rehydrate.finished"
)

// The rehydration's request and result are package vaultapi's.
type (
	RehydrateRequest = vaultapi.RehydrateRequest
	RehydrateResult  = vaultapi.RehydrateResult
)

// Rehydrate rehydrates a return of a reversible cut inside the
// vault, at most once per lease:
//
//  1. The request is checked without touching the lease: the claim's
//     return digest is SHA-256 of the return, the schema parses and its
//     digest is the output_schema_digest the lease was granted with
//     (PLAN_MISMATCH otherwise, and always for a lease granted without
//     one), the receipt fields are well formed, the cut has not expired,
//     and the sealed evidence key opens into the arena.
//  2. CLAIM, the compare-and-set of Claim over (principal, run, attempt,
//     station, return digest): the same tuple again is idempotent, any
//     other is LEASE_CLAIM_CONFLICT, a terminal or expired lease
//     LEASE_NOT_ACTIVE (so a replay after consume is refused).
//  3. The map is opened into the arena (WithMap) and the return is
//     validated (rehydrate.Validate) against the schema, the lease's
//     namespace and purpose, and the tokens the lease issued — every one of
//     which Bind found in the disclosed export. A refusal is an *Error
//     carrying the refusal code that wraps the *receipts.Refusal (JSON
//     path, line, column, length; never a token or a value), and the lease
//     stays CLAIMED by this tuple, so the same tuple may retry.
//  4. The substitution (Plan.Apply) and RehydrationReceipt@1, with purge_at
//     bounded by the lease deadline, the cut expiry and the retention
//     profile, and final_digest keyed under the evidence key, which is then
//     wiped.
//  5. CONSUME, only once the result exists and the caller is still
//     waiting; then the data key is destroyed and the destruction recorded.
//
// A failure before step 5 leaves the lease CLAIMED and returns no output.
// After step 5 the lease is terminal: a crash or a lost reply then loses
// the result, and nothing can rehydrate the return again.
func (v *Vault) Rehydrate(ctx context.Context, principal string, req RehydrateRequest) (RehydrateResult, error) {
	const op = "rehydrate"
	if err := v.gate(op); err != nil {
		return RehydrateResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return RehydrateResult{}, vaultapi.Fail(op, err)
	}
	if len(req.Return) > rehydrate.MaxReturnBytes {
		return RehydrateResult{}, vaultapi.New(receipts.LimitExceeded, op, "return", nil)
	}
	// The return is parsed while its digest is computed: the digest is
	// checked before the claim, a syntax refusal reported after it.
	ret := rehydrate.ParseReturn(req.Return)
	if ret.Digest() != req.Claim.ReturnDigest {
		return RehydrateResult{}, invalid(op, "claim.return_digest")
	}
	schema, err := rehydrate.ParseSchema(req.Schema)
	if err != nil {
		return RehydrateResult{}, returnError(op, "schema", err)
	}
	if err := v.checkSchema(op, req.Lease, schema); err != nil {
		return RehydrateResult{}, err
	}
	if err := v.checkReceiptFields(op, req); err != nil {
		return RehydrateResult{}, err
	}
	key, err := v.openEvidenceKey(op, req.EvidenceKey)
	if err != nil {
		return RehydrateResult{}, err
	}
	defer key.Wipe()

	claimed, err := v.Claim(ctx, principal, req.Lease, req.Claim)
	if err != nil {
		return RehydrateResult{}, err
	}
	if !claimed.Repeated {
		crash.At(CrashRehydrateClaimed)
	}
	l := claimed.Lease

	// The evidence key is revealed for the substitution, so that the
	// output's keyed digest is computed beside its writing.
	var (
		res rehydrate.Result
		rc  receipts.RehydrationReceipt
	)
	err = withEvidenceKey(key, func(ek *receipts.EvidenceKey) error {
		err := v.WithMap(ctx, req.Lease, func(m *Map) error {
			return m.s.Reveal(func(b []byte) error {
				iss, err := newIssued(b, m.ns)
				if err != nil {
					return err
				}
				plan, err := ret.Validate(schema, rehydrate.Lease{Namespace: l.Namespace, Purpose: l.Purpose}, iss)
				if err != nil {
					return err
				}
				res, err = plan.ApplyKeyed(iss, ek)
				return err
			})
		})
		if err != nil {
			return err
		}
		rc, err = rehydrate.NewReceipt(rehydrate.ReceiptInput{
			CutEvent: l.CutEvent, Lease: l.ID, Result: res, EvidenceKey: ek,
			VerifierRevision: req.VerifierRevision, PolicyRevision: req.PolicyRevision,
			LabelDigest: req.LabelDigest, SourceExpiry: l.Deadline, CutExpiry: req.CutExpiry,
			Retention: req.Retention, Now: v.now(), OutputSchemaDigest: l.OutputSchemaDigest,
		})
		return err
	})
	key.Wipe()
	if err != nil {
		clear(res.Output)
		return RehydrateResult{}, v.rehydrateFail(op, err)
	}
	crash.At(CrashRehydrateApplied)
	if err := ctx.Err(); err != nil {
		// Nobody is waiting for the result: do not burn the lease.
		clear(res.Output)
		return RehydrateResult{}, vaultapi.Fail(op, err)
	}

	t := lease.ClaimTuple{Principal: principal, Run: req.Claim.Run, Attempt: req.Claim.Attempt,
		Station: req.Claim.Station, ReturnDigest: req.Claim.ReturnDigest}
	now := v.now()
	n, err := v.store.Update(req.Lease, destroying(now, func(cur lease.Lease) (lease.Lease, error) {
		return cur.Consume(t, now)
	}))
	if err != nil {
		clear(res.Output)
		return RehydrateResult{}, v.settle("consume", n, err)
	}
	crash.At(CrashRehydrateConsumed)
	if d, derr := v.finishTerminal(n); derr != nil {
		v.log.Error("vault: key destruction pending after rehydration", "lease", n.ID)
	} else {
		n = d
		crash.At(CrashRehydrateFinished)
	}
	subs := 0
	for _, k := range rc.Substitutions {
		subs += k
	}
	v.log.Info("vault: lease rehydrated", "lease", n.ID, "substitutions", subs)
	return RehydrateResult{Output: res.Output, Receipt: rc, Lease: n}, nil
}

// checkSchema refuses, before the lease is claimed, an output schema whose
// digest is not the output_schema_digest the lease was granted with, and
// every schema for a lease granted without one: PLAN_MISMATCH (field
// output_schema_digest). The marked paths are the plan's, not whoever
// rehydrates.
func (v *Vault) checkSchema(op, leaseID string, schema *rehydrate.Schema) error {
	l, err := v.store.Get(leaseID)
	if err != nil {
		return v.fail(op, err)
	}
	if l.OutputSchemaDigest == "" || schema.Digest() != l.OutputSchemaDigest {
		return vaultapi.New(receipts.PlanMismatch, op, "output_schema_digest", nil)
	}
	return nil
}

// checkReceiptFields checks, before the lease is claimed, the fields of the
// request that the receipt binds, so that a malformed request never claims
// a lease. An expired cut is PLAN_MISMATCH (a plan past its expires_at
// licenses nothing).
func (v *Vault) checkReceiptFields(op string, req RehydrateRequest) error {
	if _, err := rehydrate.RetentionMax(req.Retention); err != nil {
		return invalid(op, "retention")
	}
	if alg, _, err := receipts.ParseDigest(req.LabelDigest); err != nil || alg != receipts.PrefixHMAC {
		return invalid(op, "label_digest")
	}
	if req.CutExpiry.IsZero() {
		return invalid(op, "cut_expiry")
	}
	now := v.now()
	if !req.CutExpiry.After(now) {
		return vaultapi.New(receipts.PlanMismatch, op, "cut_expiry", nil)
	}
	// The remaining fields (the revisions) are checked exactly as
	// NewReceipt will check them, on stand-in digests and identifiers.
	probe := receipts.SHA256(nil)
	_, err := rehydrate.NewReceipt(rehydrate.ReceiptInput{
		CutEvent: "check", Lease: lease.FormatID([16]byte{}),
		Result:           rehydrate.Result{ReturnDigest: probe, FinalDigest: probe},
		VerifierRevision: req.VerifierRevision, PolicyRevision: req.PolicyRevision,
		LabelDigest: req.LabelDigest, SourceExpiry: now.Add(time.Hour), CutExpiry: req.CutExpiry,
		Retention: req.Retention, Now: now, OutputSchemaDigest: probe,
	})
	if err != nil {
		return invalid(op, "revision")
	}
	return nil
}

// openEvidenceKey opens the sealed evidence key straight into the arena.
func (v *Vault) openEvidenceKey(op string, req seal.Request) (*arena.Secret, error) {
	const field = "evidence_key"
	if req.Len() != 1 || req.Category(0) != EvidenceKeyCategory {
		return nil, invalid(op, field)
	}
	if req.Recipient != v.seal.Public() {
		return nil, vaultapi.New("", op, field, ErrStaleKey)
	}
	ks, err := v.seal.Open(v.arena, req)
	if err != nil {
		if code := codeOf(err); code != "" {
			return nil, vaultapi.New(code, op, field, nil)
		}
		return nil, v.fail(op, err)
	}
	if ks.Len() != receipts.EvidenceKeySize {
		ks.Wipe()
		return nil, invalid(op, field)
	}
	return ks, nil
}

// withEvidenceKey runs fn with the evidence key held in the arena, as the
// receipts.EvidenceKey that keys final_digest. receipts.EvidenceKey copies
// the key into a heap array, which is wiped before returning (its HMAC pads
// are not).
func withEvidenceKey(key *arena.Secret, fn func(*receipts.EvidenceKey) error) error {
	return key.Reveal(func(k []byte) error {
		ek, err := receipts.NewEvidenceKey(k)
		if err != nil {
			return err
		}
		defer ek.Wipe()
		return fn(ek)
	})
}

// returnError turns a refusal of the return or the schema into an *Error
// carrying its code and wrapping the refusal (errors.As reaches its path
// and position). field is "return" or "schema".
func returnError(op, field string, err error) error {
	var r *receipts.Refusal
	if errors.As(err, &r) {
		return vaultapi.New(r.Code, op, field, r)
	}
	return nil
}

// rehydrateFail classifies an error of the validation, substitution or
// receipt step. The lease stays CLAIMED.
func (v *Vault) rehydrateFail(op string, err error) error {
	if e := returnError(op, "return", err); e != nil {
		return e
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	switch {
	case errors.Is(err, rehydrate.ErrPurgeElapsed):
		return vaultapi.New(receipts.PlanMismatch, op, "cut_expiry", nil)
	case errors.Is(err, rehydrate.ErrInvalidLease):
		return refusal(op, receipts.LeaseUnrecoverable)
	}
	return v.fail(op, err)
}

// issued is the rehydrate.Issued view of an opened map: an index from each
// issued token's category and mac to its value's position in the map
// plaintext, which stays in the arena. Tokens are public (the export
// carries them), so the index holds nothing secret but value lengths. It
// is valid only inside the map's Reveal.
//
// Every issued token was found in the disclosed export by Bind, which a
// claim requires; so Lookup's "issued" is also "disclosed".
type issued struct {
	b   []byte // the map plaintext, arena memory
	ns  string
	idx map[tokenKey]span
}

type tokenKey struct {
	cat byte
	mac [macLen]byte
}

type span struct{ off, n int }

var _ rehydrate.Issued = (*issued)(nil)

// newIssued indexes the map plaintext b of namespace ns.
func newIssued(b []byte, ns string) (*issued, error) {
	iss := &issued{b: b, ns: ns, idx: map[tokenKey]span{}}
	ok := walkMap(b, func(cat byte, mac, val []byte) bool {
		var k tokenKey
		k.cat = cat
		copy(k.mac[:], mac)
		// val is b[off:off+len(val)], so its capacity tells its offset.
		iss.idx[k] = span{off: cap(b) - cap(val), n: len(val)}
		return true
	})
	if !ok {
		return nil, refusal("rehydrate", receipts.LeaseUnrecoverable)
	}
	return iss, nil
}

// key parses an exact token of the lease's namespace. It never allocates.
func (m *issued) key(tok []byte) (tokenKey, bool) {
	var k tokenKey
	const head = len(tokenPrefix) + 10 + 1 // "pcv:" namespace ":"
	if len(tok) < head+1+1+macLen || string(tok[:len(tokenPrefix)]) != tokenPrefix ||
		string(tok[len(tokenPrefix):head-1]) != m.ns || tok[head-1] != ':' || tok[len(tok)-macLen-1] != ':' {
		return k, false
	}
	cat := tok[head : len(tok)-macLen-1]
	for i, c := range Categories {
		if string(cat) == c {
			k.cat = byte(i + 1)
			copy(k.mac[:], tok[len(tok)-macLen:])
			return k, true
		}
	}
	return k, false
}

// Lookup reports the category of an exact token this lease issued.
func (m *issued) Lookup(tok []byte) (string, bool) {
	k, ok := m.key(tok)
	if !ok {
		return "", false
	}
	if _, ok := m.idx[k]; !ok {
		return "", false
	}
	return Categories[k.cat-1], true
}

// AppendValue appends the value of an issued token, read from the arena.
func (m *issued) AppendValue(dst, tok []byte) ([]byte, error) {
	k, ok := m.key(tok)
	if !ok {
		return dst, refusal("rehydrate", receipts.TokenNotIssued)
	}
	s, ok := m.idx[k]
	if !ok {
		return dst, refusal("rehydrate", receipts.TokenNotIssued)
	}
	return append(dst, m.b[s.off:s.off+s.n]...), nil
}
