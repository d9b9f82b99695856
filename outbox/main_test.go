package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
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

// newBundle migrates a fresh schema on pool for a client of cfg, whose
// Schema it sets.
func newBundle(t testing.TB, pool *pgxpool.Pool, cfg outbox.Config) *bundle {
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
	client, err := outbox.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{ctx: ctx, pool: pool, schema: cfg.Schema, client: client}
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
