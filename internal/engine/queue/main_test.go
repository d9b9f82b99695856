package queue

import (
	"context"
	"testing"

	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// migrated migrates a fresh schema on pool and returns a client that
// enqueues into it, the Queue of cfg on it and the schema's name.
func migrated(t testing.TB, ctx context.Context, pool pgsql.Beginner, cfg Config) (*enqueue.Client, *Queue, string) {
	t.Helper()
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
	q, err := New(schema, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return jobs, q, schema
}
