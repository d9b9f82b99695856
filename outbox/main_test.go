package outbox_test

import (
	"context"
	"testing"
	"time"

	docket "github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is what most tests need: a migrated schema of their own.
type bundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	schema string
	client *outbox.Client
	q      *queue.Queue // the worker protocol, to set up jobs in every state
}

func setup(t *testing.T, cfg ...outbox.Config) *bundle {
	t.Helper()
	var c outbox.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	return newBundle(t, pgtest.Pool(t), c)
}

// newBundle migrates a fresh schema on pool for a client of cfg and creates
// today's and tomorrow's history partitions.
func newBundle(t testing.TB, pool *pgxpool.Pool, cfg outbox.Config) *bundle {
	t.Helper()
	ctx := context.Background()
	client, schema := outbox.MigratedClient(t, ctx, pool, cfg)
	q, err := queue.New(schema, queue.Config{DisableHistory: cfg.DisableHistory, CursorLag: cfg.ClaimCursorLag})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.EnsurePartitions(ctx, pool, time.Now(), 1); err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: ctx, pool: pool, schema: schema, client: client, q: q}
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

func (b *bundle) enqueueN(t *testing.T, n int, opts outbox.Opts) []int64 {
	t.Helper()
	items := make([]outbox.Item, n)
	for i := range items {
		items[i] = outbox.Item{Args: noop{N: i}, Opts: opts}
	}
	out, err := b.client.EnqueueMany(b.ctx, b.pool, items)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, n)
	for i, r := range out {
		ids[i] = r.ID
	}
	return ids
}

func (b *bundle) claim(t *testing.T, worker uuid.UUID, limit int, lease time.Duration) []*docket.Job {
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
func runsOf(jobs []*docket.Job) []queue.Run {
	runs := make([]queue.Run, len(jobs))
	for i, j := range jobs {
		runs[i] = queue.RunOf(j)
	}
	return runs
}

// byID returns the runs of claimed jobs by job id.
func byID(jobs []*docket.Job) map[int64]queue.Run {
	m := make(map[int64]queue.Run, len(jobs))
	for _, j := range jobs {
		m[j.ID] = queue.RunOf(j)
	}
	return m
}
