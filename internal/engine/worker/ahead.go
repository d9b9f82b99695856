package worker

import (
	"sync"
	"time"
)

// limitRateAhead is how far ahead of their tokens a pool claims the jobs
// of a rate limit without a concurrency cap (migration 029). Each job
// waits here, not in a slot, until its token is due, and then goes to
// the slots ahead of prefetched jobs. A limited claim that stalls (a
// busy server: tens of milliseconds at times) then delays no start while
// its stall is shorter than this, less the limitRateWait between claims:
// the jobs whose tokens fall due meanwhile were claimed by the claims
// before it. Long enough for most stalls, short enough that few jobs wait
// on a lease without running (at 1,000/s, about 50).
const limitRateAhead = 50 * time.Millisecond

// ahead holds the jobs a pool claimed before their tokens were due, each
// until its token is, on a timer of its own. They are counted among the
// pool's limited jobs (limitedBusy) but hold no slot: ordinary claims
// take the slots meanwhile.
type ahead struct {
	mu      sync.Mutex
	waiting map[*task]*time.Timer
	flushed bool // the pool stopped claiming: no job waits any more
}

func newAhead() *ahead { return &ahead{waiting: map[*task]*time.Timer{}} }

// hold hands t to its pool's slots after d, when its token is due.
func (a *ahead) hold(t *task, d time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.flushed {
		t.pool.toSlot(t)
		return
	}
	a.waiting[t] = time.AfterFunc(d, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		if _, ok := a.waiting[t]; ok {
			delete(a.waiting, t)
			t.pool.toSlot(t)
		}
	})
}

// flush hands every waiting job to the slots at once: the pool is
// stopping, so they are released, not run.
func (a *ahead) flush() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.flushed = true
	for t, tm := range a.waiting {
		tm.Stop()
		delete(a.waiting, t)
		t.pool.toSlot(t)
	}
}
