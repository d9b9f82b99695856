package queue

import (
	"context"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// sqlSweepsDue says whether any of the sweeps a worker runs every poll
// interval (SweepSerial, SweepWorkflows, SweepDeadlines,
// SweepChildWorkflows, SweepWorkflowResults) may find something: a waiting
// job of a serial key or of a workflow, or a kept workflow result. Each
// probe is one descent of a partial index that holds only such jobs (or of
// the results table), so a queue without serial keys or workflows — a
// drain of plain jobs, say — pays one cheap statement per poll instead of
// five sweeps in a transaction, each planned and walked. A job that starts
// to wait after the probe is the next round's, as it would be after a sweep
// that ran at the same instant.
var sqlSweepsDue = pgsql.SQL(`SELECT
	EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE state = 'waiting' AND serial_key IS NOT NULL)
	OR EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE state = 'waiting' AND workflow_id IS NOT NULL)
	OR EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE state = 'waiting' AND child_workflow_id IS NOT NULL)
	OR EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE state = 'waiting' AND wait_until IS NOT NULL)
	OR EXISTS (SELECT 1 FROM {{schema}}.docket_workflow_results)`)

// SweepsDue reports whether the sweeps may find anything to do (see
// sqlSweepsDue). false means none of them would change a row if it ran now.
func (q *Queue) SweepsDue(ctx context.Context, db DB) (bool, error) {
	var due bool
	err := q.run(ctx, db, pgsql.IndexSettings, sqlSweepsDue.For(q.schema), nil, func(rows pgx.Rows) error {
		return pgsql.ScanOne(rows, &due)
	})
	return due, err
}
