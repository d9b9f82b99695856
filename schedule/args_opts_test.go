package schedule_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/scheduler"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/schedule"
)

// digest carries its own options, as an enqueue's args may.
type digest struct{}

func (digest) Kind() string { return "digest" }
func (digest) Opts() docket.Opts {
	return docket.Opts{Queue: "digests", Priority: 6, MaxAttempts: 2, Tenant: "acme"}
}

// A schedule's args' own Opts apply to its runs as to any enqueue: under
// the schedule's fields, over the kind's registered defaults; fired and
// triggered runs alike.
func TestScheduleRunsTakeTheArgsOwnOpts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.PoolN(t, 4)
	schema := pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[digest]) error { return nil },
		handlers.KindOpts{Queue: "mail", Priority: 1, MaxAttempts: 9})
	s := schedule.Schedule{Name: "d", Spec: "@hourly", Args: digest{}, MaxAttempts: 3}
	c, err := docket.NewClient(pool, docket.Config{
		Schema: schema, Registry: reg, Schedules: []schedule.Schedule{s},
		Worker: docket.WorkerConfig{Logger: slog.New(slog.DiscardHandler)},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Registered as Start does, without a worker to take the runs.
	if err := c.RegisterSchedules(ctx, s); err != nil {
		t.Fatal(err)
	}
	want := [4]any{"digests", 6, 3, "acme"} // the schedule's attempts, the args' others
	check := func(what string, id int64) {
		t.Helper()
		var q, tenant string
		var prio, attempts int
		if err := pool.QueryRow(ctx, `SELECT queue, priority, max_attempts, coalesce(tenant, '') FROM "`+schema+`".docket_jobs WHERE id = $1`, id).
			Scan(&q, &prio, &attempts, &tenant); err != nil {
			t.Fatal(err)
		}
		if got := [4]any{q, prio, attempts, tenant}; got != want {
			t.Errorf("%s run: queue, priority, attempts, tenant = %v, want %v", what, got, want)
		}
	}
	var pending int64
	if err := pool.QueryRow(ctx, `SELECT id FROM "`+schema+`".docket_jobs WHERE unique_key = 'schedule:d'`).Scan(&pending); err != nil {
		t.Fatal(err)
	}
	check("pending", pending)

	// The schedule service as the client wires it (it has the kind's
	// handler), and the operations of a process without it (the CLI, the
	// dashboard).
	jobs, err := enqueue.New(enqueue.Config{Schema: schema, Kinds: reg})
	if err != nil {
		t.Fatal(err)
	}
	wired, err := scheduler.New(scheduler.Config{DB: pool, Jobs: jobs, Kinds: reg, Attached: []string{"digest"}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for what, trigger := range map[string]func(context.Context, string) (int64, error){
		"triggered by the wired service": wired.Trigger,
		"triggered without a registry": func(ctx context.Context, name string) (int64, error) {
			return c.Admin().Schedules().Trigger(ctx, pool, name)
		},
	} {
		id, err := trigger(ctx, "d")
		if err != nil {
			t.Fatal(err)
		}
		check(what, id)
	}
}
