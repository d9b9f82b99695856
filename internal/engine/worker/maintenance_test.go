package worker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5"
)

func TestPartitionUpkeep(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	now := time.Now().UTC()
	for _, daysAgo := range []int{30, 5, 1} {
		if err := partition.Of(e.q.Schema()).Ensure(t.Context(), e.pool, now.AddDate(0, 0, -daysAgo), 0); err != nil {
			t.Fatal(err)
		}
	}
	name := func(d time.Time) string { return "docket_jobs_done_" + d.Format("20060102") }
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[testArgs]) error { return nil }, handlers.KindOpts{})
	e.worker(reg, Config{HistoryRetention: 3 * 24 * time.Hour})
	parts := func() []string {
		p, err := partition.Of(e.q.Schema()).List(t.Context(), e.pool)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	waitFor(t, 10*time.Second, "old partitions dropped", func() bool {
		p := parts()
		return !slices.Contains(p, name(now.AddDate(0, 0, -30))) && !slices.Contains(p, name(now.AddDate(0, 0, -5)))
	})
	p := parts()
	if !slices.Contains(p, name(now.AddDate(0, 0, -1))) {
		t.Errorf("yesterday's partition dropped within the 3-day retention: %v", p)
	}
	for i := range partition.Ahead + 1 {
		if !slices.Contains(p, name(now.AddDate(0, 0, i))) {
			t.Errorf("partition for today+%d missing: %v", i, p)
		}
	}
}

// A retry or snooze without delay is ready at once; the worker claims it
// again without waiting for its poll interval.
func TestZeroDelayRetryRunsAtOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	runs := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		switch runs.add(j.ID) {
		case 1:
			return handlers.Snooze(0)
		case 2:
			return handlers.RetryAfter(0, nil)
		}
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{PollInterval: 10 * time.Second})
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	e.waitWhere(id, "done", 5*time.Second)
	at := runs.times(id)
	if took := at[len(at)-1].Sub(at[0]); took > time.Second {
		t.Errorf("three runs took %s: the zero-delay retries waited for a poll", took)
	}
}

// Jobs of a crashed worker are reaped once their lease expires and run
// again by a live worker.
func TestReaperRequeuesExpiredLeases(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	// A worker that claims and vanishes.
	if _, err := e.q.Claim(t.Context(), e.pool, queue.ClaimParams{Worker: [16]byte{9}, Queues: []string{"default"},
		Kinds: []string{"test"}, Limit: 1, Lease: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	runs := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error { runs.add(j.ID); return nil }, handlers.KindOpts{})
	e.worker(reg, Config{})
	e.waitWhere(id, "done", 5*time.Second)
	if n := e.count(`SELECT attempts FROM {{schema}}.docket_jobs_done WHERE id = $1`, id); n != 2 {
		t.Errorf("attempts %d, want 2 (the lost run counts)", n)
	}
}

// A worker whose jobs never wait (no serial keys, no workflows) runs none
// of the sweeps at its poll rounds, only their cheap probe; once a job
// waits for one (a serial job enqueued at REPEATABLE READ, whose line has
// no holder), the sweeps run again and it is made ready within about a
// poll interval.
func TestSweepsOnlyWhenJobsWait(t *testing.T) {
	t.Parallel()
	counter := &statementCounter{match: func(sql string) bool { return strings.Contains(sql, "docket_serial_sweep") }}
	e := setupOn(t, countedPool(t, counter), pgtest.Schema(t))
	counter.n.Store(0) // the migrations that create the sweep
	ran := make(chan struct{}, 1)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[serialArgs]) error {
		ran <- struct{}{}
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{PollInterval: 50 * time.Millisecond})
	time.Sleep(500 * time.Millisecond) // ten poll rounds
	if n := counter.n.Load(); n != 0 {
		t.Fatalf("%d serial sweeps in ten poll rounds without a waiting job, want none", n)
	}
	tx, err := e.pool.BeginTx(t.Context(), pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.jobs.Enqueue(t.Context(), tx, serialArgs{Key: "k"}, enqueue.Opts{SerialKey: "k"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatalf("the waiting serial job did not run; %d serial sweeps", counter.n.Load())
	}
	if counter.n.Load() == 0 {
		t.Fatal("the waiting serial job ran without a sweep")
	}
}
