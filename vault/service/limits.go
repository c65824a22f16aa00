package service

import (
	"time"

	"github.com/privacycut/privacycut/receipts"
	"github.com/privacycut/privacycut/vault/vaultapi"
)

// Defaults of the per-principal limits (Options).
const (
	// DefaultMaxLeasesPerPrincipal bounds the live leases of one principal.
	DefaultMaxLeasesPerPrincipal = 1024
	// DefaultMaxScratchPerPrincipal bounds the erasure proofs one principal
	// runs at once.
	DefaultMaxScratchPerPrincipal = 2
)

// track records a live lease for the sweeper and counts it against its
// principal (once, however often it is tracked).
func (v *Vault) track(id, principal string, deadline time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.live[id] = deadline
	if _, ok := v.owner[id]; !ok {
		v.owner[id] = principal
		v.held[principal]++
	}
}

// forget drops a lease from the sweeper's set and from its principal's
// count.
func (v *Vault) forget(id string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.live, id)
	if p, ok := v.owner[id]; ok {
		delete(v.owner, id)
		v.release(p)
	}
}

// release takes one from a principal's count. The caller holds mu.
func (v *Vault) release(principal string) {
	if v.held[principal] <= 1 {
		delete(v.held, principal)
		return
	}
	v.held[principal]--
}

// reserveLease counts a grant in progress against its principal, refusing
// LIMIT_EXCEEDED when the principal already holds MaxLeasesPerPrincipal
// live leases and grants in progress. The grant either commits (commitLease
// turns the reservation into the lease's own count) or gives it back with
// the returned function.
func (v *Vault) reserveLease(op, principal string) (cancel func(), err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.held[principal] >= v.opt.MaxLeasesPerPrincipal {
		return nil, vaultapi.New(receipts.LimitExceeded, op, "leases", nil)
	}
	v.held[principal]++
	return func() {
		v.mu.Lock()
		v.release(principal)
		v.mu.Unlock()
	}, nil
}

// commitLease makes a reserved grant a live lease.
func (v *Vault) commitLease(id, principal string, deadline time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.live[id] = deadline
	v.owner[id] = principal
}

// holdScratch counts an erasure proof (a backup held in memory and a
// scratch store on disk) against its principal, refusing LIMIT_EXCEEDED
// past MaxScratchPerPrincipal at once. The returned function ends it.
func (v *Vault) holdScratch(op, principal string) (done func(), err error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.scratch[principal] >= v.opt.MaxScratchPerPrincipal {
		return nil, vaultapi.New(receipts.LimitExceeded, op, "scratch", nil)
	}
	v.scratch[principal]++
	return func() {
		v.mu.Lock()
		defer v.mu.Unlock()
		if v.scratch[principal] <= 1 {
			delete(v.scratch, principal)
		} else {
			v.scratch[principal]--
		}
	}, nil
}

// Held returns how many live leases (and grants in progress) a principal
// holds, as the lease limit counts them.
func (v *Vault) Held(principal string) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.held[principal]
}
