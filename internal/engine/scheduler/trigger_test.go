package scheduler_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/scheduler"
)

// The registering process stores what the runs get (template > the kind's
// KindOpts > defaults); a process without the kind's handler triggers runs
// with those options. A registration from such a process keeps them while
// it leaves the template as it was, and drops them when it changes it:
// then the template alone applies.
func TestRunOptionsStoredAtRegister(t *testing.T) {
	t.Parallel()
	e := setup(t, 4, time.Now())
	ctx := t.Context()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[report]) error { return nil },
		handlers.KindOpts{Queue: "reports", Priority: 2, MaxAttempts: 4})
	wired := e.wired(reg, "report")
	s := scheduler.Schedule{Name: "r", Spec: "@hourly", Args: report{}}
	triggered := func(want scheduler.RunOptions) {
		t.Helper()
		id, err := e.svc.Trigger(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		var got scheduler.RunOptions
		if err := e.pool.QueryRow(ctx, e.sql(`SELECT queue, priority, max_attempts FROM {{schema}}.docket_jobs WHERE id = $1`), id).
			Scan(&got.Queue, &got.Priority, &got.MaxAttempts); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("triggered run got %+v, want %+v", got, want)
		}
	}
	stored := func(want *scheduler.RunOptions) {
		t.Helper()
		got := e.info("r").Run
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("stored run options %+v, want %+v", got, want)
		}
	}

	if err := wired.Register(ctx, s); err != nil {
		t.Fatal(err)
	}
	kinds := scheduler.RunOptions{Queue: "reports", Priority: 2, MaxAttempts: 4}
	stored(&kinds)
	triggered(kinds)

	if err := e.svc.Register(ctx, s); err != nil { // the same template, kind unknown
		t.Fatal(err)
	}
	stored(&kinds)

	s.Priority = 7
	if err := wired.Register(ctx, s); err != nil {
		t.Fatal(err)
	}
	stored(&scheduler.RunOptions{Queue: "reports", Priority: 7, MaxAttempts: 4})

	s.Queue = "urgent"
	if err := e.svc.Register(ctx, s); err != nil { // a changed template, kind unknown
		t.Fatal(err)
	}
	stored(nil)
	triggered(scheduler.RunOptions{Queue: "urgent", Priority: 7, MaxAttempts: core.DefaultMaxAttempts})
}
