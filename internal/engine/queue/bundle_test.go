package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrateSchema applies Docket's migrations to schema on db.
func migrateSchema(ctx context.Context, db pgsql.Beginner, schema string) error {
	m, err := migrate.New(schema)
	if err != nil {
		return err
	}
	_, err = m.Up(ctx, db)
	return err
}

// bundle is what most tests need: a migrated schema of their own.
type bundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	schema string
	jobs   *enqueue.Client // enqueues into schema
	ops    *admin.Client   // the operations on schema, to set limits
	q      *queue.Queue    // the worker protocol, to set up jobs in every state
}

func setup(t *testing.T, cfg ...queue.Config) *bundle {
	t.Helper()
	var c queue.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	return newBundle(t, pgtest.Pool(t), c)
}

// newBundle migrates a fresh schema on pool, makes the Queue of cfg on it
// and creates today's and tomorrow's history partitions.
func newBundle(t testing.TB, pool *pgxpool.Pool, cfg queue.Config) *bundle {
	t.Helper()
	ctx := context.Background()
	schema := pgtest.Schema(t)
	jobs, err := enqueue.New(enqueue.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ops, err := admin.New(admin.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := migrateSchema(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(schema, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: ctx, pool: pool, schema: schema, jobs: jobs, ops: ops, q: q}
}

// count runs a count(*) style query with {{schema}}-free SQL where %s is the schema.
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

func (b *bundle) enqueueN(t *testing.T, n int, opts enqueue.Opts) []int64 {
	t.Helper()
	items := make([]enqueue.Item, n)
	for i := range items {
		items[i] = enqueue.Item{Args: noop{N: i}, Opts: opts}
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

// waitFor polls cond until it holds or 10s pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
