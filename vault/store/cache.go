package store

import (
	"bytes"
	"sync"

	"github.com/privacycut/privacycut/lease"
)

// The store's cache of live leases. Badger starts every transaction, a
// read-only one too, by waiting until every commit it has numbered is
// written and synced (its oracle's read mark), so a read that arrives while
// a batch of commits is syncing waits for the sync. The vault reads a
// lease's record and sealed map in every transition; under load each of
// those reads cost about one sync. The cache holds the records and sealed
// maps of live leases as last committed, and Update writes a transition
// without a read transaction: under the lease's lock it takes the current
// record from the cache, computes the next, and writes it in a batch that
// has no read snapshot to wait for.
//
// Coherence: an entry is set or evicted only by the store's writers of
// that lease (Create, Update, Restore), under the lease's stripe lock and
// only after the write committed; a write that fails evicts the entry, so
// the next reader goes back to Badger. Terminal leases are evicted (their
// reads go to Badger).
type cache struct {
	stripes [lockStripes]sync.Mutex // writers of one lease, by its first id bits

	mu       sync.Mutex
	recs     map[[16]byte]lease.Lease
	maps     map[[16]byte][]byte
	mapBytes int
}

// Cache bounds: a sealed map above maxCachedMap, or one that would take
// the cached maps past maxCacheBytes, is read from Badger.
const (
	maxCachedMap  = 1 << 20
	maxCacheBytes = 16 << 20
)

func newCache() *cache {
	return &cache{recs: map[[16]byte]lease.Lease{}, maps: map[[16]byte][]byte{}}
}

func (c *cache) lock(id [16]byte) *sync.Mutex {
	m := &c.stripes[stripe(id)]
	m.Lock()
	return m
}

// stripe is the index of the lock of lease id's writers.
func stripe(id [16]byte) int { return (int(id[0])<<8 | int(id[1])) % lockStripes }

// lockStripes is the number of writer locks.
const lockStripes = 1024

// clone copies the lease's one pointer field, so that no caller shares it
// with the cache.
func clone(l lease.Lease) lease.Lease {
	if l.ClaimedBy != nil {
		t := *l.ClaimedBy
		l.ClaimedBy = &t
	}
	return l
}

func (c *cache) get(id [16]byte) (lease.Lease, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l, ok := c.recs[id]
	return clone(l), ok
}

func (c *cache) getMap(id [16]byte) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.maps[id]
	return bytes.Clone(m), ok
}

// put records l as committed; a terminal lease is evicted. sealedMap is
// set when setMap (a Create), within the bounds.
func (c *cache) put(id [16]byte, l lease.Lease, setMap bool, sealedMap []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !l.Live() {
		c.evictLocked(id)
		return
	}
	c.recs[id] = clone(l)
	if setMap && sealedMap != nil && len(sealedMap) <= maxCachedMap && c.mapBytes+len(sealedMap) <= maxCacheBytes {
		c.dropMapLocked(id)
		c.maps[id] = bytes.Clone(sealedMap)
		c.mapBytes += len(sealedMap)
	}
}

func (c *cache) evict(id [16]byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evictLocked(id)
}

func (c *cache) evictLocked(id [16]byte) {
	delete(c.recs, id)
	c.dropMapLocked(id)
}

func (c *cache) dropMapLocked(id [16]byte) {
	if m, ok := c.maps[id]; ok {
		c.mapBytes -= len(m)
		delete(c.maps, id)
	}
}
