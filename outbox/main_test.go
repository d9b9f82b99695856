package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/internal/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is what most tests need: a migrated schema of their own.
type bundle struct {
	ctx    context.Context
	pool   *pgxpool.Pool
	schema string
	client *outbox.Client
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
	if err := client.EnsurePartitions(ctx, pool, time.Now(), 1); err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: ctx, pool: pool, schema: schema, client: client}
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
