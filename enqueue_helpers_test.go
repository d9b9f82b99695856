package docket_test

import (
	"context"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5/pgxpool"
)

// bundle is what the enqueue tests need: a migrated schema of their own and
// a client on it.
type bundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	schema string
	client *docket.Client
	q      *queue.Queue // the worker protocol, to set up jobs in every state
}

// setup gives the test a fresh migrated schema and a client of cfg (whose
// Schema it sets) on it.
func setup(t testing.TB, cfg ...docket.Config) *bundle {
	t.Helper()
	var c docket.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	return newBundle(t, pgtest.Pool(t), c)
}

// newBundle migrates a fresh schema on pool for a client of cfg.
func newBundle(t testing.TB, pool *pgxpool.Pool, cfg docket.Config) *bundle {
	t.Helper()
	ctx := context.Background()
	cfg.Schema = pgtest.Schema(t)
	m, err := migrate.New(cfg.Schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	client, err := docket.NewClient(pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	q, err := queue.New(cfg.Schema, queue.Config{DisableHistory: cfg.DisableHistory})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: ctx, pool: pool, schema: cfg.Schema, client: client, q: q}
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
