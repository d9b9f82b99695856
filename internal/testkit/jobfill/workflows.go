package jobfill

import (
	"context"
	"fmt"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// The workflows and limits Workflows adds, for the dashboard's pages of
// them. Workflow w (1..n) has 10 steps: for w <= n/2 they are the live
// jobs 10(w-1)+1 .. 10w in id order (live job i of Fill), the first a parent of the eight middle ones,
// which are the last one's parents (state running); for n/2 < w <= 3n/4,
// one dead job of the dead-letter table (failed); the rest have none left
// (succeeded). Every 50th is cancelled. Limits: one per tenant on queue
// mail (at most 5 running), one rate limit on kind k3 (100 per second, a
// bucket for its one key) and a per-tenant rate on queue bulk (a bucket for
// each of the 100 tenants).
const sqlFillWorkflows = `
INSERT INTO {{schema}}.docket_workflows (id, name, created_at, cancelled_at, jobs)
SELECT w, 'order ' || w, now() - interval '2 hours',
	CASE WHEN w % 50 = 0 THEN now() - interval '1 hour' END, 10
FROM generate_series(1, $1::bigint) w;

CREATE TEMP TABLE docket_fill_steps ON COMMIT DROP AS
SELECT id, (rn - 1) / 10 + 1 AS w, (rn - 1) % 10 + 1 AS s
FROM (SELECT id, row_number() OVER (ORDER BY id) AS rn FROM {{schema}}.docket_jobs ORDER BY id LIMIT $1::bigint / 2 * 10) x;

UPDATE {{schema}}.docket_jobs j SET workflow_id = f.w FROM docket_fill_steps f WHERE j.id = f.id;

INSERT INTO {{schema}}.docket_workflow_deps (workflow_id, parent_id, child_id)
SELECT p.w, p.id, c.id FROM docket_fill_steps p JOIN docket_fill_steps c ON c.w = p.w AND c.s BETWEEN 2 AND 9 WHERE p.s = 1
UNION ALL
SELECT p.w, p.id, c.id FROM docket_fill_steps p JOIN docket_fill_steps c ON c.w = p.w AND c.s = 10 WHERE p.s BETWEEN 2 AND 9;

UPDATE {{schema}}.docket_jobs_dead d SET workflow_id = $1::bigint / 2 + k
FROM (SELECT id, row_number() OVER (ORDER BY id) AS k FROM {{schema}}.docket_jobs_dead ORDER BY id LIMIT $1::bigint / 4) x
WHERE d.id = x.id;

INSERT INTO {{schema}}.docket_limits (name, queue, kind, per_tenant, max_running, rate, period_ms, burst, updated_at) VALUES
	('mail-per-tenant', 'mail', NULL, true, 5, NULL, NULL, NULL, now()),
	('k3-rate', NULL, 'k3', false, NULL, 100, 1000, 100, now()),
	('bulk-rate', 'bulk', NULL, true, NULL, 10, 1000, 10, now());

INSERT INTO {{schema}}.docket_limit_buckets (name, key, tokens, refilled_at)
SELECT 'k3-rate', '', 40, now()
UNION ALL
SELECT 'bulk-rate', 't' || t, t % 10, now() - interval '100 milliseconds' FROM generate_series(0, 99) t;

ANALYZE {{schema}}.docket_workflows, {{schema}}.docket_workflow_deps, {{schema}}.docket_jobs, {{schema}}.docket_jobs_dead,
	{{schema}}.docket_limits, {{schema}}.docket_limit_buckets`

// Workflows adds n workflows (n a multiple of 4, at most a tenth of the
// live jobs Fill added) and three limits, as described above, to a schema
// Fill filled.
func Workflows(ctx context.Context, db pgsql.TxDB, schema string, n int) error {
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		// Several statements: the simple protocol, so the value is inlined.
		sql := pgsql.Render(sqlFillWorkflows, schema)
		if _, err := tx.Exec(ctx, sql, pgx.QueryExecModeSimpleProtocol, n); err != nil {
			return fmt.Errorf("jobfill: workflows: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	// The updates left dead tuples: vacuumed, as autovacuum would.
	_, err = db.Exec(ctx, pgsql.Render(sqlVacuum, schema))
	return err
}
