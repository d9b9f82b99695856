package worker

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5"
)

// partArgs is a job of the partition tests: transactional or plain.
type partArgs struct{ N int }

func (partArgs) Kind() string { return "part_tx" }

type partPlainArgs struct{ N int }

func (partPlainArgs) Kind() string { return "part_plain" }

// partitionEnv is a migrated schema without history partitions (as a
// team's own migration tool leaves it, applying the files of `docket
// migrate sql`), an effects table and a registry whose transactional
// handler writes one effect per job.
func partitionEnv(t *testing.T) (*env, *handlers.Registry) {
	t.Helper()
	schema := pgtest.Schema(t)
	pool := pgtest.PoolN(t, 12)
	e := migratedBySQLOn(t, pool, schema)
	if parts, err := partition.Of(e.q.Schema()).List(t.Context(), pool); err != nil || len(parts) != 0 {
		t.Fatalf("fresh schema has partitions %v (%v)", parts, err)
	}
	createEffects(t, pool, schema)
	effect := fmt.Sprintf(sqlEffect, schema)
	reg := handlers.NewRegistry()
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[partArgs]) error {
		_, err := tx.Exec(ctx, effect, j.ID, j.Attempt, j.Kind, "w")
		return err
	}, handlers.KindOpts{})
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[partPlainArgs]) error {
		_, err := pool.Exec(ctx, effect, j.ID, j.Attempt, j.Kind, "w")
		return err
	}, handlers.KindOpts{})
	return e, reg
}

// enqueueParts enqueues n jobs of each kind with one attempt each.
func enqueueParts(t *testing.T, e *env, tx, plain int) {
	t.Helper()
	items := make([]enqueue.Item, 0, tx+plain)
	for i := range tx {
		items = append(items, enqueue.Item{Args: partArgs{N: i}, Opts: enqueue.Opts{MaxAttempts: 1}})
	}
	for i := range plain {
		items = append(items, enqueue.Item{Args: partPlainArgs{N: i}, Opts: enqueue.Opts{MaxAttempts: 1}})
	}
	if _, err := e.jobs.EnqueueMany(t.Context(), e.pool, items); err != nil {
		t.Fatal(err)
	}
}

// startPartWorker creates and starts a worker on e with lease (zero: the
// default) and clock now when not nil, stopped when the test ends.
func startPartWorker(t *testing.T, e *env, reg *handlers.Registry, lease time.Duration, now func() time.Time) {
	t.Helper()
	w, err := New(Config{
		DB: e.pool, Schema: e.schema, Handlers: reg, PollInterval: 50 * time.Millisecond, Lease: lease,
		Pools:  []PoolConfig{{Queues: []string{enqueue.DefaultQueue}, Concurrency: 40}},
		Logger: e.logs.logger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	w.fin.now, w.partitions.now = now, now
	if err := w.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Stop(context.Background()) })
}

// checkNoAttemptSpent checks that every job completed once, none dead, and
// each has exactly one effect.
func checkNoAttemptSpent(t *testing.T, e *env, jobs int) {
	t.Helper()
	waitFor(t, 60*time.Second, "every job finished", func() bool {
		return e.tryCount(`SELECT count(*) FROM {{schema}}.docket_jobs`) == 0
	})
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_dead`); n != 0 {
		t.Errorf("%d jobs dead-lettered, want 0", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`); n != jobs {
		t.Errorf("%d jobs in history, want %d", n, jobs)
	}
	if n, d := e.count(`SELECT count(*) FROM {{schema}}.effects`), e.count(`SELECT count(DISTINCT job_id) FROM {{schema}}.effects`); n != jobs || d != jobs {
		t.Errorf("%d effects for %d jobs, want %d each", n, d, jobs)
	}
}

// TestFreshSchemaSpendsNoAttemptOnPartitions: a worker started right after
// migration on a schema without history partitions completes 500
// transactional and 100 plain jobs with one attempt each, ten times over:
// no job is dead-lettered, every effect is written exactly once, and no
// outcome write fails or gives up (they did while the first completions
// waited for partitions to be created, long enough for a 2-second lease to
// run out). The lease is the default one: on a loaded machine a 2-second
// lease can run out for reasons of its own, and a job on its last attempt
// is then dead-lettered by the reaper, which is not what this test is about.
// The missing partitions meet the first completions of 40 slots; 600 jobs
// keep them busy well past that, and the ten runs are what repeat it.
func TestFreshSchemaSpendsNoAttemptOnPartitions(t *testing.T) {
	t.Parallel()
	for i := range 10 {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e, reg := partitionEnv(t)
			enqueueParts(t, e, 500, 100)
			startPartWorker(t, e, reg, 0, nil)
			checkNoAttemptSpent(t, e, 600)
			for _, bad := range []string{"giving up writing", "writing job outcomes failed", "completing a transactional job failed"} {
				if e.logs.contains(bad) {
					t.Errorf("worker logged %q", bad)
				}
			}
		})
	}
}

// TestMidnightSpendsNoAttemptOnPartitions runs jobs across midnight UTC on
// a worker clock that stands three seconds before it until the first jobs
// finished, then goes twice as fast as the real one (standing first, so
// that a loaded machine cannot carry the clock past midnight before any job
// finishes). Finish times, and so history partitions, follow that clock.
// With the next day's partition made ahead, and with it dropped right
// before midnight (the completions create it again), no job spends an
// attempt and jobs land on both days.
func TestMidnightSpendsNoAttemptOnPartitions(t *testing.T) {
	t.Parallel()
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("next day dropped %v", drop), func(t *testing.T) {
			t.Parallel()
			e, reg := partitionEnv(t)
			midnight := time.Date(2031, 7, 1, 0, 0, 0, 0, time.UTC)
			var mu sync.Mutex
			var start time.Time // zero: the clock stands
			clock := func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				if start.IsZero() {
					return midnight.Add(-3 * time.Second)
				}
				return midnight.Add(-3*time.Second + 2*time.Since(start))
			}
			startPartWorker(t, e, reg, 0, clock)
			if drop {
				e.exec(`DROP TABLE {{schema}}.docket_jobs_done_20310701`)
			}
			enqueueParts(t, e, 50, 50)
			waitFor(t, 30*time.Second, "the first jobs to finish before midnight", func() bool {
				return e.tryCount(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) > 0
			})
			mu.Lock()
			start = time.Now()
			mu.Unlock()
			// Jobs arrive in waves until after midnight, and once more when
			// it has passed, so that some surely finish after it.
			for wave := 0; clock().Before(midnight.Add(time.Second)); wave++ {
				enqueueParts(t, e, 50, 50)
				time.Sleep(50 * time.Millisecond)
				if wave > 200 {
					t.Fatal("the worker clock does not advance")
				}
			}
			enqueueParts(t, e, 50, 50)
			jobs := e.count(`SELECT (SELECT count(*) FROM {{schema}}.docket_jobs) + (SELECT count(*) FROM {{schema}}.docket_jobs_done)`)
			checkNoAttemptSpent(t, e, jobs)
			before := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done_20310630`)
			after := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done_20310701`)
			if before == 0 || after == 0 || before+after != jobs {
				t.Errorf("%d jobs finished before midnight and %d after, of %d: want some on each day, all on one of them", before, after, jobs)
			}
		})
	}
}
