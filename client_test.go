package docket_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/schedule"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrated returns a pool and a fresh migrated schema.
func migrated(t *testing.T) (*pgxpool.Pool, string) {
	t.Helper()
	pool, schema := pgtest.Pool(t), pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(t.Context(), pool); err != nil {
		t.Fatal(err)
	}
	return pool, schema
}

func count(t *testing.T, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

type unhandled struct{}

func (unhandled) Kind() string { return "unhandled" }

func reportRegistry(t *testing.T) *handlers.Registry {
	t.Helper()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[DailyReport]) error { return nil }, handlers.KindOpts{})
	return reg
}

func TestNewClientRejects(t *testing.T) {
	t.Parallel()
	pool, schema := migrated(t)
	sched := []schedule.Schedule{{Name: "u", Spec: "@hourly", Args: unhandled{}}}
	for _, tc := range []struct {
		name string
		pool *pgxpool.Pool
		cfg  docket.Config
		want error
	}{
		{"nil pool", nil, docket.Config{}, docket.ErrInvalidConfig},
		{"negative Scheduler.Grace", pool, docket.Config{Registry: reportRegistry(t), Scheduler: schedule.Config{Grace: -time.Second}}, docket.ErrInvalidConfig},
		{"schedule of an unregistered kind", pool, docket.Config{Schema: schema, Registry: reportRegistry(t), Schedules: sched}, schedule.ErrNoHandler},
		{"schedules without a registry", pool, docket.Config{Schema: schema, Schedules: sched}, schedule.ErrNoHandler},
		{"invalid schema", pool, docket.Config{Schema: "Not Valid"}, docket.ErrInvalidSchema},
		{"invalid worker config", pool, docket.Config{Registry: reportRegistry(t), Worker: docket.WorkerConfig{Lease: -time.Second}}, docket.ErrInvalidConfig},
	} {
		c, err := docket.NewClient(tc.pool, tc.cfg)
		if !errors.Is(err, tc.want) || c != nil {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := docket.NewClient(pool, docket.Config{Schema: schema, Registry: reportRegistry(t), Schedules: sched}); err == nil ||
		!strings.Contains(err.Error(), `"u"`) || !strings.Contains(err.Error(), "unhandled") {
		t.Errorf("the error should name the schedule and its kind: %v", err)
	}
	if n := count(t, pool, `SELECT count(*) FROM "`+schema+`".docket_schedules`); n != 0 {
		t.Errorf("%d schedules written by rejected configs", n)
	}
}

// Without a registry the client only enqueues: any kind, built-in defaults;
// Start and Stop do nothing; no schedule can be registered through it.
func TestEnqueueOnlyClient(t *testing.T) {
	t.Parallel()
	pool, schema := migrated(t)
	c, err := docket.NewClient(pool, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if c.WorkerID() != uuid.Nil || c.MetricsAddr() != "" {
		t.Error("an enqueue-only client has a worker")
	}
	res, err := c.Enqueue(t.Context(), pool, unhandled{}, docket.Opts{})
	if err != nil || res.State != docket.StateReady {
		t.Fatalf("enqueue of any kind: %+v, %v", res, err)
	}
	var queue string
	var attempts int
	err = pool.QueryRow(t.Context(), `SELECT queue, max_attempts FROM "`+schema+`".docket_jobs WHERE id = $1`, res.ID).Scan(&queue, &attempts)
	if err != nil || queue != docket.DefaultQueue || attempts != docket.DefaultMaxAttempts {
		t.Errorf("built-in defaults: queue %q attempts %d, %v", queue, attempts, err)
	}
	err = c.RegisterSchedules(t.Context(), schedule.Schedule{Name: "r", Spec: "@hourly", Args: DailyReport{}})
	if !errors.Is(err, schedule.ErrNoHandler) {
		t.Errorf("Register through an enqueue-only client: %v, want ErrNoHandler", err)
	}
	if n := count(t, pool, `SELECT count(*) FROM "`+schema+`".docket_schedules`); n != 0 {
		t.Errorf("%d schedules written", n)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// With a registry, the client's enqueue applies the kind's defaults and
// rejects unknown kinds, and Outbox() is the same client for database/sql.
func TestClientEnqueueUsesRegistry(t *testing.T) {
	t.Parallel()
	pool, schema := migrated(t)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[SendReceipt]) error { return nil },
		handlers.KindOpts{Queue: "mail", Priority: 5, MaxAttempts: 3})
	c, err := docket.NewClient(pool, docket.Config{Schema: schema, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.EnqueueMany(t.Context(), pool, []docket.Item{{Args: SendReceipt{OrderID: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	var queue string
	var prio, attempts int
	err = pool.QueryRow(t.Context(), `SELECT queue, priority, max_attempts FROM "`+schema+`".docket_jobs WHERE id = $1`, out[0].ID).Scan(&queue, &prio, &attempts)
	if err != nil || queue != "mail" || prio != 5 || attempts != 3 {
		t.Errorf("kind's defaults: %q %d %d, %v", queue, prio, attempts, err)
	}
	if _, err := c.Enqueue(t.Context(), pool, unhandled{}, docket.Opts{}); !errors.Is(err, docket.ErrUnknownKind) {
		t.Errorf("unknown kind: %v, want ErrUnknownKind", err)
	}
	if n := count(t, pool, `SELECT count(*) FROM "`+schema+`".docket_jobs`); n != 1 {
		t.Errorf("%d jobs, want 1", n)
	}
}

// Schedules given in Config run with their hook and middleware attached:
// the next run follows each run; a schedule of another kind registered
// later is refused; Stop ends the reconciler and the worker.
func TestClientRunsConfiguredSchedules(t *testing.T) {
	t.Parallel()
	pool, schema := migrated(t)
	fires := make(chan string, 10)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, job *handlers.Job[DailyReport]) error {
		fires <- job.Meta[schedule.MetaFire]
		return nil
	}, handlers.KindOpts{Queue: "reports"})
	handlers.MustRegister(reg, func(context.Context, *handlers.Job[SendReceipt]) error { return nil }, handlers.KindOpts{})
	c, err := docket.NewClient(pool, docket.Config{
		Schema:    schema,
		Registry:  reg,
		Schedules: []schedule.Schedule{{Name: "tick", Spec: "@every 1s", Args: DailyReport{Tenant: "t"}}},
		Worker:    docket.WorkerConfig{PollInterval: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	if err := c.Start(t.Context()); !errors.Is(err, docket.ErrStarted) {
		t.Errorf("second Start: %v, want ErrStarted", err)
	}
	seen := map[string]bool{}
	deadline := time.After(15 * time.Second)
	for len(seen) < 3 {
		select {
		case f := <-fires:
			seen[f] = true
		case <-deadline:
			t.Fatalf("runs of %d fire times, want 3", len(seen))
		}
	}
	// The kind's registered queue applies to the runs (the default pool
	// serves it).
	if n := count(t, pool, `SELECT count(*) FROM "`+schema+`".docket_jobs WHERE kind = 'daily_report' AND queue <> 'reports'`); n != 0 {
		t.Errorf("%d runs outside the kind's queue", n)
	}
	err = c.RegisterSchedules(t.Context(), schedule.Schedule{Name: "other", Spec: "@hourly", Args: SendReceipt{}})
	if !errors.Is(err, schedule.ErrNoHandler) {
		t.Errorf("schedule of a kind without the hook: %v, want ErrNoHandler", err)
	}
	if n := count(t, pool, `SELECT count(*) FROM "`+schema+`".docket_schedules WHERE name = 'other'`); n != 0 {
		t.Error("the refused schedule was written")
	}
}
