package worker

import (
	"sync"
)

// places runs the jobs of per-tenant concurrency limits in this process
// within the places the process holds (migration 027). A limited claim
// says how many of each tenant's places the process holds and may grant
// it up to 4 times as many of the tenant's jobs: the database counts the
// process's use of a tenant as its running jobs of the tenant, but no
// more than its places, so the process runs at most that many at once
// and starts the tenant's next job the moment one ends, without a claim's
// round trip. The others wait here. Places are the process's, not a
// pool's: every pool of it claims against the same count.
type places struct {
	mu    sync.Mutex
	lines map[placeKey]*placeLine
	// seq is, per limit, the number of the claim whose places are known:
	// claims of several pools may return out of order.
	seq map[string]int64
}

type placeKey struct{ limit, tenant string }

// placeLine is one tenant's jobs of one limit in this process.
type placeLine struct {
	places  int     // how many may run at once
	running int     // handed to a slot and not yet ran
	waiting []*task // claimed, for a place to free
}

func newPlaces() *places {
	return &places{lines: map[placeKey]*placeLine{}, seq: map[string]int64{}}
}

// granted takes the places a claim of the limit numbered seq reported
// and hands the tenants' jobs to slots as far as they allow, then adds
// tasks, which that claim took, to their tenants' lines. A tenant's line
// lasts while it has jobs here; one that a claim older than the last
// one opens has no place until a later claim says (the jobs it took make
// the pool claim again).
func (s *places) granted(limit string, seq int64, held map[string]int, tasks []*task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	latest := seq > s.seq[limit]
	if latest {
		s.seq[limit] = seq
		for tenant, n := range held {
			if l := s.lines[placeKey{limit, tenant}]; l != nil {
				l.places = n
				s.start(l)
			}
		}
	}
	for _, t := range tasks {
		k := placeKey{t.limit, t.job.Tenant}
		l := s.lines[k]
		if l == nil {
			l = &placeLine{}
			if latest {
				l.places = held[t.job.Tenant]
			}
			s.lines[k] = l
		}
		l.waiting = append(l.waiting, t)
		s.start(l)
	}
}

// start hands waiting jobs to their pools' slots while places are free.
// s.mu is held.
func (s *places) start(l *placeLine) {
	for l.running < l.places && len(l.waiting) > 0 {
		t := l.waiting[0]
		l.waiting[0] = nil
		l.waiting = l.waiting[1:]
		l.running++
		t.pool.toSlot(t)
	}
}

// ran frees the place of a job handed to a slot, which ran (or was
// released), for the tenant's next job.
func (s *places) ran(t *task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := placeKey{t.limit, t.job.Tenant}
	l := s.lines[k]
	l.running--
	s.start(l)
	if l.running == 0 && len(l.waiting) == 0 {
		// A later claim reports the tenant's places again with its jobs.
		delete(s.lines, k)
	}
}

// flush hands every job of pool p still waiting for a place to its slots,
// places or not: the worker is stopping, so they are released, not run.
func (s *places) flush(p *pool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.lines {
		kept := l.waiting[:0]
		for _, t := range l.waiting {
			if t.pool == p {
				l.running++
				p.toSlot(t)
			} else {
				kept = append(kept, t)
			}
		}
		clear(l.waiting[len(kept):])
		l.waiting = kept
	}
}
