package migrate_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
)

func TestMigratorConcurrentUpListDown(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.PoolN(t, 8)
	schema := "mig_" + strings.TrimPrefix(pgtest.Schema(t), "t_")
	t.Cleanup(func() { pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`) })
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	// Several processes starting at once: exactly one applies each migration.
	var wg sync.WaitGroup
	applied := make([]int, 6)
	for i := range applied {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, err := m.Up(ctx, pool)
			if err != nil {
				t.Error(err)
			}
			applied[i] = len(done)
		}()
	}
	wg.Wait()
	total := 0
	for _, n := range applied {
		total += n
	}
	if total != len(m.Migrations()) {
		t.Fatalf("applied %v migrations across concurrent runs, want %d in total", applied, len(m.Migrations()))
	}
	list, err := m.List(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.AppliedAt.IsZero() {
			t.Fatalf("migration %d listed as not applied", s.Version)
		}
	}
	client, _ := docket.NewClient(pool, docket.Config{Schema: schema})
	if _, err := client.Enqueue(ctx, pool, noop{}, docket.Opts{}); err != nil {
		t.Fatal(err)
	}
	down, err := m.Down(ctx, pool, 0)
	if err != nil || len(down) != len(m.Migrations()) {
		t.Fatalf("down: %v %v", down, err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'docket_jobs%'`, schema).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d job tables left after down (%v)", n, err)
	}
	if _, err := client.Enqueue(ctx, pool, noop{}, docket.Opts{}); !errors.Is(err, docket.ErrNotMigrated) {
		t.Fatalf("enqueue after down: %v", err)
	}
	// Up again after down works: the SQL is idempotent and reversible.
	if done, err := m.Up(ctx, pool); err != nil || len(done) != len(m.Migrations()) {
		t.Fatalf("up after down: %v %v", done, err)
	}
}

func TestMigratorSQLAndUnknownVersion(t *testing.T) {
	t.Parallel()
	m, err := migrate.New("custom_schema")
	if err != nil {
		t.Fatal(err)
	}
	up, err := m.SQL(1, "up")
	if err != nil || !strings.Contains(up, `CREATE TABLE IF NOT EXISTS "custom_schema".docket_jobs`) || strings.Contains(up, "{{") {
		t.Fatalf("up SQL not rendered for the schema: %v\n%s", err, up)
	}
	if _, err := m.SQL(999, "up"); !errors.Is(err, migrate.ErrUnknownVersion) {
		t.Fatalf("SQL(999): %v", err)
	}
	if _, err := m.SQL(1, "sideways"); err == nil {
		t.Fatal("SQL with a bad direction succeeded")
	}
	pool := pgtest.Pool(t)
	if _, err := m.UpTo(context.Background(), pool, 999); !errors.Is(err, migrate.ErrUnknownVersion) {
		t.Fatalf("UpTo(999): %v", err)
	}
	if _, err := m.Down(context.Background(), pool, 999); !errors.Is(err, migrate.ErrUnknownVersion) {
		t.Fatalf("Down(999): %v", err)
	}
	if _, err := migrate.New("Bad-Schema"); !errors.Is(err, migrate.ErrInvalidSchema) {
		t.Fatalf("bad schema: %v", err)
	}
}

// TestOneSequenceMigration upgrades a schema whose ready_seq sequence ran
// ahead of the id sequence (jobs retried many times): after migration 005
// every new ready_seq is beyond every old one, so no job lands behind a
// claimer's cursor, and a bulk-inserted job's ready_seq is its id.
func TestOneSequenceMigration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t)
	schema := pgtest.Schema(t)
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.UpTo(ctx, pool, 4); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `SELECT setval('"`+schema+`".docket_jobs_ready_seq', 1000000)`); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	client, err := docket.NewClient(pool, docket.Config{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	one, err := client.Enqueue(ctx, pool, noop{}, docket.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	many, err := client.EnqueueMany(ctx, pool, []docket.Item{{Args: noop{}}, {Args: noop{}, Opts: docket.Opts{UniqueKey: "k"}}})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := pool.Query(ctx, `SELECT id, ready_seq FROM "`+schema+`".docket_jobs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[int64]int64{}
	for rows.Next() {
		var id, seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			t.Fatal(err)
		}
		seqs[id] = seq
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seqs[one.ID] <= 1000000 {
		t.Errorf("single enqueue after the upgrade: ready_seq %d, want beyond the old sequence's 1000000", seqs[one.ID])
	}
	for _, r := range many {
		if seqs[r.ID] != r.ID {
			t.Errorf("bulk-inserted job %d (COPY or set insert): ready_seq %d, want its id", r.ID, seqs[r.ID])
		}
	}
}
