package worker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
)

// A job's queue, priority and max attempts are resolved once, at enqueue
// (explicit opts > the args' Opts > KindOpts > defaults), and what was
// stored governs the job at run time. These tests enqueue through a client
// that knows the kinds, as docket.NewClient's does, with explicit values
// that differ from the kind's, and check what the worker does.

// kindsClient is an enqueue engine on the env's schema that applies reg's
// kind defaults, as the one docket.NewClient builds.
func (e *env) kindsClient(reg *handlers.Registry) *enqueue.Client {
	e.t.Helper()
	c, err := enqueue.New(enqueue.Config{Schema: e.schema, Kinds: reg})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

func enqueueVia(t testing.TB, e *env, c *enqueue.Client, args interface{ Kind() string }, opts enqueue.Opts) int64 {
	t.Helper()
	res, err := c.Enqueue(t.Context(), e.pool, args, opts)
	if err != nil {
		t.Fatal(err)
	}
	return res.ID
}

func TestStoredMaxAttemptsGovernRetries(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	runs := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		runs.add(j.ID)
		return errors.New("always fails")
	}, handlers.KindOpts{MaxAttempts: 2, Backoff: func(int) time.Duration { return 0 }})
	c := e.kindsClient(reg)
	jobs := map[int64]int{ // id: the max attempts it must get
		enqueueVia(t, e, c, testArgs{N: 1}, enqueue.Opts{MaxAttempts: 5}): 5, // more than the kind's
		enqueueVia(t, e, c, testArgs{N: 2}, enqueue.Opts{MaxAttempts: 1}): 1, // fewer
		enqueueVia(t, e, c, testArgs{N: 3}, enqueue.Opts{}):               2, // the kind's
	}
	e.worker(reg, Config{})
	for id, want := range jobs {
		e.waitWhere(id, "dead", 20*time.Second)
		d := e.dead(id)
		if d.reason != core.ReasonExhausted || d.attempts != want {
			t.Errorf("job %d dead with reason %q after %d attempts, want %q after %d", id, d.reason, d.attempts, core.ReasonExhausted, want)
		}
		if n := runs.get(id); n != want {
			t.Errorf("job %d ran %d times, want %d", id, n, want)
		}
		// What `docket jobs show` and the dashboard print: "attempts N of M".
		if m := e.count(`SELECT max_attempts FROM {{schema}}.docket_jobs_dead WHERE id = $1`, id); m != want {
			t.Errorf("job %d: max_attempts %d, want %d", id, m, want)
		}
	}
}

// The reaper dead-letters a lost run on the job's stored last attempt, and
// requeues it before that, whatever the kind's MaxAttempts says.
func TestReaperObeysStoredMaxAttempts(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error { return nil }, handlers.KindOpts{MaxAttempts: 5})
	c := e.kindsClient(reg)
	// In a queue the live worker does not serve: only its reaper touches them.
	last := enqueueVia(t, e, c, testArgs{N: 1}, enqueue.Opts{Queue: "held", MaxAttempts: 1})
	more := enqueueVia(t, e, c, testArgs{N: 2}, enqueue.Opts{Queue: "held", MaxAttempts: 2})
	// A worker that claims both and vanishes.
	got, err := e.q.Claim(t.Context(), e.pool, queue.ClaimParams{Worker: [16]byte{9}, Queues: []string{"held"},
		Kinds: []string{"test"}, Limit: 2, Lease: 200 * time.Millisecond})
	if err != nil || len(got) != 2 {
		t.Fatalf("claim: %d jobs, %v", len(got), err)
	}
	e.worker(reg, Config{})
	e.waitWhere(last, "dead", 10*time.Second)
	if d := e.dead(last); d.reason != core.ReasonLeaseExpired || d.attempts != 1 {
		t.Errorf("job on its stored last attempt: dead %+v, want lease_expired after 1 attempt", d)
	}
	e.waitWhere(more, "ready", 10*time.Second)
	if n := e.count(`SELECT attempts FROM {{schema}}.docket_jobs WHERE id = $1`, more); n != 1 {
		t.Errorf("requeued job has %d attempts, want 1", n)
	}
}

func TestExplicitQueueRunsInThatQueuesPool(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	var queues syncSlice[string]
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		queues.add(j.Queue)
		return nil
	}, handlers.KindOpts{Queue: "kind-queue"})
	c := e.kindsClient(reg)
	byKind := enqueueVia(t, e, c, testArgs{N: 1}, enqueue.Opts{})
	explicit := enqueueVia(t, e, c, testArgs{N: 2}, enqueue.Opts{Queue: "explicit-queue"})
	// The only pool serves the explicit queue, not the kind's.
	e.worker(reg, Config{Pools: []PoolConfig{{Name: "explicit", Queues: []string{"explicit-queue"}, Concurrency: 2}}})
	e.waitWhere(explicit, "done", 10*time.Second)
	if got := queues.get(); !slices.Equal(got, []string{"explicit-queue"}) {
		t.Errorf("handler ran jobs of queues %v, want only explicit-queue", got)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = $1 AND queue = 'kind-queue'
		AND state = 'ready' AND attempts = 0`, byKind); n != 1 {
		t.Errorf("the job in the kind's queue was run by the explicit queue's pool (where: %s)", e.where(byKind))
	}
}

func TestExplicitPriorityOrdersRuns(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	var order syncSlice[int]
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		order.add(j.Args.N)
		return nil
	}, handlers.KindOpts{Priority: 5})
	c := e.kindsClient(reg)
	// Enqueued lowest first, so that id order is the reverse of priority
	// order. N is the priority each must run with.
	ids := []int64{
		enqueueVia(t, e, c, testArgs{N: -3}, enqueue.Opts{Priority: -3}),
		enqueueVia(t, e, c, testArgs{N: 5}, enqueue.Opts{}),
		enqueueVia(t, e, c, testArgs{N: 9}, enqueue.Opts{Priority: 9}),
	}
	// One slot, nothing held ahead: each claim takes the best ready job.
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 1, Prefetch: -1}}})
	for _, id := range ids {
		e.waitWhere(id, "done", 10*time.Second)
	}
	if got := order.get(); !slices.Equal(got, []int{9, 5, -3}) {
		t.Errorf("ran in priority order %v, want [9 5 -3]", got)
	}
}
