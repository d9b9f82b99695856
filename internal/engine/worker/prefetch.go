package worker

import "time"

// Bounds of the automatic prefetch (PoolConfig.Prefetch zero).
const (
	// autoPrefetchCeiling is the most jobs beyond its slots, per slot, a pool
	// holds however quick its handlers, unless fullClaim asks for more: the
	// worst case when handlers turn slow all at once.
	autoPrefetchCeiling = 4
	// fullClaim is the claim size the automatic prefetch lets a pool of
	// few slots reach with quick handlers: a claim costs the database a
	// round trip, an executor start and a commit whatever it takes, and
	// past about this size that fixed cost is small beside the rows'.
	// Measured on a 100-slot drain of no-op jobs: claims of 250 (a ceiling
	// of 4 per slot) cost PostgreSQL twice the statements per job of
	// claims of 500.
	fullClaim = 500
	// prefetchHorizon is how many claim round trips of work the automatic
	// prefetch keeps in hand when a claim starts, when that is more than
	// its floor: enough that a slot does not wait for a claim that takes
	// longer than the last ones, short enough that a job held ahead waits
	// about that long.
	prefetchHorizon = 2
	// claimAhead is the round trip of work a claim in flight brings, which
	// the depth makes room for beside prefetchHorizon: the claim loop
	// counts a claim's jobs against the depth from its start, and while a
	// backlog lasts starts the next claim as soon as one returns, for the
	// room the slots freed meanwhile, about a round trip's jobs. Without
	// it, a pool whose claims run back to back had one round trip of work
	// in hand when a claim started, and a claim slower than the mean left
	// slots waiting (measured: 32 slots of 2–5 ms handlers waited on an
	// empty channel 0.5–2 ms per job, 14–40% of their time on a loaded
	// machine, against about 5 µs a job spent between handlers
	// otherwise).
	claimAhead = 1
)

// prefetch decides how many jobs beyond its slots a pool holds while a
// backlog lasts: floor, or what the slots finish in prefetchHorizon claim
// round trips plus the one a claim in flight brings (claimAhead) when that
// is more, up to ceiling. Slow handlers keep it at the floor; handlers
// that finish in microseconds take it to the ceiling, so that claims grow
// and each job pays less of a claim's fixed cost (measured: a 100-slot
// drain of no-op jobs at 0.60 of the SQL-only limit with 50 held,
// 0.72–0.87 with 400). Beyond the floor, a job held ahead waits for its
// slot about prefetchHorizon round trips, not a handler's run. Only the
// claim loop uses it.
//
// What the slots finish in a round trip comes from the mean time a slot
// spends on a job, not from how many finished lately: slow handlers that
// started together also finish together, and a rate read over that moment
// would be their burst, not their pace.
type prefetch struct {
	slots, floor, ceiling int
	// within is the most work, in the slots' time, the automatic prefetch
	// holds beyond its floor: a job held ahead lives on its claim's lease
	// and the heartbeats that renew it, and one that waited for a slot
	// longer than a heartbeat interval would, on a database slow enough to
	// make the claims' round trips a large part of a lease, be reaped
	// without having run, an attempt spent each time.
	within time.Duration

	perJob time.Duration // a slot's time per job, smoothed; zero until one finished
	rtt    time.Duration // a claim's round trip, smoothed

	// The slots' counters when perJob was last sampled.
	seenDone int64
	seenTime time.Duration
}

// newPrefetch returns the prefetch of a pool of slots configured with
// prefetch (PoolConfig.Prefetch: zero automatic, negative none), whose
// worker renews leases every within.
func newPrefetch(slots, configured int, within time.Duration) *prefetch {
	switch {
	case configured < 0:
		return &prefetch{}
	case configured > 0:
		return &prefetch{floor: configured, ceiling: configured}
	}
	// Room for claimsInFlight claims of fullClaim beside the slots.
	ceiling := max(autoPrefetchCeiling*slots, claimsInFlight*fullClaim-slots)
	return &prefetch{slots: slots, floor: max(1, slots/2), ceiling: ceiling, within: within}
}

// claimed notes a claim's round trip.
func (f *prefetch) claimed(took time.Duration) { f.rtt = smooth(f.rtt, took) }

// depth returns the jobs to hold beyond the slots, when the slots have
// finished done jobs in slotTime since the pool started.
func (f *prefetch) depth(done int64, slotTime time.Duration) int {
	if f.floor == f.ceiling {
		return f.floor
	}
	if done > f.seenDone {
		sample := (slotTime - f.seenTime) / time.Duration(done-f.seenDone)
		f.perJob = smooth(f.perJob, max(sample, time.Nanosecond))
		f.seenDone, f.seenTime = done, slotTime
	}
	if f.perJob == 0 {
		return f.floor
	}
	ahead := float64(f.slots) * float64(min((prefetchHorizon+claimAhead)*f.rtt, f.within)) / float64(f.perJob)
	return int(min(max(float64(f.floor), ahead), float64(f.ceiling)))
}

// smooth averages a new sample into a running value: each sample weighs
// half, so a change shows within a few claims.
func smooth(old, sample time.Duration) time.Duration {
	if old == 0 {
		return sample
	}
	return (old + sample) / 2
}
