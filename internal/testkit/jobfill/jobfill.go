// Package jobfill fills a migrated schema with a large, realistic set of
// jobs for plan tests and benchmarks of the read paths (docket jobs list,
// the dashboard): live jobs in every state over several queues, kinds and
// tenants, dead letters with a few error signatures, and an hour of
// history. It writes with generate_series, so a million jobs take seconds.
package jobfill

import (
	"context"
	"fmt"
	"time"

	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/migrate"
	"github.com/jackc/pgx/v5"
)

// The shape of the data, for tests that filter on it. Live job i (1..n) is
// in queue Queues[i%5], of kind "k<i%10>", tenant "t<i%100>"; every 100th
// is running, every 20th (offset 1) scheduled, the rest ready; every 50th
// carries the error "timeout talking to smtp"; every 10th has serial key
// "acct-<i%1000>".
var Queues = []string{"default", "mail", "reports", "billing", "bulk"}

const (
	// LiveError is the last error of every 50th live job.
	LiveError = "timeout talking to smtp"
	// DeadErrors is how many distinct error signatures dead jobs carry.
	DeadErrors = 5
)

const sqlFill = `
INSERT INTO {{schema}}.docket_jobs (state, queue, kind, priority, run_at, created_at, attempts, tenant,
	serial_key, locked_by, locked_at, lease_until, last_error, payload)
SELECT s.state, (ARRAY['default','mail','reports','billing','bulk'])[i % 5 + 1], 'k' || i % 10, 0,
	CASE WHEN s.state = 'scheduled' THEN now() + interval '1 hour' ELSE now() - interval '1 minute' END,
	now() - interval '2 hours', CASE WHEN i % 50 = 0 THEN 1 ELSE 0 END, 't' || i % 100,
	CASE WHEN i % 10 = 0 THEN 'acct-' || i % 1000 END,
	CASE WHEN s.state = 'running' THEN gen_random_uuid() END,
	CASE WHEN s.state = 'running' THEN now() END,
	CASE WHEN s.state = 'running' THEN now() + interval '5 minutes' END,
	CASE WHEN i % 50 = 0 THEN 'timeout talking to smtp' END,
	jsonb_build_object('n', i)
FROM generate_series(1, $1::bigint) i,
	LATERAL (SELECT CASE WHEN i % 100 = 0 THEN 'running' WHEN i % 20 = 1 THEN 'scheduled' ELSE 'ready' END AS state) s`

const sqlFillDead = `
INSERT INTO {{schema}}.docket_jobs_dead (id, queue, kind, priority, tenant, attempts, max_attempts, created_at,
	run_at, dead_at, reason, last_error, payload)
SELECT nextval('{{schema}}.docket_jobs_id_seq'), (ARRAY['default','mail','reports','billing','bulk'])[i % 5 + 1],
	'k' || i % 10, 0, 't' || i % 100, 25, 25, now() - interval '2 days', now() - interval '1 day',
	now() - (i % 1440) * interval '1 minute', 'exhausted', 'error signature ' || i % 5, jsonb_build_object('n', i)
FROM generate_series(1, $1::bigint / 10) i`

const sqlFillDone = `
INSERT INTO {{schema}}.docket_jobs_done (id, queue, kind, priority, tenant, attempts, max_attempts, created_at,
	run_at, started_at, finished_at, payload)
SELECT nextval('{{schema}}.docket_jobs_id_seq'), (ARRAY['default','mail','reports','billing','bulk'])[i % 5 + 1],
	'k' || i % 10, 0, 't' || i % 100, 1 + i % 3 / 2, 25, now() - interval '1 hour', now() - interval '1 hour',
	$2::timestamptz - (i % 3000) * interval '1 second' - interval '1 second',
	$2::timestamptz - (i % 3000) * interval '1 second', jsonb_build_object('n', i)
FROM generate_series(1, $1::bigint / 10) i`

// sqlVacuum leaves the tables as autovacuum leaves a table that has stood
// a while (docket_jobs is vacuumed after every 2% of inserts): statistics
// gathered, hint bits set, and the visibility map marking pages all
// visible, so that index-only scans read no heap. Right after the bulk
// insert every first read would set hint bits, a write, instead.
const sqlVacuum = `VACUUM (ANALYZE) {{schema}}.docket_jobs, {{schema}}.docket_jobs_dead, {{schema}}.docket_jobs_done`

// Fill adds n live jobs, n/10 dead jobs and n/10 finished jobs (over the
// 50 minutes before now, in today's history partition) to a migrated
// schema, in one transaction, then vacuums and analyzes the tables.
func Fill(ctx context.Context, db pgsql.TxDB, schema string, n int) error {
	q, err := queue.New(schema, queue.Config{})
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	// Finished times stay inside today's partition, even just after midnight.
	at := now
	if midnight := now.Truncate(24 * time.Hour); now.Sub(midnight) < time.Hour {
		at = midnight.Add(time.Hour)
	}
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if err := partition.Of(q.Schema()).Ensure(ctx, tx, now, 1); err != nil {
			return fmt.Errorf("jobfill: partitions: %w", err)
		}
		for _, stmt := range []string{sqlFill, sqlFillDead, sqlFillDone} {
			args := []any{n}
			if stmt == sqlFillDone {
				args = append(args, at)
			}
			if _, err := tx.Exec(ctx, pgsql.Render(stmt, schema), args...); err != nil {
				return fmt.Errorf("jobfill: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	_, err = db.Exec(ctx, pgsql.Render(sqlVacuum, schema))
	return err
}

// Create creates schema, migrates it and fills it with n jobs (see Fill).
func Create(ctx context.Context, db pgsql.TxDB, schema string, n int) error {
	if _, err := db.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("jobfill: %w", err)
	}
	m, err := migrate.New(schema)
	if err != nil {
		return err
	}
	if _, err := m.Up(ctx, db); err != nil {
		return fmt.Errorf("jobfill: migrate: %w", err)
	}
	return Fill(ctx, db, schema, n)
}
