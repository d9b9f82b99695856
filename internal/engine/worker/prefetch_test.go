package worker

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
)

type prefetchArgs struct {
	SleepMS int
	Block   bool // wait for the context instead of sleeping
}

func (prefetchArgs) Kind() string { return "prefetch" }

// A job claimed ahead of a free slot waits in the pool longer than the
// lease, yet the heartbeat keeps it: every job runs once, on its first
// attempt, and none is reported lost.
func TestPrefetchedJobsKeepTheirLease(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[prefetchArgs]) error {
		time.Sleep(time.Duration(j.Args.SleepMS) * time.Millisecond)
		return nil
	}, handlers.KindOpts{})
	// One slot and 1 s handlers: the fourth job waits 3 s for its slot,
	// one and a half leases. The lease leaves a heartbeat 1.3 s of slack,
	// so that a loaded machine (the race pass in CI) cannot lose a run.
	const jobs = 5
	for range jobs {
		e.enqueue(prefetchArgs{SleepMS: 1000}, enqueue.Opts{})
	}
	w := e.worker(reg, Config{
		Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 1, Prefetch: 3}},
		Lease: 2 * time.Second,
	})
	held := 0
	waitFor(t, 20*time.Second, "every job done", func() bool {
		n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE state = 'running' AND locked_by = $1`, w.ID())
		held = max(held, n)
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == jobs
	})
	if held < 2 {
		t.Errorf("the worker held at most %d claimed jobs at once; want its slot and prefetched ones", held)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE attempts <> 1`); n != 0 {
		t.Errorf("%d jobs ran more than once", n)
	}
	if e.logs.contains("job lost") {
		t.Errorf("a prefetched job was lost:\n%s", e.logs.String())
	}
	// The count may include a finished job whose outcome is still being
	// written, beside the slot and the prefetched jobs.
	t.Logf("held up to %d claimed jobs with 1 slot and Prefetch 3", held)
}

// At shutdown the jobs waiting for a slot go back to ready at once, their
// attempt not counted, with the ones whose handlers were cancelled.
func TestStopReleasesPrefetchedJobs(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	var running atomic.Int64
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[prefetchArgs]) error {
		running.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}, handlers.KindOpts{})
	for range 10 {
		e.enqueue(prefetchArgs{Block: true}, enqueue.Opts{})
	}
	w := e.worker(reg, Config{
		Pools:           []PoolConfig{{Queues: []string{"default"}, Concurrency: 2, Prefetch: 4}},
		ShutdownTimeout: time.Second,
	})
	waitFor(t, 20*time.Second, "2 handlers running and 4 jobs prefetched", func() bool {
		return running.Load() == 2 &&
			e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE state = 'running' AND locked_by = $1`, w.ID()) == 6
	})
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE state = 'ready' AND attempts = 0`); n != 10 {
		t.Errorf("%d of 10 jobs ready with no attempt counted after Stop; want all", n)
	}
	if n := running.Load(); n != 2 {
		t.Errorf("%d handlers ran; the prefetched jobs must not start at shutdown", n)
	}
}

// A short backlog is shared: two workers that each prefetch still leave
// each other work. Handlers hold their slots until both workers have run a
// job (or for 20 s), so that what the first claimer takes is its slots
// and prefetch, however long the other's first claim takes on a loaded
// machine: 16 slots and 8 held ahead of 40 jobs leave 16.
func TestShortBacklogIsShared(t *testing.T) {
	t.Parallel()
	e := setup(t, 16)
	var ran [2]atomic.Int64
	both := make(chan struct{})
	var bothOnce sync.Once
	cfg := Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 16}}}
	for i := range ran {
		reg := handlers.NewRegistry()
		handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[prefetchArgs]) error {
			ran[i].Add(1)
			if ran[0].Load() > 0 && ran[1].Load() > 0 {
				bothOnce.Do(func() { close(both) })
			}
			select {
			case <-both:
			case <-time.After(20 * time.Second):
				bothOnce.Do(func() { close(both) }) // no longer wait: the check below fails
			}
			return nil
		}, handlers.KindOpts{})
		e.worker(reg, cfg)
	}
	items := make([]enqueue.Item, 40)
	for i := range items {
		items[i] = enqueue.Item{Args: prefetchArgs{}}
	}
	if _, err := e.jobs.EnqueueMany(t.Context(), e.pool, items); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "40 jobs done", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == 40
	})
	na, nb := ran[0].Load(), ran[1].Load()
	t.Logf("worker a ran %d jobs, worker b %d", na, nb)
	if na == 0 || nb == 0 || na+nb != 40 {
		t.Errorf("worker a ran %d jobs and b %d of 40: want both some", na, nb)
	}
}

// The automatic prefetch holds half the slots for slow handlers and grows
// with the jobs the slots finish per claim round trip (three of them: two
// in hand and one in flight), up to four times the slots or room for two
// claims of fullClaim beside them, whichever is more; a configured
// prefetch is fixed, a negative one is none.
func TestPrefetchDepth(t *testing.T) {
	t.Parallel()
	// feed runs ten claims of rtt, after each of which every slot has
	// finished one more job of perJob (none when perJob is zero), and
	// returns the depth after them.
	feed := func(f *prefetch, slots int, perJob, rtt time.Duration) int {
		var done int64
		var slotTime time.Duration
		depth := f.depth(done, slotTime)
		for range 10 {
			f.claimed(rtt)
			if perJob > 0 {
				done += int64(slots)
				slotTime += time.Duration(slots) * perJob
			}
			depth = f.depth(done, slotTime)
		}
		return depth
	}
	cases := []struct {
		name       string
		slots      int
		configured int
		perJob     time.Duration
		rtt        time.Duration
		want       int
	}{
		{"none", 100, -1, time.Microsecond, 5 * time.Millisecond, 0},
		{"fixed", 100, 3, time.Microsecond, 5 * time.Millisecond, 3},
		{"auto before any job finished", 100, 0, 0, 5 * time.Millisecond, 50},
		// 100 slots of 35 ms handlers: 42.9 jobs in three 5 ms round trips.
		{"auto, slow handlers", 100, 0, 35 * time.Millisecond, 5 * time.Millisecond, 50},
		// 100 slots of 10 ms handlers: 300 jobs in three 10 ms round trips.
		{"auto, between", 100, 0, 10 * time.Millisecond, 10 * time.Millisecond, 300},
		// Two claims of 500 beside 100 slots: more than 4 × 100.
		{"auto, no-op handlers", 100, 0, 10 * time.Microsecond, 5 * time.Millisecond, 900},
		{"auto, one slot", 1, 0, 10 * time.Microsecond, 5 * time.Millisecond, 999},
		// 1,000 slots: four times the slots is more than two claims need.
		{"auto, many slots", 1000, 0, 10 * time.Microsecond, 5 * time.Millisecond, 4000},
	}
	for _, c := range cases {
		if got := feed(newPrefetch(c.slots, c.configured, time.Hour), c.slots, c.perJob, c.rtt); got != c.want {
			t.Errorf("%s: depth %d, want %d", c.name, got, c.want)
		}
	}
	// A slow database: claims of 1 s, 16 slots of 250 ms jobs, heartbeats
	// every 667 ms (a 2 s lease). Three round trips would be 192 jobs held,
	// 3 s of the slots' work; it holds what they start within an interval.
	if got := feed(newPrefetch(16, 0, 667*time.Millisecond), 16, 250*time.Millisecond, time.Second); got != 42 {
		t.Errorf("claims of a lease's half: depth %d, want 42 (a heartbeat interval of work)", got)
	}

	// Slow handlers that started together and finish within moments of
	// each other are still slow: 16 slots of 200 ms handlers, all done at
	// once after a claim of 30 ms, hold the floor (16 × 90 ms / 200 ms
	// is 7.2 jobs in three round trips).
	f := newPrefetch(16, 0, time.Hour)
	f.claimed(30 * time.Millisecond)
	if got := f.depth(16, 16*200*time.Millisecond); got != 8 {
		t.Errorf("a burst of slow handlers finishing: depth %d, want the floor of 8", got)
	}
}

// While a backlog lasts the claim loop starts a claim as soon as the one
// before returns, for the room the slots freed meanwhile, and counts that
// claim's jobs against the depth until it returns: the depth must hold, on
// top of the round trip's jobs the claim in flight brings, two round trips
// of work in hand, or a claim slower than the mean leaves slots waiting.
// 32 slots of 4 ms handlers finish 16 jobs in a 2 ms round trip: 48 jobs
// ahead, not 32 (with 32, 16 were in hand when a claim started, one round
// trip's worth, and the slots of a 2–5 ms handlers bench waited on an
// empty pool 14–40% of their time).
func TestPrefetchKeepsWorkInHandBesideAClaimInFlight(t *testing.T) {
	t.Parallel()
	const slots = 32
	perJob, rtt := 4*time.Millisecond, 2*time.Millisecond
	f := newPrefetch(slots, 0, time.Hour)
	var done int64
	var slotTime time.Duration
	depth := 0
	for range 10 {
		f.claimed(rtt)
		done += slots
		slotTime += slots * perJob
		depth = f.depth(done, slotTime)
	}
	perRoundTrip := int(slots * rtt / perJob) // what a claim in flight brings
	if inHand := depth - perRoundTrip; inHand < 2*perRoundTrip {
		t.Errorf("depth %d: %d jobs in hand beside a claim in flight of %d, want at least two round trips' worth (%d)",
			depth, inHand, perRoundTrip, 2*perRoundTrip)
	}
}

// Handlers that return at once let a pool claim beyond slots plus half:
// with 10 slots the claims grow from 7 towards fullClaim, past the 25 that
// four times the slots would allow, (10 + 4×10) / 2, and no claim asks for
// more than fullClaim.
func TestFastHandlersClaimLargerBatches(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[prefetchArgs]) error { return nil }, handlers.KindOpts{})
	const jobs = 3000
	items := make([]enqueue.Item, jobs)
	for i := range items {
		items[i] = enqueue.Item{Args: prefetchArgs{}}
	}
	if _, err := e.jobs.EnqueueMany(t.Context(), e.pool, items); err != nil {
		t.Fatal(err)
	}
	var largest atomic.Int64
	e.worker(reg, Config{
		Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 10}},
		OnClaim: func(_ time.Duration, n int) {
			for {
				old := largest.Load()
				if int64(n) <= old || largest.CompareAndSwap(old, int64(n)) {
					return
				}
			}
		},
	})
	waitFor(t, 30*time.Second, "every job done", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == jobs
	})
	t.Logf("largest claim: %d jobs", largest.Load())
	if n := largest.Load(); n <= 25 || n > fullClaim {
		t.Errorf("largest claim took %d jobs; want more than 25 (slots plus four times the slots, halved) and at most %d", n, fullClaim)
	}
}
