package admin_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is what most tests need: a migrated schema of their own, a client
// to enqueue jobs and the operations on it.
type bundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	schema string
	jobs   *docket.Client // enqueues, without a registry (any kind)
	ops    *admin.Client
	q      *queue.Queue // the worker protocol, to set up jobs in every state
}

// setup migrates a fresh schema and creates today's and tomorrow's history
// partitions.
func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	jobs, err := docket.NewClient(pool, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: ctx, pool: pool, schema: schema, jobs: jobs, ops: ops, q: q}
}

// count runs a count(*) style query.
func (b *bundle) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	if err := b.pool.QueryRow(b.ctx, sql, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func (b *bundle) table(name string) string { return `"` + b.schema + `".` + name }

type noop struct {
	N int `json:"n"`
}

func (noop) Kind() string { return "noop" }

type other struct{}

func (other) Kind() string { return "other" }

func (b *bundle) enqueueN(t *testing.T, n int, opts docket.Opts) []int64 {
	t.Helper()
	items := make([]docket.Item, n)
	for i := range items {
		items[i] = docket.Item{Args: noop{N: i}, Opts: opts}
	}
	out, err := b.jobs.EnqueueMany(b.ctx, b.pool, items)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i, r := range out {
		ids[i] = r.ID
	}
	return ids
}

func (b *bundle) claim(t *testing.T, worker uuid.UUID, limit int, lease time.Duration) []*core.Job {
	t.Helper()
	jobs, err := b.q.Claim(b.ctx, b.pool, queue.ClaimParams{
		Worker: worker, Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: limit, Lease: lease,
	})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// runsOf returns the runs of claimed jobs.
func runsOf(jobs []*core.Job) []queue.Run {
	runs := make([]queue.Run, len(jobs))
	for i, j := range jobs {
		runs[i] = queue.RunOf(j)
	}
	return runs
}

// byID returns the runs of claimed jobs by job id.
func byID(jobs []*core.Job) map[int64]queue.Run {
	m := make(map[int64]queue.Run, len(jobs))
	for _, j := range jobs {
		m[j.ID] = queue.RunOf(j)
	}
	return m
}
