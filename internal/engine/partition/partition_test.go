package partition_test

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5/pgxpool"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// migrated returns a pool and a fresh schema migrated on it, with the
// partitions migrating makes (today and partition.Ahead days).
func migrated(t *testing.T) (context.Context, *pgxpool.Pool, string) {
	t.Helper()
	ctx, pool, schema := t.Context(), pgtest.Pool(t), pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	return ctx, pool, schema
}

func count(t *testing.T, ctx context.Context, pool *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

func TestMigrateMakesTheDaysAhead(t *testing.T) {
	t.Parallel()
	ctx, pool, schema := migrated(t)
	parts, err := partition.Of(schema).List(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC()
	if len(parts) < partition.Ahead+1 || parts[len(parts)-1] < "docket_jobs_done_"+today.AddDate(0, 0, partition.Ahead).Format("20060102") {
		t.Fatalf("partitions after migrating: %v, want today and %d days ahead", parts, partition.Ahead)
	}
}

func TestRetentionDropsOldPartitionsOnly(t *testing.T) {
	t.Parallel()
	ctx, pool, schema := migrated(t)
	h := partition.Of(schema)
	now := time.Now().UTC()
	if err := h.Ensure(ctx, pool, now.AddDate(0, 0, -10), 12); err != nil {
		t.Fatal(err)
	}
	if err := h.Ensure(ctx, pool, now.AddDate(0, 0, -10), 12); err != nil {
		t.Fatalf("second ensure is not idempotent: %v", err)
	}
	// An old finished job, a recent one and a live job.
	if _, err := pool.Exec(ctx, `INSERT INTO "`+schema+`".docket_jobs_done (id, queue, kind, priority, tenant, attempts, max_attempts, created_at, run_at, finished_at, payload)
		VALUES (1, 'default', 'noop', 0, '', 1, 1, now(), now(), now() - interval '9 days', '{}'), (2, 'default', 'noop', 0, '', 1, 1, now(), now(), now(), '{}')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO "`+schema+`".docket_jobs (queue, kind, payload) VALUES ('default', 'noop', '{}')`); err != nil {
		t.Fatal(err)
	}
	before, err := h.List(ctx, pool) // the 13 days and the migration's days ahead
	if err != nil {
		t.Fatal(err)
	}
	dropped, err := h.Drop(ctx, pool, now.AddDate(0, 0, -7))
	if err != nil {
		t.Fatal(err)
	}
	if len(dropped) != 3 {
		t.Fatalf("dropped %v, want the 3 days ended before the cutoff", dropped)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM "`+schema+`".docket_jobs_done`); n != 1 {
		t.Fatalf("%d history rows, want only the recent one", n)
	}
	if n := count(t, ctx, pool, `SELECT count(*) FROM "`+schema+`".docket_jobs`); n != 1 {
		t.Fatal("retention touched live jobs")
	}
	parts, _ := h.List(ctx, pool)
	if len(parts) != len(before)-3 {
		t.Fatalf("%d partitions left: %v, want %d", len(parts), parts, len(before)-3)
	}
}

// TestEnsureConcurrently runs the maintenance of several worker processes
// at once: each must succeed, whoever creates a day first.
func TestEnsureConcurrently(t *testing.T) {
	t.Parallel()
	ctx, pool, schema := migrated(t)
	h := partition.Of(schema)
	before, err := h.List(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		day := time.Now().UTC().AddDate(0, 0, 40+10*round)
		errs := make(chan error, 4)
		for range 4 {
			go func() { errs <- h.Ensure(ctx, pool, day, 2) }()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
	parts, err := h.List(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != len(before)+3*3 { // the migration's days, and three days per round
		t.Fatalf("%d partitions: %v, want %d", len(parts), parts, len(before)+3*3)
	}
}
