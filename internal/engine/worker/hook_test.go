package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/jackc/pgx/v5"
)

type hookTxArgs struct{}

func (hookTxArgs) Kind() string { return "hook_tx" }

// The hook runs in the transaction that writes final outcomes: its writes
// commit with them; a failing hook rolls the outcome back until it succeeds.
func TestOutcomeHook(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	e.exec(`CREATE TABLE {{schema}}.hook_log (job_id bigint, outcome text)`)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		switch j.Args.N {
		case 1:
			return handlers.Cancel(errors.New("no"))
		case 2:
			return errors.New("always fails")
		}
		return nil
	}, handlers.KindOpts{Backoff: func(int) time.Duration { return 0 }})
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[hookTxArgs]) error { return nil }, handlers.KindOpts{})
	var failures atomic.Int32
	failures.Store(2)
	hook := func(ctx context.Context, tx pgx.Tx, done, dead []*core.Job) error {
		for _, j := range done {
			if j.Kind == "test" && failures.Add(-1) >= 0 {
				return errors.New("hook not ready")
			}
			if _, err := tx.Exec(ctx, e.sql(`INSERT INTO {{schema}}.hook_log VALUES ($1, 'done')`), j.ID); err != nil {
				return err
			}
		}
		for _, j := range dead {
			if _, err := tx.Exec(ctx, e.sql(`INSERT INTO {{schema}}.hook_log VALUES ($1, 'dead')`), j.ID); err != nil {
				return err
			}
		}
		return nil
	}
	bad := Config{DB: e.pool, Schema: e.schema, Handlers: reg, Hooks: map[string]OutcomeHook{"nope": hook}}
	if _, err := New(bad); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("hook of an unregistered kind: %v, want ErrInvalidConfig", err)
	}
	e.worker(reg, Config{Hooks: map[string]OutcomeHook{"test": hook, "hook_tx": hook}})
	ok := e.enqueue(testArgs{N: 0}, enqueue.Opts{})
	cancelled := e.enqueue(testArgs{N: 1}, enqueue.Opts{})
	exhausted := e.enqueue(testArgs{N: 2}, enqueue.Opts{MaxAttempts: 2})
	txJob := e.enqueue(hookTxArgs{}, enqueue.Opts{})
	e.waitWhere(ok, "done", 10*time.Second)
	e.waitWhere(txJob, "done", 10*time.Second)
	e.waitWhere(cancelled, "dead", 10*time.Second)
	e.waitWhere(exhausted, "dead", 10*time.Second)
	for id, want := range map[int64]string{ok: "done", txJob: "done", cancelled: "dead", exhausted: "dead"} {
		if n := e.count(`SELECT count(*) FROM {{schema}}.hook_log WHERE job_id = $1 AND outcome = $2`, id, want); n != 1 {
			t.Errorf("job %d: %d hook rows for %s, want 1", id, n, want)
		}
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.hook_log`); n != 4 {
		t.Errorf("%d hook rows, want 4 (a retry after a failed attempt is no final outcome)", n)
	}
	if failures.Load() >= 0 {
		t.Errorf("the failing hook was not retried")
	}
}
