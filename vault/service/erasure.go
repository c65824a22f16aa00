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
// (package store documents the stream), authenticated under the key
// directory's backup key. The key directory is never part of it. It works
// whatever the profile, but needs the backup key, which lives in the arena:
// a vault without an arena cannot write a backup (VAULT_PROFILE_NOT_PROVEN).
func (v *Vault) Backup(w io.Writer) (store.BackupStats, error) {
	const op = "backup"
	if err := v.open(op); err != nil {
		return store.BackupStats{}, err
	}
	mac, err := v.backupMAC(op)
	if err != nil {
		return store.BackupStats{}, err
	}
	st, err := v.store.Backup(w, mac)
	if err != nil {
		return st, v.fail(op, err)
	}
	return st, nil
}

// Restore verifies a backup stream (its key id and keyed trailer: a backup
// of another backup key, or edited, is MALFORMED_RECORD) and merges it into the store (leases
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
	mac, err := v.backupMAC(op)
	if err != nil {
		return store.RestoreStats{}, err
	}
	snap, err := store.ReadBackup(r, mac)
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
			v.track(l.ID, l.Principal, l.Deadline)
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

// backupMAC returns the key directory's backup MAC for one stream.
func (v *Vault) backupMAC(op string) (store.MAC, error) {
	id, h, err := v.keys.BackupMAC()
	if err != nil {
		return store.MAC{}, v.fail(op, err)
	}
	return store.MAC{KeyID: id, Hash: h}, nil
}

// The erasure proof's report is package vaultapi's.
type (
	Report = vaultapi.Report
	Probe  = vaultapi.Probe
)

// ErasureSchema names a Report.
const ErasureSchema = vaultapi.ErasureSchema

// Probe reasons: why a lease's map in the restored backup does not open.
const (
	reasonNoMap   = "no map in the backup"
	reasonNoKey   = "no wrapped data key"
	reasonKeyAuth = "wrapped data key failed authentication"
	reasonKeyDir  = "key directory unusable"
	reasonMapAuth = "map failed authentication"
)

// ProveErasure is the erasure proof, run inside the vault with its own
// store, key directory and arena. It verifies the backup (key id and keyed
// trailer), restores it into a scratch store (a temporary directory,
// removed afterwards), and probes the destroyed lease and, if live is not
// "", a live one. The destroyed lease counts as erased only by absence:
// it is terminal in the vault's own store, its wrapped data key is gone
// from the key directory, and its map, which the backup holds, does not
// open for that reason. Anything else (a backup that fails its check, a
// map that fails authentication, a lease still live, a key still present)
// is reported not proven, with the first reason that applies
// (vaultapi.Reason…). A principal runs at most MaxScratchPerPrincipal
// proofs at once (LIMIT_EXCEEDED). It is refused with
// VAULT_PROFILE_NOT_PROVEN unless the profile is accepted.
func (v *Vault) ProveErasure(principal string, backup io.Reader, destroyed, live string) (Report, error) {
	const op = "prove-erasure"
	if err := v.gate(op); err != nil {
		return Report{}, err
	}
	if _, ok := store.IDBytes(destroyed); !ok {
		return Report{}, invalid(op, "lease")
	}
	if _, ok := store.IDBytes(live); live != "" && !ok {
		return Report{}, invalid(op, "live")
	}
	release, err := v.holdScratch(op, principal)
	if err != nil {
		return Report{}, err
	}
	defer release()
	mac, err := v.backupMAC(op)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Schema: ErasureSchema, Epoch: v.keys.Epoch(), Destroyed: Probe{Lease: destroyed}}
	snap, err := store.ReadBackup(backup, mac)
	switch {
	case errors.Is(err, store.ErrBackup):
		rep.Reason = vaultapi.ReasonBackupCorrupt
		return rep, nil
	case errors.Is(err, store.ErrBackupKey):
		rep.Reason = vaultapi.ReasonBackupOtherKey
		return rep, nil
	case errors.Is(err, store.ErrBackupVersion):
		rep.Reason = vaultapi.ReasonBackupFormat
		return rep, nil
	case err != nil:
		return Report{}, v.fail(op, err)
	}
	rep.BackupVerified = true
	rep, err = prove(rep, snap, v.arena, v.keys, destroyed, live)
	if err != nil {
		return Report{}, v.fail(op, err)
	}
	for _, p := range []*Probe{&rep.Destroyed, rep.Live} {
		if p == nil {
			continue
		}
		l, err := v.store.Get(p.Lease)
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return Report{}, v.fail(op, err)
		default:
			p.VaultState = l.State.String()
		}
		p.WrappedKey = v.keys.Has(p.Lease)
	}
	rep.Reason = verdict(rep)
	rep.Proven = rep.Reason == ""
	return rep, nil
}

// verdict returns why a report does not prove erasure, or "" when it does.
func verdict(rep Report) string {
	d := rep.Destroyed
	switch {
	case !rep.BackupVerified:
		return vaultapi.ReasonBackupCorrupt
	case !d.InBackup:
		return vaultapi.ReasonNotInBackup
	case !d.MapInBackup:
		return vaultapi.ReasonNoMapInBackup
	case d.VaultState == "":
		return vaultapi.ReasonNotInVault
	case !terminal(d.VaultState):
		return vaultapi.ReasonNotTerminal
	case d.WrappedKey:
		return vaultapi.ReasonKeyPresent
	case d.Decrypts:
		return vaultapi.ReasonMapDecrypts
	case d.Reason != reasonNoKey:
		return vaultapi.ReasonOtherFailure
	case rep.Live != nil && !rep.Live.Decrypts:
		return vaultapi.ReasonLiveFails
	}
	return ""
}

func terminal(state string) bool {
	s, err := lease.ParseState(state)
	return err == nil && s.Terminal()
}

func prove(rep Report, snap *store.Snapshot, a *arena.Arena, kd *keys.Dir, destroyed, live string) (Report, error) {
	dir, err := os.MkdirTemp("", "vaultd-scratch-")
	if err != nil {
		return Report{}, err
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
	case errors.Is(err, keys.ErrUnavailable):
		return unrecoverable(reasonKeyDir)
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
