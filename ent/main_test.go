package ent_test

import (
	"context"
	"database/sql"
	"sync"
	"testing"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/docketq/docket"
	"github.com/docketq/docket/ent/entgen"
	"github.com/docketq/docket/ent/internal/testent"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// bundle is one test's world: a fresh schema with Docket's tables and the
// test domain table, one pgx pool on it, and the Ent clients built on that
// same pool.
type bundle struct {
	schema string
	pool   *pgxpool.Pool
	db     *sql.DB
	dc     *docket.Client  // enqueues jobs
	ob     *outbox.Client  // publishes events
	ent    *testent.Client // the domain client (test schema)
	docket *entgen.Client  // Docket's tables as Ent models
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := t.Context()
	schema := pgtest.Schema(t)
	cfg, err := pgxpool.ParseConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	dc, err := docket.NewClient(pool, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	ob, err := outbox.New(outbox.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	// One pool for Docket (pgx) and Ent (database/sql).
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	drv := entsql.OpenDB(dialect.Postgres, db)
	client := testent.NewClient(testent.Driver(drv))
	// Ent's migration fills in the generated package-level table
	// descriptions as it goes: two parallel tests creating their schemas
	// at once write the same maps (a "concurrent map writes" crash seen in
	// CI).
	schemaCreate.Lock()
	err = client.Schema.Create(ctx)
	schemaCreate.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{
		schema: schema, pool: pool, db: db, dc: dc, ob: ob, ent: client,
		docket: entgen.NewClient(entgen.Driver(drv)),
	}
}

// schemaCreate serializes Ent's schema creation across parallel tests.
var schemaCreate sync.Mutex

// count returns the rows of table in the test's schema matching where.
func (b *bundle) count(t *testing.T, table, where string, args ...any) int {
	t.Helper()
	var n int
	q := "SELECT count(*) FROM " + b.schema + "." + table
	if where != "" {
		q += " WHERE " + where
	}
	if err := b.pool.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
