package schedule_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/outbox"
	"github.com/docketq/docket/schedule"
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
	wired := e.service(schedule.Config{})
	if err := wired.Attach(reg, "report"); err != nil {
		t.Fatal(err)
	}
	s := schedule.Schedule{Name: "r", Spec: "@hourly", Args: report{}}
	triggered := func(want schedule.RunOptions) {
		t.Helper()
		id, err := e.svc.Trigger(ctx, "r")
		if err != nil {
			t.Fatal(err)
		}
		var got schedule.RunOptions
		if err := e.pool.QueryRow(ctx, e.sql(`SELECT queue, priority, max_attempts FROM {{schema}}.docket_jobs WHERE id = $1`), id).
			Scan(&got.Queue, &got.Priority, &got.MaxAttempts); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("triggered run got %+v, want %+v", got, want)
		}
	}
	stored := func(want *schedule.RunOptions) {
		t.Helper()
		got := e.info("r").Run
		if (got == nil) != (want == nil) || got != nil && *got != *want {
			t.Errorf("stored run options %+v, want %+v", got, want)
		}
	}

	if err := wired.Register(ctx, s); err != nil {
		t.Fatal(err)
	}
	kinds := schedule.RunOptions{Queue: "reports", Priority: 2, MaxAttempts: 4}
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
	stored(&schedule.RunOptions{Queue: "reports", Priority: 7, MaxAttempts: 4})

	s.Queue = "urgent"
	if err := e.svc.Register(ctx, s); err != nil { // a changed template, kind unknown
		t.Fatal(err)
	}
	stored(nil)
	triggered(schedule.RunOptions{Queue: "urgent", Priority: 7, MaxAttempts: outbox.DefaultMaxAttempts})
}

// digest carries its own options, as an enqueue's args may.
type digest struct{}

func (digest) Kind() string { return "digest" }
func (digest) Opts() outbox.Opts {
	return outbox.Opts{Queue: "digests", Priority: 6, MaxAttempts: 2, Tenant: "acme"}
}

// A schedule's args' own Opts apply to its runs as to any enqueue: under
// the schedule's fields, over the kind's registered defaults; fired and
// triggered runs alike.
func TestScheduleRunsTakeTheArgsOwnOpts(t *testing.T) {
	t.Parallel()
	e := setup(t, 4, time.Now())
	ctx := t.Context()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[digest]) error { return nil },
		handlers.KindOpts{Queue: "mail", Priority: 1, MaxAttempts: 9})
	wired := e.service(schedule.Config{})
	if err := wired.Attach(reg, "digest"); err != nil {
		t.Fatal(err)
	}
	if err := wired.Register(ctx, schedule.Schedule{Name: "d", Spec: "@hourly", Args: digest{}, MaxAttempts: 3}); err != nil {
		t.Fatal(err)
	}
	want := [4]any{"digests", 6, 3, "acme"} // the schedule's attempts, the args' others
	check := func(what string, id int64) {
		t.Helper()
		var q, tenant string
		var prio, attempts int
		if err := e.pool.QueryRow(ctx, e.sql(`SELECT queue, priority, max_attempts, coalesce(tenant, '') FROM {{schema}}.docket_jobs WHERE id = $1`), id).
			Scan(&q, &prio, &attempts, &tenant); err != nil {
			t.Fatal(err)
		}
		if got := [4]any{q, prio, attempts, tenant}; got != want {
			t.Errorf("%s run: queue, priority, attempts, tenant = %v, want %v", what, got, want)
		}
	}
	var pending int64
	if err := e.pool.QueryRow(ctx, e.sql(`SELECT id FROM {{schema}}.docket_jobs WHERE unique_key = 'schedule:d'`)).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	check("pending", pending)
	for what, svc := range map[string]*schedule.Service{"triggered by the wired service": wired, "triggered without a registry": e.svc} {
		id, err := svc.Trigger(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		check(what, id)
	}
}
