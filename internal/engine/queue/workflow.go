package queue

import (
	"context"

	"github.com/docketq/docket/internal/engine/pgsql"
)

// Workflows are jobs with dependencies (migration 014). A job waiting for
// its parents becomes ready, or is cancelled, in the transaction that
// removes its last parent from the jobs table: a trigger does it on every
// path a job leaves by, so the claim and the outcomes here know nothing of
// workflows. Two transactions that remove a child's last two parents at
// once can each still see the other's parent and leave the child waiting;
// the sweep below finishes what they left.

// sqlSweepWorkflows walks up to $1 waiting workflow jobs that need a
// decision: those of a cancelled workflow or with a dead parent they do
// not run anyway after (cancelled, as the trigger would have), and those
// with no parent left in the jobs table (made ready, or scheduled when
// their run_at is ahead). It returns the queues of the jobs it made ready,
// one entry per job. Jobs locked by another transaction are skipped: that
// transaction is the one deciding about them. Steps held for a signal
// (wait_until set, migration 022) have no parent left by definition and
// are left to Signal and SweepDeadlines.
var sqlSweepWorkflows = pgsql.SQL(`WITH w AS (
	SELECT j.id, f.stopped, f.failed_parent
	FROM {{schema}}.docket_jobs j
	JOIN {{schema}}.docket_workflows wf ON wf.id = j.workflow_id
	CROSS JOIN LATERAL (
		SELECT wf.cancelled_at IS NOT NULL AS stopped,
			(SELECT d.parent_id FROM {{schema}}.docket_workflow_deps d
			 JOIN {{schema}}.docket_jobs_dead x ON x.id = d.parent_id
			 WHERE d.child_id = j.id AND NOT d.run_anyway
			 LIMIT 1) AS failed_parent
	) f
	WHERE j.state = 'waiting' AND j.workflow_id IS NOT NULL AND j.wait_until IS NULL
		AND j.child_workflow_id IS NULL -- a step waiting for its child: see child.go
		AND (f.stopped OR f.failed_parent IS NOT NULL
			OR (SELECT p.parent_id FROM {{schema}}.docket_workflow_deps p
				JOIN {{schema}}.docket_jobs pj ON pj.id = p.parent_id
				WHERE p.child_id = j.id
				ORDER BY p.parent_id DESC LIMIT 1) IS NULL)
	ORDER BY j.id
	LIMIT $1
	FOR UPDATE OF j SKIP LOCKED
), gone AS (
	DELETE FROM {{schema}}.docket_jobs j USING w
	WHERE j.id = w.id AND (w.stopped OR w.failed_parent IS NOT NULL)
	RETURNING j.*, 'cancelled'::text AS reason,
		CASE WHEN w.stopped THEN format('workflow %s cancelled', j.workflow_id)
			ELSE format('parent job %s failed', w.failed_parent) END AS err
), dead AS (` + pgsql.DeadInsert + `
), ready AS (
	UPDATE {{schema}}.docket_jobs j
	SET state = CASE WHEN j.run_at > now() THEN 'scheduled' ELSE 'ready' END,
		ready_seq = ` + pgsql.NextReadySeq + `, run_at = greatest(j.run_at, now())
	FROM w
	WHERE j.id = w.id AND NOT w.stopped AND w.failed_parent IS NULL
	RETURNING j.queue, j.state
)
SELECT queue FROM ready WHERE state = 'ready'`)

// SweepWorkflows decides about up to limit workflow jobs left waiting
// although their parents are gone (see sqlSweepWorkflows), and returns the
// queues of the jobs it made ready, one entry per job. db should run it at
// READ COMMITTED, where it sees every parent departure committed before it;
// cheap when no job needs it.
func (q *Queue) SweepWorkflows(ctx context.Context, db DB, limit int) ([]string, error) {
	return column[string](ctx, q, db, sqlSweepWorkflows.For(q.schema), limit)
}

// sqlSweepWorkflowResults removes the kept results (migration 019) of up
// to $1 workflows, in workflow id order after $2, that have no job left in
// the jobs table: finished workflows whose last two jobs left at once, so
// that neither saw the workflow finish (see docket_workflow_results_drop).
// It walks docket_workflow_results_workflow_idx one workflow at a time and
// returns where the next sweep goes on from: the last workflow it looked
// at, or 0 when it reached the end.
var sqlSweepWorkflowResults = pgsql.SQL(`WITH RECURSIVE w(id, n) AS (
	SELECT (SELECT min(workflow_id) FROM {{schema}}.docket_workflow_results WHERE workflow_id > $2), 1
	UNION ALL
	SELECT (SELECT min(workflow_id) FROM {{schema}}.docket_workflow_results WHERE workflow_id > w.id), w.n + 1
	FROM w WHERE w.id IS NOT NULL AND w.n < $1
), gone AS (
	DELETE FROM {{schema}}.docket_workflow_results r USING w
	WHERE r.workflow_id = w.id
		AND NOT EXISTS (SELECT 1 FROM {{schema}}.docket_jobs j WHERE j.workflow_id = w.id)
)
SELECT COALESCE((SELECT id FROM w WHERE n = $1), 0)`)

// SweepWorkflowResults removes the kept results of up to limit finished
// workflows that their last job's departure left behind (see
// sqlSweepWorkflowResults), going on from where the previous call of this
// Queue stopped. It returns no queues; its signature is that of the other
// sweeps.
func (q *Queue) SweepWorkflowResults(ctx context.Context, db DB, limit int) ([]string, error) {
	next, err := column[int64](ctx, q, db, sqlSweepWorkflowResults.For(q.schema), limit, q.resultsSwept.Load())
	if err != nil {
		return nil, err
	}
	if len(next) == 1 {
		q.resultsSwept.Store(next[0])
	}
	return nil, nil
}
