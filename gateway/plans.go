package gateway

import (
	"errors"
	"sync"
	"time"
)

// errPlansExhausted: every expiry a plan of this route and projection
// could have is taken by another request's plan.
var errPlansExhausted = errors.New("gateway: every plan expiry of this projection is in use")

// expiries gives every request a plan of its own. Two plans of one route
// for one projection differ only in expires_at, in whole seconds, and the
// seal authority seals a plan and its export once (and, for a reversible
// route, a plan is what a lease and its uses are counted under), so two
// requests of the same projection in the same second need distinct
// expiries: the latest free second, counting down from the latest the
// lifetime allows. A request of a projection with unique part keys (the
// front door makes them so) never meets another's.
type expiries struct {
	mu    sync.Mutex
	taken map[string]map[int64]struct{} // route and manifest → expiry seconds taken
	swept time.Time
}

func newExpiries() *expiries {
	return &expiries{taken: map[string]map[int64]struct{}{}}
}

// pick returns the ExpiryFunc of one request of route.
func (e *expiries) pick(route string) func(manifest string, now, latest time.Time) (time.Time, error) {
	return func(manifest string, now, latest time.Time) (time.Time, error) {
		e.mu.Lock()
		defer e.mu.Unlock()
		cut := now.Unix()
		if now.Sub(e.swept) > time.Minute {
			for k, set := range e.taken {
				for s := range set {
					if s <= cut {
						delete(set, s)
					}
				}
				if len(set) == 0 {
					delete(e.taken, k)
				}
			}
			e.swept = now
		}
		key := route + "\x00" + manifest
		set := e.taken[key]
		if set == nil {
			set = map[int64]struct{}{}
			e.taken[key] = set
		}
		first := now.Add(time.Second)
		for at := latest; !at.Before(first); at = at.Add(-time.Second) {
			if _, ok := set[at.Unix()]; !ok {
				set[at.Unix()] = struct{}{}
				return at, nil
			}
		}
		return time.Time{}, errPlansExhausted
	}
}
