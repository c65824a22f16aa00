package service

import (
	"errors"
	"io"
	"os"

	"github.com/privacycut/privacycut/lease"
	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/arena"
	"github.com/privacycut/privacycut/vault/keys"
	"github.com/privacycut/privacycut/vault/store"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// Backup writes a backup of the store: lease records and sealed maps only
// (package store documents the stream). The key directory is never part of
// it. It works whatever the profile.
func (v *Vault) Backup(w io.Writer) (store.BackupStats, error) {
	const op = "backup"
	if err := v.open(op); err != nil {
		return store.BackupStats{}, err
	}
	st, err := v.store.Backup(w)
	if err != nil {
		return st, v.fail(op, err)
	}
	return st, nil
}

// Restore verifies a backup stream and merges it into the store (leases
// already present are kept as they are), then runs lease recovery on the
// restored leases: past their deadline they expire, terminal ones get any
// surviving wrapped key destroyed. A restored lease whose key is gone stays
// unrecoverable; nothing is re-derived.
func (v *Vault) Restore(r io.Reader) (store.RestoreStats, error) {
	const op = "restore"
	if err := v.open(op); err != nil {
		return store.RestoreStats{}, err
	}
	if err := v.spaceGate(op); err != nil {
		return store.RestoreStats{}, err
	}
	snap, err := store.ReadBackup(r)
	if err != nil {
		return store.RestoreStats{}, v.fail(op, err)
	}
	st, err := v.store.Restore(snap)
	if err != nil {
		return st, v.fail(op, err)
	}
	now := v.now()
	for _, b := range snap.Leases() {
		l, err := v.store.Update(b.ID, func(cur lease.Lease) (lease.Lease, error) {
			n, _, err := lease.Recover(cur, now)
			return n, err
		})
		if err != nil {
			return st, v.fail(op, err)
		}
		switch {
		case l.NeedsKeyDestruction():
			if _, err := v.destroyKey(l, false); err != nil {
				return st, v.fail(op, err)
			}
		case !l.Live() && v.keys.Has(l.ID):
			if err := v.keys.Destroy(l.ID); err != nil {
				return st, v.fail(op, err)
			}
		case l.Live():
			v.mu.Lock()
			v.live[l.ID] = l.Deadline
			v.mu.Unlock()
		}
	}
	return st, nil
}

// Rotate moves every wrapped data key to a new epoch and destroys the old
// epoch key (keys.Dir.Rotate). It handles key material, so it is refused
// with VAULT_PROFILE_NOT_PROVEN unless the profile is accepted.
func (v *Vault) Rotate() (keys.Rotation, error) {
	const op = "rotate"
	if err := v.gate(op); err != nil {
		return keys.Rotation{}, err
	}
	if err := v.spaceGate(op); err != nil {
		return keys.Rotation{}, err
	}
	r, err := v.keys.Rotate()
	if err != nil {
		return r, v.fail(op, err)
	}
	if err := v.store.RaiseEpoch(r.To); err != nil {
		return r, v.fail(op, err)
	}
	v.log.Info("vault: key epoch rotated", "from", r.From, "to", r.To, "rewrapped", r.Rewrapped, "dropped", r.Dropped)
	return r, nil
}

// The erasure proof's report is package vaultapi's.
type (
	Report = vaultapi.Report
	Probe  = vaultapi.Probe
)

// ErasureSchema names a Report.
const ErasureSchema = vaultapi.ErasureSchema

// Probe reasons.
const (
	reasonNoMap   = "no map in the backup"
	reasonNoKey   = "no wrapped data key"
	reasonKeyAuth = "wrapped data key failed authentication"
	reasonMapAuth = "map failed authentication"
)

// ProveErasure is the offline proof for a stopped vault: it restores the
// backup into a scratch store (a temporary directory, removed afterwards),
// opens keyDir read-only with a small arena of its own, and probes the
// destroyed lease and, if live is not "", a live one. It never writes to
// keyDir.
func ProveErasure(backup io.Reader, keyDir, destroyed, live string) (Report, error) {
	const op = "prove-erasure"
	snap, err := store.ReadBackup(backup)
	if err != nil {
		return Report{}, vaultapi.New(store.CodeOf(err), op, "backup", ErrInvalid)
	}
	a, err := arena.New(MaxMapBytes+64<<10, arena.Options{}) // one map at a time, plus keys
	if err != nil {
		return Report{}, vaultapi.New(receipts.VaultProfileNotProven, op, "", ErrInternal)
	}
	defer a.Close()
	kd, err := keys.Open(keyDir, keys.Options{Arena: a, ReadOnly: true})
	if err != nil {
		e, _ := classify(op, err)
		return Report{}, e
	}
	defer kd.Close()
	return prove(op, snap, a, kd, destroyed, live)
}

// ProveErasure runs the erasure proof inside the running vault, with its
// own key directory and arena. It is refused with VAULT_PROFILE_NOT_PROVEN
// unless the profile is accepted.
func (v *Vault) ProveErasure(backup io.Reader, destroyed, live string) (Report, error) {
	const op = "prove-erasure"
	if err := v.gate(op); err != nil {
		return Report{}, err
	}
	snap, err := store.ReadBackup(backup)
	if err != nil {
		return Report{}, v.fail(op, err)
	}
	rep, err := prove(op, snap, v.arena, v.keys, destroyed, live)
	if err != nil {
		return rep, v.fail(op, err)
	}
	return rep, nil
}

func prove(op string, snap *store.Snapshot, a *arena.Arena, kd *keys.Dir, destroyed, live string) (Report, error) {
	if _, ok := store.IDBytes(destroyed); !ok {
		return Report{}, invalid(op, "lease")
	}
	if _, ok := store.IDBytes(live); live != "" && !ok {
		return Report{}, invalid(op, "live")
	}
	dir, err := os.MkdirTemp("", "vaultd-scratch-")
	if err != nil {
		return Report{}, vaultapi.Fail(op, ErrInternal)
	}
	defer os.RemoveAll(dir)
	st, err := store.Open(dir, store.Options{})
	if err != nil {
		return Report{}, err
	}
	defer st.Close()
	if _, err := st.Restore(snap); err != nil {
		return Report{}, err
	}
	rep := Report{Schema: ErasureSchema, Epoch: kd.Epoch()}
	if rep.Destroyed, err = probe(st, a, kd, destroyed); err != nil {
		return Report{}, err
	}
	if live != "" {
		p, err := probe(st, a, kd, live)
		if err != nil {
			return Report{}, err
		}
		rep.Live = &p
	}
	rep.Proven = rep.Destroyed.MapInBackup && !rep.Destroyed.Decrypts && (rep.Live == nil || rep.Live.Decrypts)
	return rep, nil
}

// probe tries to decrypt one lease's map from the scratch store.
func probe(st *store.Store, a *arena.Arena, kd *keys.Dir, id string) (Probe, error) {
	p := Probe{Lease: id}
	l, err := st.Get(id)
	if errors.Is(err, store.ErrNotFound) {
		return p, nil
	}
	if err != nil {
		return p, err
	}
	p.InBackup, p.State = true, l.State.String()
	unrecoverable := func(reason string) (Probe, error) {
		p.Code, p.Reason = receipts.LeaseUnrecoverable, reason
		return p, nil
	}
	sealed, err := st.Map(id)
	if errors.Is(err, store.ErrNotFound) {
		return unrecoverable(reasonNoMap)
	}
	if err != nil {
		return p, err
	}
	p.MapInBackup = true
	dek, err := kd.Unwrap(id)
	switch {
	case errors.Is(err, keys.ErrNoKey):
		return unrecoverable(reasonNoKey)
	case errors.Is(err, keys.ErrCorrupt):
		return unrecoverable(reasonKeyAuth)
	case err != nil:
		return p, err
	}
	defer dek.Wipe()
	m, err := decryptMap(a, dek, l, sealed)
	if CodeOf(err) == receipts.LeaseUnrecoverable {
		return unrecoverable(reasonMapAuth)
	}
	if err != nil {
		return p, err
	}
	p.Decrypts, p.Entries = true, m.Len()
	m.s.Wipe()
	return p, nil
}
