package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/privacycut/privacycut/canon"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/rehydrate"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"github.com/privacycut/privacycut/wire"
)

// Rehydrated is an answer rehydrated inside the vault: the result (it holds
// restored owner values — the one output that may), its receipt, and the
// lease after it.
type Rehydrated struct {
	Result  json.RawMessage             `json:"result"`
	Receipt receipts.RehydrationReceipt `json:"receipt"`
	Lease   string                      `json:"lease"`
	State   string                      `json:"state"`
}

// ErrNoVault: a rehydration was asked of a pipeline without a vault.
var ErrNoVault = errors.New("pipeline: no vault")

// CheckSchema parses an output schema and checks that it is the one the
// plan binds (output_schema_digest): a schema of another digest, or any
// schema for a plan that binds none, is refused PLAN_MISMATCH (kind
// "schema"). A document outside the schema subset is refused with its
// position.
func (p *Pipeline) CheckSchema(planDigest string, schema []byte) (*rehydrate.Schema, error) {
	s, err := rehydrate.ParseSchema(schema)
	if err != nil {
		var r *receipts.Refusal
		if errors.As(err, &r) {
			return nil, p.refuse([]receipts.Refusal{*r}, "", r.Reason, err)
		}
		return nil, err
	}
	if planDigest == "" || s.Digest() != planDigest {
		return nil, p.refuse([]receipts.Refusal{{Code: receipts.PlanMismatch, Part: -1, Kind: "schema"}},
			"output_schema_digest", "the schema is not the plan's output schema", nil)
	}
	return s, nil
}

// checkPlanSchema checks the schema a cut is given against its plan: for a
// reversible plan it must be of the rehydration subset (CheckSchema); for
// an irreversible plan of a provider profile it only renders the request,
// and must be a schema the wire profile can send (wire.ParseSchema). Either
// way its digest is the plan's output_schema_digest.
func (p *Pipeline) checkPlanSchema(plan *receipts.Plan, schema []byte) error {
	if plan.Mode == receipts.ModeReversible {
		_, err := p.CheckSchema(plan.OutputSchemaDigest, schema)
		return err
	}
	s, err := wire.ParseSchema(schema)
	if err != nil {
		return p.wireRefusal(err)
	}
	if plan.OutputSchemaDigest == "" || s.Digest() != plan.OutputSchemaDigest {
		return p.refuse([]receipts.Refusal{{Code: receipts.PlanMismatch, Part: -1, Kind: "schema"}},
			"output_schema_digest", "the schema is not the plan's output schema", nil)
	}
	return nil
}

// Rehydrate asks the vault to rehydrate ret, the answer to the reversible
// cut ref names, with schema, which must be the plan's. The claim is made
// for (run, attempt, station, sha256(ret)); the evidence key travels sealed
// to the vault so that the receipt's final digest is keyed. A refusal is a
// *RefusedError naming the JSON path and position of the refused value,
// never the value. The vault consumes the lease and destroys its key before
// it replies; the result is registered as local-only with the pipeline's
// gate.
func (p *Pipeline) Rehydrate(ctx context.Context, ref LeaseRef, schema, ret []byte) (*Rehydrated, error) {
	canonical, err := canon.Canonicalize(schema)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	// Fails closed: a reference without the plan's schema digest licenses
	// no schema at all.
	if ref.OutputSchemaDigest == "" || receipts.SHA256(canonical) != ref.OutputSchemaDigest {
		return nil, p.refuse([]receipts.Refusal{{Code: receipts.PlanMismatch, Part: -1, Kind: "schema"}},
			"output_schema_digest", "the schema is not the plan's output schema", nil)
	}
	if p.opt.Vault == nil {
		return nil, ErrNoVault
	}
	expiry, err := time.Parse(time.RFC3339Nano, ref.ExpiresAt)
	if err != nil {
		return nil, errors.New("lease reference: expires_at is not RFC 3339")
	}
	cl := p.opt.Vault
	req := vaultapi.RehydrateRequest{
		Lease:            ref.Lease,
		Claim:            vaultapi.ClaimRequest{Run: ref.Run, Attempt: ref.Attempt, Station: ref.Station, ReturnDigest: receipts.SHA256(ret)},
		Schema:           schema,
		Return:           ret,
		CutExpiry:        expiry,
		Retention:        ref.Retention,
		PolicyRevision:   ref.PolicyRevision,
		VerifierRevision: ref.VerifierRevision,
		LabelDigest:      ref.LabelDigest,
	}
	// The evidence key is sealed to the vault's key as the client last
	// saw it (the grant's, in a gateway).
	var res vaultapi.RehydrateResult
	err = retryStale(func() error {
		key, err := cl.SealKey(ctx)
		if err != nil {
			return p.vaultRefusal(err)
		}
		if req.EvidenceKey, err = vaultapi.SealEvidenceKey(key, p.opt.EvidenceKey); err != nil {
			return p.vaultRefusal(err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		// The rehydration is not canceled halfway: the vault consumes the
		// lease and destroys its key before it replies, so a reply
		// abandoned after that would lose the only rehydrated answer. (The
		// vault itself stops before consuming when nobody waits for the
		// result.)
		res, err = cl.Rehydrate(context.WithoutCancel(ctx), req)
		return p.rehydrationRefusal(err)
	})
	if err != nil {
		return nil, err
	}
	// The rehydrated result keeps the source's label and stays local.
	// It is kept from the gate until its purge time, when it must be gone.
	purge, perr := time.Parse(time.RFC3339Nano, res.Receipt.PurgeAt)
	if perr != nil {
		purge = time.Time{}
	}
	p.auth.DenyLocalUntil(receipts.SHA256(res.Output), purge)
	return &Rehydrated{Result: json.RawMessage(res.Output), Receipt: res.Receipt, Lease: res.Lease.ID,
		State: res.Lease.State.String()}, nil
}

// rehydrationRefusal is a refused rehydration: code, JSON path and the
// position of the refused value in the return (never the value or token).
func (p *Pipeline) rehydrationRefusal(err error) error {
	code := vaultapi.CodeOf(err)
	if code == "" {
		return err
	}
	r := receipts.Refusal{Code: code, Part: -1, Kind: "return"}
	var rr *receipts.Refusal
	if errors.As(err, &rr) {
		r = *rr
	}
	return p.refuse([]receipts.Refusal{r}, "", r.Reason, err)
}
