package queue

import (
	"context"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
)

// Child workflows (migration 023). A transactional handler that enqueued a
// child workflow in its transaction does not complete its job: Park puts
// the job in state waiting, pointing at the child, in that transaction.
// The trigger docket_jobs_workflow_to_parent completes or fails the job
// when the child's last job leaves the jobs table; the sweep below
// settles what two concurrent departures left behind.

var (
	// sqlPark parks the run ($1 id, $3 claim) of worker $2: waiting for
	// child workflow $4. Fenced by the claim like every outcome, and
	// refused like them once an operator asked to cancel the run (020).
	// locked_at stays: it is the run's start, recorded in history when the
	// job completes.
	sqlPark = pgsql.SQL(`UPDATE {{schema}}.docket_jobs j
SET state = 'waiting', child_workflow_id = $4, locked_by = NULL, lease_until = NULL
WHERE j.id = $1 AND j.claim_id = $3 AND j.locked_by = $2 AND j.cancel_requested_at IS NULL
RETURNING j.id`)

	// sqlSweepChildren walks up to $1 steps waiting for a child workflow
	// that need a decision: those whose child has no job left in the jobs
	// table (settled by docket_child_settle: completed, or dead-lettered
	// with reason child_failed) and those whose own workflow was cancelled
	// (a step that was running at the cancel and parked after it):
	// cancelled, which cancels the child through the trigger
	// docket_jobs_workflow_to_child. Steps locked by another transaction
	// are skipped: that transaction is deciding about them. It returns the
	// ids of the steps it settled or cancelled.
	sqlSweepChildren = pgsql.SQL(`WITH s AS (
	SELECT j.id, j.child_workflow_id, j.workflow_id,
		EXISTS (SELECT 1 FROM {{schema}}.docket_workflows w
			WHERE w.id = j.workflow_id AND w.cancelled_at IS NOT NULL) AS stopped
	FROM {{schema}}.docket_jobs j
	WHERE j.state = 'waiting' AND j.child_workflow_id IS NOT NULL
		AND (NOT EXISTS (SELECT 1 FROM {{schema}}.docket_jobs c WHERE c.workflow_id = j.child_workflow_id)
			OR EXISTS (SELECT 1 FROM {{schema}}.docket_workflows w
				WHERE w.id = j.workflow_id AND w.cancelled_at IS NOT NULL))
	ORDER BY j.id
	LIMIT $1
	FOR UPDATE OF j SKIP LOCKED
), gone AS (
	DELETE FROM {{schema}}.docket_jobs j USING s
	WHERE j.id = s.id AND s.stopped
	RETURNING j.*, 'cancelled'::text AS reason, format('workflow %s cancelled', j.workflow_id) AS err
), dead AS (` + pgsql.DeadInsert + `
)
SELECT id FROM dead
UNION ALL
SELECT s.id FROM s WHERE CASE WHEN s.stopped THEN false ELSE {{schema}}.docket_child_settle(s.child_workflow_id) END`)
)

// Park makes the worker's run wait for child workflow child instead of
// completing: the job stays in the jobs table, waiting, until the child
// finishes. It returns the job's id, or nothing when the run was lost.
// Write it in the transaction that enqueued the child.
func (q *Queue) Park(ctx context.Context, db DB, worker uuid.UUID, run Run, child int64) ([]int64, error) {
	return q.ids(ctx, db, sqlPark.For(q.schema), run.ID, worker, run.ClaimID, child)
}

// SweepChildWorkflows settles up to limit steps left waiting although their
// child workflow finished, or whose own workflow was cancelled (see
// sqlSweepChildren). It returns no queues: a settled step's dependents are
// announced by the trigger that releases them. db should run it at READ
// COMMITTED; cheap when no step waits.
func (q *Queue) SweepChildWorkflows(ctx context.Context, db DB, limit int) ([]string, error) {
	_, err := q.ids(ctx, db, sqlSweepChildren.For(q.schema), limit)
	return nil, err
}
