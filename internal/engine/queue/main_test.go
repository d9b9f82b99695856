package queue

import (
	"context"
	"testing"

	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/testkit/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// MigrateSchema applies Docket's migrations to schema on db. Package
// migrate imports this one, so these tests cannot call it: bundle_test.go,
// an external test file of this directory, sets MigrateSchema to it.
var MigrateSchema func(ctx context.Context, db pgsql.Beginner, schema string) error

// migrated migrates a fresh schema on pool and returns a client that
// enqueues into it, the Queue of cfg on it and the schema's name.
func migrated(t testing.TB, ctx context.Context, pool pgsql.Beginner, cfg Config) (*enqueue.Client, *Queue, string) {
	t.Helper()
	schema := pgtest.Schema(t)
	jobs, err := enqueue.New(enqueue.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if err := MigrateSchema(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	q, err := New(schema, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return jobs, q, schema
}
