// Package jobtest is the fixture the tests of the root package, admin and
// the worker protocol share: a migrated schema of a test's own, jobs
// enqueued through the enqueue engine and claimed through the worker
// protocol, so that a test can put jobs in whatever state it needs.
package jobtest

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Env is one test's migrated schema on a pool.
type Env struct {
	Ctx    context.Context
	Pool   *pgxpool.Pool
	Schema string
	Jobs   *enqueue.Client // enqueues into Schema, any kind, built-in defaults
	Q      *queue.Queue    // the worker protocol on Schema
}

// New migrates a fresh schema on pool (which also makes today's history
// partition and the days ahead) and returns its Env, whose Queue has cfg.
func New(t testing.TB, pool *pgxpool.Pool, cfg queue.Config) *Env {
	t.Helper()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	jobs, err := enqueue.New(enqueue.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(schema, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &Env{Ctx: ctx, Pool: pool, Schema: schema, Jobs: jobs, Q: q}
}

// Count runs a query that returns one integer, such as a count(*).
func (e *Env) Count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := e.Pool.QueryRow(e.Ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// Table is the schema-qualified name of one of Docket's tables.
func (e *Env) Table(name string) string { return `"` + e.Schema + `".` + name }

// Noop is the kind most tests enqueue; N tells its jobs apart.
type Noop struct {
	N int `json:"n"`
}

// Kind implements core.Args.
func (Noop) Kind() string { return "noop" }

// Other is a second kind.
type Other struct{}

// Kind implements core.Args.
func (Other) Kind() string { return "other" }

// EnqueueN enqueues n Noop jobs with opts and returns their ids.
func (e *Env) EnqueueN(t testing.TB, n int, opts enqueue.Opts) []int64 {
	t.Helper()
	items := make([]enqueue.Item, n)
	for i := range items {
		items[i] = enqueue.Item{Args: Noop{N: i}, Opts: opts}
	}
	out, err := e.Jobs.EnqueueMany(e.Ctx, e.Pool, items)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i, r := range out {
		ids[i] = r.ID
	}
	return ids
}

// Claim claims up to limit Noop jobs of queue "default" for worker.
func (e *Env) Claim(t testing.TB, worker uuid.UUID, limit int, lease time.Duration) []*core.Job {
	t.Helper()
	jobs, err := e.Q.Claim(e.Ctx, e.Pool, queue.ClaimParams{
		Worker: worker, Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: limit, Lease: lease,
	})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// RunsOf returns the runs of claimed jobs.
func RunsOf(jobs []*core.Job) []queue.Run {
	runs := make([]queue.Run, len(jobs))
	for i, j := range jobs {
		runs[i] = queue.RunOf(j)
	}
	return runs
}

// ByID returns the runs of claimed jobs by job id.
func ByID(jobs []*core.Job) map[int64]queue.Run {
	m := make(map[int64]queue.Run, len(jobs))
	for _, j := range jobs {
		m[j.ID] = queue.RunOf(j)
	}
	return m
}
