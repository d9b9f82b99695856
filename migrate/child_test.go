package migrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/docketq/docket/migrate"
)

// Reverting migration 023 completes the steps waiting for a child
// workflow: the version before cannot hold them back, and a waiting step
// would otherwise wait forever. Their dependents are released.
func TestChildWorkflowsDownCompletesWaitingSteps(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.PoolN(t, 4)
	schema := "mig_" + strings.TrimPrefix(pgtest.Schema(t), "t_")
	t.Cleanup(func() { pool.Exec(context.Background(), `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`) })
	m, err := migrate.New(schema)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatal(err)
	}
	sql := func(s string) string { return strings.ReplaceAll(s, "{{schema}}", `"`+schema+`"`) }
	for _, s := range []string{
		`SELECT {{schema}}.docket_create_history_partition(current_date)`,
		`INSERT INTO {{schema}}.docket_workflows (id, name, jobs) VALUES (1, 'outer', 2)`,
		`INSERT INTO {{schema}}.docket_workflows (id, name, jobs, parent_job_id, parent_workflow_id, depth) VALUES (2, 'child', 1, 10, 1, 1)`,
		`INSERT INTO {{schema}}.docket_jobs (id, state, queue, kind, payload, workflow_id, child_workflow_id, attempts, locked_at)
			VALUES (10, 'waiting', 'q', 'step', '{}', 1, 2, 1, now())`,
		`INSERT INTO {{schema}}.docket_jobs (id, state, queue, kind, payload, workflow_id) VALUES (11, 'waiting', 'q', 'dep', '{}', 1)`,
		`INSERT INTO {{schema}}.docket_workflow_deps (workflow_id, parent_id, child_id) VALUES (1, 10, 11)`,
		`INSERT INTO {{schema}}.docket_jobs (id, state, queue, kind, payload, workflow_id, parent_step_id) VALUES (20, 'ready', 'q', 'item', '{}', 2, 10)`,
	} {
		if _, err := pool.Exec(ctx, sql(s)); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	before := 0 // the version below 023, whichever that is
	for _, mig := range m.Migrations() {
		if mig.Version < 23 {
			before = max(before, mig.Version)
		}
	}
	if _, err := m.Down(ctx, pool, before); err != nil {
		t.Fatal(err)
	}
	var step, dep, item string
	if err := pool.QueryRow(ctx, sql(`SELECT
		COALESCE((SELECT state FROM {{schema}}.docket_jobs WHERE id = 10), (SELECT 'done' FROM {{schema}}.docket_jobs_done WHERE id = 10), ''),
		(SELECT state FROM {{schema}}.docket_jobs WHERE id = 11),
		(SELECT state FROM {{schema}}.docket_jobs WHERE id = 20)`)).Scan(&step, &dep, &item); err != nil {
		t.Fatal(err)
	}
	if step != "done" || dep != "ready" || item != "ready" {
		t.Errorf("after down: step %q, dependent %q, child's job %q; want done, ready, ready", step, dep, item)
	}
	if _, err := m.Up(ctx, pool); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
