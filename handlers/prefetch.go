package handlers

import "time"

// Bounds of the automatic prefetch (PoolConfig.Prefetch zero).
const (
	// autoPrefetchCeiling is the most jobs beyond its slots, per slot, a pool
	// holds however fast its slots run through them: the worst case when
	// handlers turn slow all at once.
	autoPrefetchCeiling = 4
	// prefetchHorizon is how many claim round trips of work the automatic
	// prefetch holds when that is more than its floor: enough that a slot
	// never waits for a claim, short enough that a job held ahead waits
	// about that long.
	prefetchHorizon = 2
	// rateWindow is the shortest interval the slots' rate is sampled over.
	rateWindow = 20 * time.Millisecond
)

// prefetch decides how many jobs beyond its slots a pool holds while a
// backlog lasts: floor, or what the slots finish in prefetchHorizon claim
// round trips when that is more, up to ceiling. Slow handlers keep it at
// the floor; handlers that finish in microseconds take it to the ceiling,
// so that claims grow and each job pays less of a claim's fixed cost
// (measured: a 100-slot drain of no-op jobs at 0.60 of the SQL-only limit
// with 50 held, 0.72–0.87 with 400). Beyond the floor, a job held ahead
// waits for its slot about prefetchHorizon round trips, not a handler's
// run. Only the claim loop uses it.
type prefetch struct {
	floor, ceiling int

	rate     float64       // jobs per second the slots finish, smoothed
	rtt      time.Duration // a claim's round trip, smoothed
	winStart time.Time     // the current rate window
	winDone  int64         // jobs finished when it started
}

// newPrefetch returns the prefetch of a pool of slots configured with
// prefetch (PoolConfig.Prefetch: zero automatic, negative none).
func newPrefetch(slots, configured int) *prefetch {
	switch {
	case configured < 0:
		return &prefetch{}
	case configured > 0:
		return &prefetch{floor: configured, ceiling: configured}
	}
	return &prefetch{floor: max(1, slots/2), ceiling: autoPrefetchCeiling * slots}
}

// claimed notes a claim's round trip.
func (f *prefetch) claimed(took time.Duration) {
	if f.rtt == 0 {
		f.rtt = took
		return
	}
	f.rtt = (f.rtt + took) / 2
}

// depth returns the jobs to hold beyond the slots at now, when done jobs
// have finished since the pool started.
func (f *prefetch) depth(now time.Time, done int64) int {
	if f.floor == f.ceiling {
		return f.floor
	}
	if elapsed := now.Sub(f.winStart); elapsed >= rateWindow {
		if !f.winStart.IsZero() {
			sample := float64(done-f.winDone) / elapsed.Seconds()
			if f.rate == 0 {
				f.rate = sample
			} else {
				f.rate = (f.rate + sample) / 2
			}
		}
		f.winStart, f.winDone = now, done
	}
	ahead := int(f.rate * (prefetchHorizon * f.rtt).Seconds())
	return min(max(f.floor, ahead), f.ceiling)
}
