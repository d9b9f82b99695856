package handlers

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/outbox"
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
	reg := NewRegistry()
	MustRegister(reg, func(ctx context.Context, j *Job[prefetchArgs]) error {
		time.Sleep(time.Duration(j.Args.SleepMS) * time.Millisecond)
		return nil
	}, KindOpts{})
	// One slot and 1 s handlers: the fourth job waits 3 s for its slot,
	// one and a half leases. The lease leaves a heartbeat 1.3 s of slack,
	// so that a loaded machine (the race pass in CI) cannot lose a run.
	const jobs = 5
	for range jobs {
		e.enqueue(prefetchArgs{SleepMS: 1000}, outbox.Opts{})
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
	reg := NewRegistry()
	MustRegister(reg, func(ctx context.Context, j *Job[prefetchArgs]) error {
		running.Add(1)
		<-ctx.Done()
		return ctx.Err()
	}, KindOpts{})
	for range 10 {
		e.enqueue(prefetchArgs{Block: true}, outbox.Opts{})
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
// each other work. The handlers take 200 ms, so that the backlog outlasts a
// claim delayed by a loaded machine (with 50 ms, one worker once ran all 40
// before the other's first claim returned).
func TestShortBacklogIsShared(t *testing.T) {
	t.Parallel()
	e := setup(t, 16)
	var ran [2]atomic.Int64
	cfg := Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 16}}}
	for i := range ran {
		reg := NewRegistry()
		MustRegister(reg, func(ctx context.Context, j *Job[prefetchArgs]) error {
			time.Sleep(time.Duration(j.Args.SleepMS) * time.Millisecond)
			ran[i].Add(1)
			return nil
		}, KindOpts{})
		e.worker(reg, cfg)
	}
	items := make([]outbox.Item, 40)
	for i := range items {
		items[i] = outbox.Item{Args: prefetchArgs{SleepMS: 200}}
	}
	if _, err := e.ob.EnqueueMany(t.Context(), e.pool, items); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 20*time.Second, "40 jobs done", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == 40
	})
	na, nb := ran[0].Load(), ran[1].Load()
	t.Logf("worker a ran %d jobs, worker b %d", na, nb)
	if na == 0 || nb == 0 || na+nb != 40 {
		t.Errorf("worker a ran %d jobs and b %d of 40: want both some", na, nb)
	}
}
