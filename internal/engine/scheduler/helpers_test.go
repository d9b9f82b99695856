package scheduler_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/engine/scheduler"
	"github.com/docketq/docket/internal/engine/worker"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// clock is a settable simulated clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

type env struct {
	t      *testing.T
	pool   *pgxpool.Pool
	schema string
	jobs   *enqueue.Client
	q      *queue.Queue // the worker protocol, to claim jobs by hand
	clock  *clock
	svc    *scheduler.Service
}

func setup(t *testing.T, maxConns int32, start time.Time) *env {
	t.Helper()
	ctx := t.Context()
	pool := pgtest.PoolN(t, maxConns)
	schema := pgtest.Schema(t)
	jobs, err := enqueue.New(enqueue.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, pool: pool, schema: schema, jobs: jobs, q: q, clock: &clock{t: start}}
	e.svc = e.service(scheduler.Config{})
	return e
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// service returns a service on the test's schema and clock. A cfg with
// Kinds and Attached is wired as docket.NewClient wires the service of a
// client whose registry runs those kinds (see worker); without them it is
// a service for operations alone.
func (e *env) service(cfg scheduler.Config) *scheduler.Service {
	e.t.Helper()
	cfg.DB, cfg.Jobs, cfg.Clock = e.pool, e.jobs, e.clock.Now
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	s, err := scheduler.New(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// wired returns a service wired to a worker that runs reg, with the hook
// on kinds, as docket.NewClient makes it for a client with schedules of
// those kinds.
func (e *env) wired(reg *handlers.Registry, kinds ...string) *scheduler.Service {
	e.t.Helper()
	return e.service(scheduler.Config{Kinds: reg, Attached: kinds})
}

// worker starts a worker running reg with the service's middleware; it is
// stopped when the test ends.
func (e *env) worker(reg *handlers.Registry) *worker.Worker {
	e.t.Helper()
	hooks := map[string]worker.OutcomeHook{}
	for _, k := range reg.Kinds() {
		hooks[k] = e.svc.Hook()
	}
	w, err := worker.New(worker.Config{
		DB: e.pool, Schema: e.schema, Handlers: reg, Hooks: hooks, PollInterval: 50 * time.Millisecond,
		Lease: 5 * time.Second, ShutdownTimeout: 5 * time.Second, Logger: quiet(),
		Middleware: []handlers.Middleware{e.svc.Middleware()},
	})
	if err != nil {
		e.t.Fatal(err)
	}
	if err := w.Start(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = w.Stop(context.Background()) })
	return w
}

func (e *env) sql(s string) string { return strings.ReplaceAll(s, "{{schema}}", `"`+e.schema+`"`) }

func (e *env) exec(sql string, args ...any) {
	e.t.Helper()
	if _, err := e.pool.Exec(context.Background(), e.sql(sql), args...); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
}

func (e *env) count(sql string, args ...any) int {
	e.t.Helper()
	var n int
	if err := e.pool.QueryRow(context.Background(), e.sql(sql), args...).Scan(&n); err != nil {
		e.t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (e *env) info(name string) scheduler.Info {
	e.t.Helper()
	list, err := e.svc.List(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, i := range list {
		if i.Name == name {
			return i
		}
	}
	e.t.Fatalf("schedule %s not listed", name)
	return scheduler.Info{}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// report is the job kind of the tests' schedules.
type report struct {
	Tenant string `json:"tenant"`
}

func (report) Kind() string { return "report" }

func claimParams() queue.ClaimParams {
	return queue.ClaimParams{Worker: uuid.New(), Queues: []string{"default"}, Kinds: []string{"report"}, Limit: 10, Lease: time.Minute}
}
