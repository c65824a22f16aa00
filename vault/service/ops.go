package service

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/crash"
	"github.com/privacycut/privacycut/vault/keys"
	"github.com/privacycut/privacycut/vault/seal"
	"github.com/privacycut/privacycut/vault/store"
	"github.com/privacycut/privacycut/vault/vaultapi"
	"golang.org/x/crypto/chacha20poly1305"
)

// The request and result types of the vault's calls are package
// vaultapi's; the service names them too.
type (
	CreateRequest = vaultapi.CreateRequest
	CreateResult  = vaultapi.CreateResult
	ClaimRequest  = vaultapi.ClaimRequest
	ClaimResult   = vaultapi.ClaimResult
	KeyState      = vaultapi.KeyState
	Info          = vaultapi.Info
)

// Key states.
const (
	KeyPresent   = vaultapi.KeyPresent
	KeyMissing   = vaultapi.KeyMissing
	KeyDestroyed = vaultapi.KeyDestroyed
)

func (v *Vault) info(l lease.Lease) Info {
	has := v.keys.Has(l.ID)
	switch {
	case l.KeyDestroyed && !has:
		return Info{Lease: l, Key: KeyDestroyed}
	case has:
		return Info{Lease: l, Key: KeyPresent}
	}
	return Info{Lease: l, Key: KeyMissing}
}

// CreateLease grants a lease: it opens the sealed values straight into the
// arena, issues one token per distinct (category, value) in a fresh
// namespace, builds the map in the arena, seals it under a new data key,
// wraps the key under the current epoch (durably), then commits the lease
// record and the ciphertext. Tokens are returned in request order.
func (v *Vault) CreateLease(ctx context.Context, principal string, req CreateRequest) (CreateResult, error) {
	const op = "create"
	if err := v.gate(op); err != nil {
		return CreateResult{}, err
	}
	if err := v.spaceGate(op); err != nil {
		return CreateResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return CreateResult{}, vaultapi.Fail(op, err)
	}
	station := req.Station
	if station == "" {
		station = v.opt.Station
	}
	if station != v.opt.Station {
		return CreateResult{}, vaultapi.New(receipts.PlanMismatch, op, "station", nil)
	}
	need, err := lease.NeedFor(req.RemoteDeadlineS, req.ReturnWindowS)
	if err != nil {
		return CreateResult{}, v.fail(op, err)
	}
	if req.Values.Len() > seal.MaxValues {
		return CreateResult{}, vaultapi.New(receipts.LimitExceeded, op, "values", nil)
	}
	for _, c := range req.Values.Categories {
		if _, code := categoryIndex(c); code != "" {
			return CreateResult{}, vaultapi.New(code, op, "values", nil)
		}
	}
	if req.Values.Recipient != v.seal.Public() {
		return CreateResult{}, vaultapi.New("", op, "recipient", ErrStaleKey)
	}
	life := req.Lifetime
	if life <= 0 {
		life = v.opt.MaxLease
	}
	unreserve, err := v.reserveLease(op, principal)
	if err != nil {
		return CreateResult{}, err
	}
	committed := false
	defer func() {
		if !committed {
			unreserve()
		}
	}()
	var idb [16]byte
	rand.Read(idb[:])
	nsb := make([]byte, 7)
	rand.Read(nsb)
	l, err := lease.New(lease.Params{
		ID: lease.FormatID(idb), Run: req.Run, Attempt: req.Attempt, Target: req.Target,
		Purpose: req.Purpose, Namespace: b32.EncodeToString(nsb)[:10], SourceDigest: req.SourceDigest,
		OutputSchemaDigest: req.OutputSchemaDigest,
		KeyEpoch:           v.keys.Epoch(), Station: station, Principal: principal,
		Lifetime: life, Need: need,
	}, v.now(), v.opt.MaxLease)
	if err != nil {
		return CreateResult{}, v.fail(op, err)
	}

	values, err := v.seal.Open(v.arena, req.Values) // nil for no values
	if err != nil {
		return CreateResult{}, v.fail(op, err)
	}
	defer values.Wipe()
	faultValues(v.log, values) // a no-op except in a faultinject build (fault_on.go)
	tokens, m, err := v.issue(l.Namespace, &req.Values, values)
	if err != nil {
		return CreateResult{}, v.fail(op, err)
	}
	defer m.Wipe()
	crash.At(crash.GrantMapBuilt)

	dek, err := v.keys.NewKey()
	if err != nil {
		return CreateResult{}, v.fail(op, err)
	}
	defer dek.Wipe()
	sealed, err := sealMap(dek, m, &l)
	if err != nil {
		return CreateResult{}, v.fail(op, err)
	}
	if err := ctx.Err(); err != nil {
		// Nobody waits for the grant (the caller went away): a lease whose
		// id never reaches the caller can be neither bound nor revoked by
		// it, so none is committed.
		return CreateResult{}, vaultapi.Fail(op, err)
	}
	if err := v.keys.Wrap(l.ID, dek); err != nil {
		return CreateResult{}, v.fail(op, err)
	}
	crash.At(crash.GrantWrapped)
	// Tracked before the commit, so that a revocation racing the reply
	// (by a principal that listed the lease) finds it and releases it.
	v.commitLease(l.ID, principal, l.Deadline)
	committed = true
	if err := v.store.Create(l, sealed); err != nil {
		v.forget(l.ID)
		if derr := v.keys.Destroy(l.ID); derr != nil {
			v.log.Error("vault: cannot destroy the key of a failed grant", "lease", l.ID)
		}
		return CreateResult{}, v.fail(op, err)
	}
	crash.At(crash.GrantCommitted)
	return CreateResult{Lease: l, Tokens: tokens}, nil
}

// issue computes the tokens of the opened values under a fresh namespace
// key (random, in the arena, wiped on return) and builds the map of the
// distinct tokens in the arena.
func (v *Vault) issue(ns string, req *seal.Request, values *arena.Secret) ([]string, *arena.Secret, error) {
	nskey, err := v.keys.NewKey()
	if err != nil {
		return nil, nil, err
	}
	defer nskey.Wipe()
	h, err := newMAC(nskey)
	if err != nil {
		return nil, nil, err
	}
	defer scrub(h)
	// tokenMAC's frames (the message, the hash's block buffer) sit at the
	// same depths on every call, so one scrub after the last token clears
	// what any of them left.
	defer scrubStack()
	n := req.Len()
	msgMax := 0
	for i := range n {
		msgMax = max(msgMax, msgLen(req.Category(i), int(req.Lengths[i])))
	}
	// One arena scratch buffer holds each message in turn; it is wiped
	// (zeroed and freed) once the lease's tokens are issued.
	scratch, err := v.arena.Alloc(max(msgMax, 1))
	if err != nil {
		return nil, nil, err
	}
	defer scratch.Wipe()
	tokens := make([]string, n)
	seen := make(map[string]bool, n)
	entries := make([]entry, 0, n)
	if n > 0 {
		err = scratch.Fill(func(msg []byte) error {
			return values.Reveal(func(all []byte) error {
				off := 0
				for i := range n {
					cat, vlen := req.Category(i), int(req.Lengths[i])
					idx, _ := categoryIndex(cat)
					mac, err := tokenMAC(msg, h, cat, all[off:off+vlen])
					if err != nil {
						return err
					}
					tokens[i] = Token(ns, cat, mac)
					if !seen[tokens[i]] {
						seen[tokens[i]] = true
						entries = append(entries, entry{cat: idx, mac: mac, off: off, n: vlen})
					}
					off += vlen
				}
				return nil
			})
		})
		if err != nil {
			return nil, nil, err
		}
	}
	m, err := buildMap(v.arena, entries, values)
	if err != nil {
		return nil, nil, err
	}
	return tokens, m, nil
}

// sealMap encrypts the map plaintext under the data key with
// XChaCha20-Poly1305: a 24-byte random nonce followed by the ciphertext.
func sealMap(dek, m *arena.Secret, l *lease.Lease) ([]byte, error) {
	var out []byte
	err := dek.Reveal(func(k []byte) error {
		aead, err := chacha20poly1305.NewX(k)
		if err != nil {
			return err
		}
		return m.Reveal(func(p []byte) error {
			out = make([]byte, aead.NonceSize(), aead.NonceSize()+len(p)+aead.Overhead())
			rand.Read(out)
			out = aead.Seal(out, out, p, mapAAD(l))
			return nil
		})
	})
	return out, err
}

// decryptMap opens a sealed map under dek straight into the arena and
// checks its structure. Any failure is LEASE_UNRECOVERABLE.
func decryptMap(a *arena.Arena, dek *arena.Secret, l lease.Lease, sealed []byte) (*Map, error) {
	const op = "open-map"
	if len(sealed) <= chacha20poly1305.NonceSizeX+chacha20poly1305.Overhead {
		return nil, refusal(op, receipts.LeaseUnrecoverable)
	}
	var s *arena.Secret
	err := dek.Reveal(func(k []byte) error {
		aead, err := chacha20poly1305.NewX(k)
		if err != nil {
			return err
		}
		s, err = a.Open(aead, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], mapAAD(&l))
		return err
	})
	if errors.Is(err, arena.ErrAuth) {
		return nil, refusal(op, receipts.LeaseUnrecoverable)
	}
	if err != nil {
		return nil, err
	}
	n := 0
	ok := false
	_ = s.Reveal(func(b []byte) error {
		ok = walkMap(b, func(byte, []byte, []byte) bool { n++; return true })
		return nil
	})
	if !ok {
		s.Wipe()
		return nil, refusal(op, receipts.LeaseUnrecoverable)
	}
	return &Map{s: s, ns: l.Namespace, n: n}, nil
}

// openMap decrypts a live lease's map into the arena. A missing map or key,
// or one that fails authentication, is LEASE_UNRECOVERABLE; if the lease
// became terminal meanwhile, LEASE_NOT_ACTIVE.
func (v *Vault) openMap(op string, l lease.Lease) (*Map, error) {
	notActive := func(err error) error {
		if cur, gerr := v.store.Get(l.ID); gerr == nil && !cur.Live() {
			return refusal(op, receipts.LeaseNotActive)
		}
		return err
	}
	sealed, err := v.store.Map(l.ID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, notActive(refusal(op, receipts.LeaseUnrecoverable))
	}
	if err != nil {
		return nil, v.fail(op, err)
	}
	dek, err := v.keys.Unwrap(l.ID)
	if err != nil {
		if errors.Is(err, keys.ErrNoKey) || errors.Is(err, keys.ErrCorrupt) {
			return nil, notActive(refusal(op, receipts.LeaseUnrecoverable))
		}
		return nil, v.fail(op, err)
	}
	defer dek.Wipe()
	m, err := decryptMap(v.arena, dek, l, sealed)
	if err != nil {
		return nil, v.fail(op, err)
	}
	return m, nil
}

// liveLease reads a lease for an operation that needs it live. A lease
// past its deadline is expired (and its key destroyed) on the spot.
func (v *Vault) liveLease(op, id string) (lease.Lease, error) {
	l, err := v.store.Get(id)
	if err != nil {
		return l, v.fail(op, err)
	}
	if !l.Live() {
		return l, refusal(op, receipts.LeaseNotActive)
	}
	now := v.now()
	if !now.Before(l.Deadline) {
		l, err = v.store.Update(id, destroying(now, func(cur lease.Lease) (lease.Lease, error) {
			if !cur.Live() {
				return cur, nil
			}
			return cur.Expire(now)
		}))
		if err == nil && v.mustDestroy(l) {
			_, _ = v.finishTerminal(l)
		}
		return l, refusal(op, receipts.LeaseNotActive)
	}
	return l, nil
}

// WithMap decrypts a live lease's map into the arena, calls fn with it and
// wipes it when fn returns. It is a reversible request: refused with
// VAULT_PROFILE_NOT_PROVEN unless the profile is accepted.
func (v *Vault) WithMap(ctx context.Context, leaseID string, fn func(m *Map) error) error {
	const op = "with-map"
	if err := v.gate(op); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return vaultapi.Fail(op, err)
	}
	l, err := v.liveLease(op, leaseID)
	if err != nil {
		return err
	}
	m, err := v.openMap(op, l)
	if err != nil {
		return err
	}
	defer m.s.Wipe()
	return fn(m)
}

// Bind binds a granted lease to its sealed cut after checking that
// sha256(export) is exportDigest and that the export carries exactly this
// lease's issuance (checkExport): every owner slot holds a token the lease
// issued, of the slot's category; the distinct tokens first appear in
// issuance order; every issued token appears. An export the reader cannot
// read is MALFORMED_RECORD, a token that does not fit PLAN_MISMATCH, both
// positioned (part, line, column, length) with a fixed reason. Only the
// lease's principal may bind it.
func (v *Vault) Bind(ctx context.Context, principal, leaseID, cutEvent, candidateDigest, exportDigest string, export []byte) error {
	const op = "bind"
	if err := v.gate(op); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return vaultapi.Fail(op, err)
	}
	if receipts.SHA256(export) != exportDigest {
		return invalid(op, "export_digest")
	}
	l, err := v.liveLease(op, leaseID)
	if err != nil {
		return err
	}
	if l.Principal != principal {
		return vaultapi.Fail(op, ErrForbidden)
	}
	m, err := v.openMap(op, l)
	if err != nil {
		return err
	}
	tokens, err := m.Tokens()
	m.s.Wipe()
	if err != nil {
		return v.fail(op, err)
	}
	if err := checkExport(export, l.Namespace, tokens); err != nil {
		return err
	}
	now := v.now()
	n, err := v.store.Update(leaseID, destroying(now, func(cur lease.Lease) (lease.Lease, error) {
		return cur.Bind(cutEvent, candidateDigest, exportDigest, now)
	}))
	if n.Seq != l.Seq && n.Bound() && err == nil {
		crash.At(crash.BindCommitted)
	}
	return v.settle(op, n, err)
}

// destroying wraps a transition for store.Update so that a move to a
// terminal state records the destruction of the lease's data key in the
// same commit (lease.DestroyKey). The caller then destroys the wrapped key
// (finishTerminal) before it replies; a crash in between leaves a terminal
// lease recorded as destroyed whose wrap still exists, which boot recovery
// destroys, as it does for every terminal lease that still has a wrap.
// One commit per terminal move instead of two: the move and the record.
func destroying(now time.Time, fn func(lease.Lease) (lease.Lease, error)) func(lease.Lease) (lease.Lease, error) {
	return func(cur lease.Lease) (lease.Lease, error) {
		next, err := fn(cur)
		if next.Seq != cur.Seq && next.NeedsKeyDestruction() {
			if d, derr := next.DestroyKey(now); derr == nil {
				next = d
			}
		}
		return next, err
	}
}

// mustDestroy reports whether terminal lease l still has its wrapped key to
// destroy: its destruction is not recorded, or recorded (with the terminal
// move) and the wrap is still there.
func (v *Vault) mustDestroy(l lease.Lease) bool {
	return l.ID != "" && !l.Live() && (!l.KeyDestroyed || v.keys.Has(l.ID))
}

// settle finishes an operation whose Update returned lease n and error err:
// a terminal lease gets its key destroyed, and err is classified.
func (v *Vault) settle(op string, n lease.Lease, err error) error {
	if v.mustDestroy(n) {
		if _, derr := v.finishTerminal(n); derr != nil {
			v.log.Error("vault: key destruction pending", "lease", n.ID)
		}
	}
	if err != nil {
		return v.fail(op, err)
	}
	return nil
}

// Claim is the lease compare-and-set over (principal, run, attempt,
// station, return digest): the first valid claim of an ACTIVE, bound lease
// wins; the same tuple again returns the same lease; any other tuple is
// LEASE_CLAIM_CONFLICT. It first checks that the map still opens: a lease
// whose key or map is lost is LEASE_UNRECOVERABLE.
func (v *Vault) Claim(ctx context.Context, principal, leaseID string, req ClaimRequest) (ClaimResult, error) {
	const op = "claim"
	if err := v.gate(op); err != nil {
		return ClaimResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return ClaimResult{}, vaultapi.Fail(op, err)
	}
	l, err := v.liveLease(op, leaseID)
	if err != nil {
		return ClaimResult{}, err
	}
	m, err := v.openMap(op, l)
	if err != nil {
		return ClaimResult{}, err
	}
	m.s.Wipe()
	t := lease.ClaimTuple{Principal: principal, Run: req.Run, Attempt: req.Attempt, Station: req.Station, ReturnDigest: req.ReturnDigest}
	now := v.now()
	var outcome lease.Outcome
	n, err := v.store.Update(leaseID, destroying(now, func(cur lease.Lease) (lease.Lease, error) {
		next, o, err := cur.Claim(t, now)
		outcome = o
		return next, err
	}))
	if err == nil && outcome == lease.OutcomeClaimed {
		crash.At(crash.ClaimCommitted)
	}
	if err := v.settle(op, n, err); err != nil {
		return ClaimResult{Lease: n}, err
	}
	return ClaimResult{Lease: n, Repeated: outcome == lease.OutcomeAlreadyClaimed}, nil
}

// Consume moves a lease claimed by exactly this tuple to CONSUMED and
// destroys its data key. It is single-use.
func (v *Vault) Consume(ctx context.Context, principal, leaseID string, req ClaimRequest) (lease.Lease, error) {
	const op = "consume"
	if err := v.gate(op); err != nil {
		return lease.Lease{}, err
	}
	if err := ctx.Err(); err != nil {
		return lease.Lease{}, vaultapi.Fail(op, err)
	}
	t := lease.ClaimTuple{Principal: principal, Run: req.Run, Attempt: req.Attempt, Station: req.Station, ReturnDigest: req.ReturnDigest}
	now := v.now()
	n, err := v.store.Update(leaseID, destroying(now, func(cur lease.Lease) (lease.Lease, error) {
		return cur.Consume(t, now)
	}))
	if err := v.settle(op, n, err); err != nil {
		return n, err
	}
	return v.current(n), nil
}

// Revoke moves a live lease to REVOKED and destroys its data key. Any
// principal on the vault's allow-list may revoke; it works whatever the
// profile (revocation only destroys).
func (v *Vault) Revoke(ctx context.Context, principal, leaseID string) (lease.Lease, error) {
	const op = "revoke"
	if err := v.open(op); err != nil {
		return lease.Lease{}, err
	}
	now := v.now()
	n, err := v.store.Update(leaseID, destroying(now, func(cur lease.Lease) (lease.Lease, error) {
		return cur.Revoke(now)
	}))
	if err := v.settle(op, n, err); err != nil {
		return n, err
	}
	v.log.Info("vault: lease revoked", "lease", leaseID, "by", principal)
	return v.current(n), nil
}

// current re-reads a lease after settle (which may have recorded the key
// destruction); on failure it returns l. A lease whose destruction was
// recorded with its terminal move is returned as it is.
func (v *Vault) current(l lease.Lease) lease.Lease {
	if l.KeyDestroyed {
		return l
	}
	if c, err := v.store.Get(l.ID); err == nil {
		return c
	}
	return l
}

// List returns every lease with its key state, never map material.
func (v *Vault) List(ctx context.Context) ([]Info, error) {
	const op = "list"
	if err := v.open(op); err != nil {
		return nil, err
	}
	leases, bad, err := v.store.List()
	if err != nil {
		return nil, v.fail(op, err)
	}
	if bad > 0 {
		v.log.Error("vault: unreadable lease records", "count", bad)
	}
	out := make([]Info, 0, len(leases))
	for _, l := range leases {
		out = append(out, v.info(l))
	}
	return out, nil
}

// Show returns one lease with its key state.
func (v *Vault) Show(ctx context.Context, leaseID string) (Info, error) {
	const op = "show"
	if err := v.open(op); err != nil {
		return Info{}, err
	}
	l, err := v.store.Get(leaseID)
	if err != nil {
		return Info{}, v.fail(op, err)
	}
	return v.info(l), nil
}

// open refuses when the vault is closed.
func (v *Vault) open(op string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.closed {
		return vaultapi.Fail(op, ErrClosed)
	}
	return nil
}

// finishTerminal completes a terminal transition that is already
// committed: destroy the data key, then record the destruction.
func (v *Vault) finishTerminal(l lease.Lease) (lease.Lease, error) {
	// A switch, not a table: in a release build the point names must not
	// be referenced at all, so that they are absent from the binary.
	switch l.State {
	case lease.Consumed:
		crash.At(crash.ConsumeCommitted)
	case lease.Revoked:
		crash.At(crash.RevokeCommitted)
	case lease.Expired:
		crash.At(crash.ExpireCommitted)
	}
	return v.destroyKey(l, true)
}

// destroyKey destroys a terminal lease's wrapped data key and records the
// destruction (lease.DestroyKey) unless the terminal move recorded it
// already (destroying). On failure the lease stays pending and the sweeper
// retries.
func (v *Vault) destroyKey(l lease.Lease, points bool) (lease.Lease, error) {
	v.forget(l.ID)
	if err := v.keys.Destroy(l.ID); err != nil {
		v.mu.Lock()
		v.pending[l.ID] = true
		v.mu.Unlock()
		return l, err
	}
	if points {
		switch l.State {
		case lease.Consumed:
			crash.At(crash.ConsumeKeyDestroyed)
		case lease.Revoked:
			crash.At(crash.RevokeKeyDestroyed)
		case lease.Expired:
			crash.At(crash.ExpireKeyDestroyed)
		}
	}
	if !l.NeedsKeyDestruction() {
		v.mu.Lock()
		delete(v.pending, l.ID)
		v.mu.Unlock()
		return l, nil
	}
	now := v.now()
	n, err := v.store.Update(l.ID, func(cur lease.Lease) (lease.Lease, error) {
		if !cur.NeedsKeyDestruction() {
			return cur, nil
		}
		return cur.DestroyKey(now)
	})
	if err != nil {
		v.mu.Lock()
		v.pending[l.ID] = true
		v.mu.Unlock()
		return l, err
	}
	v.mu.Lock()
	delete(v.pending, l.ID)
	v.mu.Unlock()
	return n, nil
}
