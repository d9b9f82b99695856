package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/scheduler"
	"github.com/jackc/pgx/v5"
)

// pendingRun returns the pending run of schedule name as a worker would
// claim it for its first attempt.
func (e *env) pendingRun(name string) *core.Job {
	e.t.Helper()
	j := &core.Job{Attempt: 1}
	err := e.pool.QueryRow(context.Background(), e.sql(`SELECT id, kind, unique_key, meta FROM {{schema}}.docket_jobs WHERE unique_key = $1`),
		scheduler.KeyPrefix+name).Scan(&j.ID, &j.Kind, &j.UniqueKey, &j.Meta)
	if err != nil {
		e.t.Fatalf("pending run of %s: %v", name, err)
	}
	return j
}

// finish does what a worker with the service's middleware and hook does
// with a claimed run: it calls the handler unless the middleware skips the
// run, then removes the job and writes the next run in one transaction. It
// reports whether the handler ran.
func (e *env) finish(j *core.Job) bool {
	e.t.Helper()
	ran := false
	work := e.svc.Middleware()(func(context.Context, *core.Job) error { ran = true; return nil })
	if err := work(context.Background(), j); err != nil {
		e.t.Fatal(err)
	}
	err := pgx.BeginFunc(context.Background(), e.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(context.Background(), e.sql(`DELETE FROM {{schema}}.docket_jobs WHERE id = $1`), j.ID); err != nil {
			return err
		}
		return e.svc.Hook()(context.Background(), tx, []*core.Job{j}, nil)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return ran
}

// An "@every 2s" schedule whose workers were down: on their return, Skip
// and RunOnce run at most one late run and go back on the schedule's grid
// at the first fire time ahead; CatchUp runs every missed fire time. The
// simulated worker takes every run that is due by the service's clock, so
// a run enqueued in the past would be counted.
func TestMissedRunsAfterOutage(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		policy scheduler.Misfire
		down   time.Duration // from the first fire time to the workers' return, less 500ms
		ran    int           // handler calls until the schedule is on time
		due    int           // runs the workers took (ran or skipped)
	}{
		{scheduler.Skip, 40 * time.Second, 1, 1}, // late by less than the 1m grace: runs
		{scheduler.Skip, 90 * time.Second, 0, 1}, // late by more: skipped
		{scheduler.RunOnce, 40 * time.Second, 1, 1},
		{scheduler.RunOnce, 90 * time.Second, 1, 1}, // one catch-up, however late
		{scheduler.CatchUp, 40 * time.Second, 21, 21},
		{scheduler.CatchUp, 90 * time.Second, 46, 46}, // every fire time, however late
	} {
		t.Run(string(c.policy)+"/"+c.down.String(), func(t *testing.T) {
			t.Parallel()
			t0 := time.Now().Truncate(time.Second)
			e := setup(t, 4, t0)
			if err := e.svc.Register(t.Context(), scheduler.Schedule{Name: "tick", Spec: "@every 2s", Args: report{}, Misfire: c.policy}); err != nil {
				t.Fatal(err)
			}
			first := e.info("tick").NextFire
			// The workers return between two fire times.
			e.clock.Set(first.Add(c.down + 500*time.Millisecond))
			ran, due := 0, 0
			for range 100 {
				j := e.pendingRun("tick")
				fire, err := time.Parse(time.RFC3339Nano, j.Meta[scheduler.MetaFire])
				if err != nil {
					t.Fatal(err)
				}
				if fire.After(e.clock.Now()) {
					break // not due: the schedule is on time again
				}
				due++
				if e.finish(j) {
					ran++
				}
			}
			if ran != c.ran || due != c.due {
				t.Errorf("after %s down: %d runs due, %d ran; want %d due, %d ran", c.down, due, ran, c.due, c.ran)
			}
			// Back on the grid: the first fire time after the return.
			want := first.Add(c.down + 2*time.Second)
			if in := e.info("tick"); !in.NextFire.Equal(want) {
				t.Errorf("next fire %s, want %s (first ahead, on the grid)", in.NextFire.Format(time.RFC3339), want.Format(time.RFC3339))
			}
			// And from there on, one run per period.
			e.clock.Set(want.Add(100 * time.Millisecond))
			if !e.finish(e.pendingRun("tick")) {
				t.Error("the run on time was skipped")
			}
			if got := e.info("tick").NextFire; !got.Equal(want.Add(2 * time.Second)) {
				t.Errorf("next fire %s after the run on time, want %s", got.Format(time.RFC3339), want.Add(2*time.Second).Format(time.RFC3339))
			}
		})
	}
}
