package queue_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Behind PgBouncer in transaction mode users pick a pgx query mode that
// prepares nothing; in the exec and simple-protocol modes pgx types each
// parameter from its Go type. Every protocol statement must work in them:
// a job is enqueued, and one job per outcome is claimed, heartbeated and
// finished.
func TestProtocolInQueryModesWithoutPreparing(t *testing.T) {
	t.Parallel()
	for _, mode := range []pgx.QueryExecMode{pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol} {
		t.Run(mode.String(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 2
			cfg.ConnConfig.DefaultQueryExecMode = mode
			pool, err := pgxpool.NewWithConfig(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer pool.Close()
			b := newBundle(t, pool, queue.Config{})
			me := uuid.New()
			b.EnqueueN(t, 5, enqueue.Opts{MaxAttempts: 3})
			// The single-job insert too, with every optional column set.
			if _, err := b.Jobs.Enqueue(ctx, pool, noop{N: 1}, enqueue.Opts{Queue: "other", UniqueKey: "k",
				Tenant: "t", SerialKey: "s", Meta: map[string]string{"m": "v"}}); err != nil {
				t.Fatalf("enqueue: %v", err)
			}
			jobs := b.Claim(t, me, 5, time.Minute)
			if len(jobs) != 5 {
				t.Fatalf("claimed %d jobs, want 5", len(jobs))
			}
			runs := jobtest.RunsOf(jobs)
			if got, err := heldIDs(b.Q.Heartbeat(ctx, pool, me, runs, time.Minute, []queue.Progress{{ID: runs[0].ID, Value: json.RawMessage(`{"done":1}`), Message: "one"}})); err != nil || len(got) != 5 {
				t.Fatalf("heartbeat: %d jobs, %v", len(got), err)
			}
			if got, err := b.Q.Complete(ctx, pool, me, runs[:1], time.Time{}); err != nil || len(got) != 1 {
				t.Fatalf("complete: %d jobs, %v", len(got), err)
			}
			res, err := b.Q.Fail(ctx, pool, me, []queue.Failure{{Run: runs[1], Error: "boom", Delay: time.Second}})
			if err != nil || len(res.Retried) != 1 {
				t.Fatalf("fail: %+v, %v", res, err)
			}
			if got, err := b.Q.Snooze(ctx, pool, me, []queue.Snoozed{{Run: runs[2], Delay: time.Second}}); err != nil || len(got) != 1 {
				t.Fatalf("snooze: %d jobs, %v", len(got), err)
			}
			if got, err := b.Q.DeadLetter(ctx, pool, me, []queue.Dead{{Run: runs[3], Reason: core.ReasonCancelled, Error: "no"}}); err != nil || len(got) != 1 {
				t.Fatalf("dead-letter: %d jobs, %v", len(got), err)
			}
			if got, err := b.Q.Release(ctx, pool, me, runs[4:]); err != nil || len(got) != 1 {
				t.Fatalf("release: %d jobs, %v", len(got), err)
			}
			if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs_done")); n != 1 {
				t.Errorf("%d jobs in history, want 1", n)
			}
			if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs_dead")); n != 1 {
				t.Errorf("%d dead jobs, want 1", n)
			}
			if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE state <> 'running' AND queue = 'default'`); n != 3 {
				t.Errorf("%d jobs waiting again, want 3 (retried, snoozed, released)", n)
			}
		})
	}
}
