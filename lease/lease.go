package lease

import (
	"encoding/base32"
	"math"
	"time"

	"github.com/privacycut/privacycut/receipts"
)

// Schema is the schema name every lease carries.
const Schema = "PseudonymMapLease@1"

// Limits on the public strings a lease binds. They bound what the vault
// stores per lease; a longer value is an invalid argument.
const (
	// MaxIDLen bounds run ids, stations, principals and cut event ids, which
	// are printable ASCII without spaces.
	MaxIDLen = 256
	// MaxTextLen bounds the target URL and the purpose, which are UTF-8
	// without control characters.
	MaxTextLen = 2048
)

// ClaimTuple is what a claim compares, as a whole and byte for byte.
type ClaimTuple struct {
	Principal    string `json:"principal"`     // authorised principal, e.g. "uid:1000"
	Run          string `json:"run"`           // run id; must equal the lease's
	Attempt      uint32 `json:"attempt"`       // attempt; must equal the lease's
	Station      string `json:"station"`       // station; must equal the lease's
	ReturnDigest string `json:"return_digest"` // "sha256:<hex>" of the quarantined return
}

// Lease is PseudonymMapLease@1: the public record of one reversible cut's
// pseudonym map. It holds no map material, no key and no raw value; every
// field is public metadata. Its methods are pure: they return a new Lease and
// never modify the receiver.
//
// The claim tuple is stored in the field ClaimedBy (JSON "claim"): a Go field
// named Claim would collide with the method.
type Lease struct {
	Schema          string      `json:"schema"`           // always Schema
	ID              string      `json:"id"`               // "pcl:" + 26 lower-case base32 chars (FormatID)
	CutEvent        string      `json:"cut_event"`        // seal event id, "" until Bind
	Run             string      `json:"run"`              // run id
	Attempt         uint32      `json:"attempt"`          // attempt number within the run
	Target          string      `json:"target"`           // exact target URL of the plan
	Purpose         string      `json:"purpose"`          // purpose of the plan
	Namespace       string      `json:"namespace"`        // token namespace: 10 lower-case base32 chars
	SourceDigest    string      `json:"source_digest"`    // "hmac-sha256:<hex>" of the source projection
	CandidateDigest string      `json:"candidate_digest"` // "hmac-sha256:<hex>", "" until Bind
	ExportDigest    string      `json:"export_digest"`    // "sha256:<hex>" of the export, "" until Bind
	KeyEpoch        uint64      `json:"key_epoch"`        // key epoch at grant (bound into the map's AAD)
	Station         string      `json:"station"`          // authorised station
	Principal       string      `json:"principal"`        // authorised principal
	CreatedAt       time.Time   `json:"created_at"`       // grant time, UTC
	Deadline        time.Time   `json:"deadline"`         // absolute deadline, UTC; never extended
	State           State       `json:"state"`            // current state
	ClaimedBy       *ClaimTuple `json:"claim,omitempty"`  // the winning claim, kept once set
	Seq             uint64      `json:"seq"`              // +1 on every change of the record
	UpdatedAt       time.Time   `json:"updated_at"`       // time of the last change, UTC
	KeyDestroyed    bool        `json:"key_destroyed"`    // the data key has been destroyed
	// OutputSchemaDigest is the plan's output_schema_digest, "sha256:<hex>",
	// bound at grant: the only output schema a rehydration of this lease
	// may use. "" (a lease granted without one) licenses no schema.
	OutputSchemaDigest string `json:"output_schema_digest,omitempty"`
}

// Params are the fields of a new lease, all public. The vault draws ID and
// Namespace at random; the rest comes from the plan and the request.
type Params struct {
	ID           string
	Run          string
	Attempt      uint32
	Target       string
	Purpose      string
	Namespace    string
	SourceDigest string
	// OutputSchemaDigest is the plan's output_schema_digest ("" for none).
	OutputSchemaDigest string
	KeyEpoch           uint64
	Station            string
	Principal          string
	// Lifetime is the requested lifetime (> 0); New caps it at maxLifetime.
	Lifetime time.Duration
	// Need is remote_deadline_s + return_window_s of the plan (see NeedFor):
	// the time the lease must at least live.
	Need time.Duration
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// FormatID returns the lease reference for 128 random bits: "pcl:" and 26
// characters of unpadded lower-case base32. The caller draws the bits from a
// cryptographic source.
func FormatID(b [16]byte) string { return "pcl:" + idEncoding.EncodeToString(b[:]) }

// NeedFor converts a plan's remote_deadline_s and return_window_s into the
// Need of Params. A sum that no time.Duration can hold (about 292 years) can
// never be covered and is refused with LEASE_DURABILITY_INSUFFICIENT.
func NeedFor(remoteDeadlineS, returnWindowS uint64) (time.Duration, error) {
	const maxS = uint64(math.MaxInt64 / int64(time.Second))
	if remoteDeadlineS > maxS || returnWindowS > maxS-remoteDeadlineS {
		return 0, refuse("need", receipts.LeaseDurabilityInsufficient, StateUnknown)
	}
	return time.Duration(remoteDeadlineS+returnWindowS) * time.Second, nil
}

// New grants an ACTIVE, unbound lease at now. Its deadline is now plus
// p.Lifetime capped at maxLifetime, computed once and never changed. If that
// deadline cannot cover p.Need, New refuses with
// LEASE_DURABILITY_INSUFFICIENT. Malformed fields are ErrInvalid.
func New(p Params, now time.Time, maxLifetime time.Duration) (Lease, error) {
	const op = "new"
	if !validTime(now) {
		return Lease{}, invalid(op, "now")
	}
	if maxLifetime <= 0 {
		return Lease{}, invalid(op, "max_lifetime")
	}
	if p.Lifetime <= 0 {
		return Lease{}, invalid(op, "lifetime")
	}
	if p.Need < 0 {
		return Lease{}, invalid(op, "need")
	}
	l := Lease{
		Schema:             Schema,
		ID:                 p.ID,
		Run:                p.Run,
		Attempt:            p.Attempt,
		Target:             p.Target,
		Purpose:            p.Purpose,
		Namespace:          p.Namespace,
		SourceDigest:       p.SourceDigest,
		OutputSchemaDigest: p.OutputSchemaDigest,
		KeyEpoch:           p.KeyEpoch,
		Station:            p.Station,
		Principal:          p.Principal,
		State:              Active,
	}
	if f := l.badGrantField(); f != "" {
		return Lease{}, invalid(op, f)
	}
	life := min(p.Lifetime, maxLifetime)
	if life < p.Need {
		return Lease{}, refuse(op, receipts.LeaseDurabilityInsufficient, StateUnknown)
	}
	l.CreatedAt = norm(now)
	l.Deadline = l.CreatedAt.Add(life)
	l.UpdatedAt = l.CreatedAt
	if !validTime(l.Deadline) {
		return Lease{}, invalid(op, "lifetime")
	}
	return l, nil
}

// Bound reports whether Bind has bound the lease to its sealed cut.
func (l Lease) Bound() bool { return l.ExportDigest != "" }

// Live reports whether the lease is ACTIVE or CLAIMED.
func (l Lease) Live() bool { return l.State == Active || l.State == Claimed }

// NeedsKeyDestruction reports whether the lease is terminal and its data key
// is not yet recorded as destroyed: the vault must destroy the key and then
// record it with DestroyKey.
func (l Lease) NeedsKeyDestruction() bool { return l.State.Terminal() && !l.KeyDestroyed }

// Every operation below follows the same rules:
//
//   - now must be a valid time, else ErrInvalid and l is returned unchanged;
//   - l must pass Check, else LEASE_UNRECOVERABLE and l is returned unchanged;
//   - the effective time is the later of now and l.UpdatedAt, so a clock set
//     back never moves a lease's time backwards;
//   - on a live lease at or past its deadline, the operation is not performed:
//     the lease is returned EXPIRED with LEASE_NOT_ACTIVE, and the caller must
//     persist it (its Seq has changed);
//   - on any other error the returned lease is l unchanged.
//
// A caller persists the returned lease whenever its Seq differs from l.Seq.

// Bind binds an ACTIVE lease to its sealed cut: the seal's event id and the
// candidate and export digests. It binds once; binding again with the same
// three values is a no-op, with different ones LEASE_NOT_ACTIVE. A terminal
// lease is LEASE_NOT_ACTIVE.
func (l Lease) Bind(cutEvent, candidateDigest, exportDigest string, now time.Time) (Lease, error) {
	const op = "bind"
	now, err := l.begin(op, now)
	if err != nil {
		return l, err
	}
	if x, err := l.expiryWins(op, now); err != nil {
		return x, err
	}
	if l.State.Terminal() {
		return l, refuse(op, receipts.LeaseNotActive, l.State)
	}
	switch {
	case !ValidID(cutEvent):
		return l, invalid(op, "cut_event")
	case !validDigest(candidateDigest, hmacPrefix):
		return l, invalid(op, "candidate_digest")
	case !validDigest(exportDigest, shaPrefix):
		return l, invalid(op, "export_digest")
	}
	if l.Bound() {
		if l.CutEvent == cutEvent && l.CandidateDigest == candidateDigest && l.ExportDigest == exportDigest {
			return l, nil
		}
		return l, refuse(op, receipts.LeaseNotActive, l.State)
	}
	n := l.changed(now)
	n.CutEvent, n.CandidateDigest, n.ExportDigest = cutEvent, candidateDigest, exportDigest
	return n, nil
}

// Claim is the compare-and-set of docs/FORMATS.md#lease. An ACTIVE, bound lease becomes
// CLAIMED by t (OutcomeClaimed). A CLAIMED lease claimed again with the
// identical tuple is returned unchanged, Seq included (OutcomeAlreadyClaimed).
// Any other tuple is LEASE_CLAIM_CONFLICT, and so is a tuple whose principal,
// run, attempt or station differ from the lease's. An unbound or terminal
// lease is LEASE_NOT_ACTIVE.
func (l Lease) Claim(t ClaimTuple, now time.Time) (Lease, Outcome, error) {
	const op = "claim"
	now, err := l.begin(op, now)
	if err != nil {
		return l, OutcomeNone, err
	}
	if x, err := l.expiryWins(op, now); err != nil {
		return x, OutcomeNone, err
	}
	if l.State.Terminal() || !l.Bound() {
		return l, OutcomeNone, refuse(op, receipts.LeaseNotActive, l.State)
	}
	if f := t.badField(); f != "" {
		return l, OutcomeNone, invalid(op, f)
	}
	if !l.authorises(t) {
		return l, OutcomeNone, refuse(op, receipts.LeaseClaimConflict, l.State)
	}
	if l.State == Claimed {
		if *l.ClaimedBy == t {
			return l, OutcomeAlreadyClaimed, nil
		}
		return l, OutcomeNone, refuse(op, receipts.LeaseClaimConflict, l.State)
	}
	n := l.changed(now)
	n.State = Claimed
	n.ClaimedBy = &t
	return n, OutcomeClaimed, nil
}

// Consume moves a lease CLAIMED by exactly t to CONSUMED. It is single-use:
// consuming again is LEASE_NOT_ACTIVE, like every operation on a terminal
// lease. An ACTIVE lease, or a claim by another tuple, is
// LEASE_CLAIM_CONFLICT.
func (l Lease) Consume(t ClaimTuple, now time.Time) (Lease, error) {
	const op = "consume"
	now, err := l.begin(op, now)
	if err != nil {
		return l, err
	}
	if x, err := l.expiryWins(op, now); err != nil {
		return x, err
	}
	if l.State.Terminal() {
		return l, refuse(op, receipts.LeaseNotActive, l.State)
	}
	if f := t.badField(); f != "" {
		return l, invalid(op, f)
	}
	if l.State != Claimed || *l.ClaimedBy != t {
		return l, refuse(op, receipts.LeaseClaimConflict, l.State)
	}
	n := l.changed(now)
	n.State = Consumed
	return n, nil
}

// Revoke moves an ACTIVE or CLAIMED lease to REVOKED. A terminal lease is
// LEASE_NOT_ACTIVE.
func (l Lease) Revoke(now time.Time) (Lease, error) {
	const op = "revoke"
	now, err := l.begin(op, now)
	if err != nil {
		return l, err
	}
	if x, err := l.expiryWins(op, now); err != nil {
		return x, err
	}
	if l.State.Terminal() {
		return l, refuse(op, receipts.LeaseNotActive, l.State)
	}
	n := l.changed(now)
	n.State = Revoked
	return n, nil
}

// Expire moves an ACTIVE or CLAIMED lease to EXPIRED once the effective time
// has reached the deadline. Before it, the move is ErrIllegal. A terminal
// lease is LEASE_NOT_ACTIVE.
func (l Lease) Expire(now time.Time) (Lease, error) {
	const op = "expire"
	now, err := l.begin(op, now)
	if err != nil {
		return l, err
	}
	if l.State.Terminal() {
		return l, refuse(op, receipts.LeaseNotActive, l.State)
	}
	if now.Before(l.Deadline) {
		return l, &Error{Op: op, State: l.State, Field: "deadline", Err: ErrIllegal}
	}
	return l.expired(now), nil
}

// Apply dispatches ev to Claim, Consume, Revoke or Expire; t is used by Claim
// and Consume only. A value that is not an event is ErrInvalid and performs
// nothing, not even the expiry of a lease past its deadline.
func (l Lease) Apply(ev Event, t ClaimTuple, now time.Time) (Lease, error) {
	switch ev {
	case EventClaim:
		n, _, err := l.Claim(t, now)
		return n, err
	case EventConsume:
		return l.Consume(t, now)
	case EventRevoke:
		return l.Revoke(now)
	case EventExpire:
		return l.Expire(now)
	}
	return l, invalid("apply", "event")
}

// DestroyKey records that the data key of a terminal lease has been
// destroyed. Recording it again is a no-op. On a live lease it is ErrIllegal:
// the key must outlive every live lease.
func (l Lease) DestroyKey(now time.Time) (Lease, error) {
	const op = "destroy-key"
	now, err := l.begin(op, now)
	if err != nil {
		return l, err
	}
	if x, err := l.expiryWins(op, now); err != nil {
		return x, err
	}
	if !l.State.Terminal() {
		return l, &Error{Op: op, State: l.State, Err: ErrIllegal}
	}
	if l.KeyDestroyed {
		return l, nil
	}
	n := l.changed(now)
	n.KeyDestroyed = true
	return n, nil
}

// Recover is boot recovery of a lease read back from storage: a live lease
// whose deadline has passed at now (or at its own last update, whichever is
// later) becomes EXPIRED, and changed reports it. The deadline is never
// touched. A lease that fails Check is LEASE_UNRECOVERABLE. After Recover the
// caller completes any pending key destruction (NeedsKeyDestruction).
func Recover(l Lease, now time.Time) (_ Lease, changed bool, _ error) {
	now, err := l.begin("recover", now)
	if err != nil {
		return l, false, err
	}
	if l.Live() && !now.Before(l.Deadline) {
		return l.expired(now), true, nil
	}
	return l, false, nil
}

// begin validates now and l, and returns the effective time.
func (l Lease) begin(op string, now time.Time) (time.Time, error) {
	if !validTime(now) {
		return time.Time{}, invalid(op, "now")
	}
	if err := l.check(op); err != nil {
		return time.Time{}, err
	}
	now = norm(now)
	if now.Before(l.UpdatedAt) {
		now = l.UpdatedAt
	}
	return now, nil
}

// expiryWins expires a live lease at or past its deadline.
func (l Lease) expiryWins(op string, now time.Time) (Lease, error) {
	if l.Live() && !now.Before(l.Deadline) {
		return l.expired(now), refuse(op, receipts.LeaseNotActive, Expired)
	}
	return l, nil
}

func (l Lease) expired(now time.Time) Lease {
	n := l.changed(now)
	n.State = Expired
	return n
}

// changed returns a copy of l with the next Seq and the time of change. The
// claim tuple is copied, so no two leases share one.
func (l Lease) changed(now time.Time) Lease {
	n := l.clone()
	n.Seq++
	n.UpdatedAt = now
	return n
}

func (l Lease) clone() Lease {
	if l.ClaimedBy != nil {
		t := *l.ClaimedBy
		l.ClaimedBy = &t
	}
	return l
}

// authorises reports whether t names the lease's principal, run, attempt and
// station.
func (l Lease) authorises(t ClaimTuple) bool {
	return t.Principal == l.Principal && t.Run == l.Run && t.Attempt == l.Attempt && t.Station == l.Station
}

// badField returns the JSON name of the first malformed member of t, or "".
func (t ClaimTuple) badField() string {
	switch {
	case !ValidID(t.Principal):
		return "claim.principal"
	case !ValidID(t.Run):
		return "claim.run"
	case !ValidID(t.Station):
		return "claim.station"
	case !validDigest(t.ReturnDigest, shaPrefix):
		return "claim.return_digest"
	}
	return ""
}

// norm drops the monotonic reading and the location, so that a lease's times
// survive a JSON round trip unchanged.
func norm(t time.Time) time.Time { return t.Round(0).UTC() }
