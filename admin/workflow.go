package admin

import (
	"context"
	"fmt"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// ErrWorkflowNotFound is returned for a workflow id that does not exist;
// it is the same error as docket.ErrWorkflowNotFound.
var ErrWorkflowNotFound = core.ErrWorkflowNotFound

// ErrWorkflowFinished is returned, wrapped with the workflow's id and state,
// by Workflows.Cancel for a workflow that already finished: every job of it
// left the jobs table, all completed (succeeded) or some dead-lettered or
// cancelled (failed). The workflow is left as it is. docket.Client.Signal
// returns it too, also for a cancelled workflow; it is the same error as
// docket.ErrWorkflowFinished.
var ErrWorkflowFinished = core.ErrWorkflowFinished

// Workflow states, as WorkflowState.State and the docket_workflow_status
// view report them.
const (
	WorkflowRunning   = "running"   // some of its jobs are still in the jobs table
	WorkflowSucceeded = "succeeded" // every job completed
	WorkflowFailed    = "failed"    // every job left; some dead-lettered or were cancelled
	WorkflowCancelled = "cancelled" // Workflows.Cancel was called
)

// WorkflowState is one row of the docket_workflow_status view.
type WorkflowState struct {
	ID          int64
	Name        string
	CreatedAt   time.Time
	CancelledAt time.Time // zero unless cancelled
	// Jobs is how many jobs the workflow was enqueued with.
	Jobs int
	// Remaining is how many are still in the jobs table: waiting for
	// parents, scheduled, ready or running.
	Remaining int
	// Failed is how many are in the dead-letter table: dead-lettered, or
	// cancelled (by Jobs.Cancel, by a failed parent, by Workflows.Cancel).
	Failed int
	// State is one of the Workflow* constants.
	State string
	// ParentJobID is the job that waits for this workflow when it is a
	// child workflow (docket.Client.EnqueueChildWorkflow), 0 otherwise;
	// ParentWorkflowID is that job's workflow, 0 when the job is in none.
	ParentJobID      int64
	ParentWorkflowID int64
	// Depth is 0 for a workflow no job waits for, else its parent job's
	// workflow's depth + 1 (a parent outside workflows counts as 0).
	Depth int
}

// WorkflowJobState is a job of a workflow that is still live or dead.
type WorkflowJobState struct {
	ID    int64
	Kind  string
	Queue string
	// State is the job's state in the jobs table ("waiting" means: for a
	// parent), or "dead".
	State string
	// Reason and LastError are those of a dead job.
	Reason    string
	LastError string
	// WaitFor is the signal a live step waits for (docket.WorkflowJob.WaitFor)
	// until it is sent; empty once sent, and for other jobs.
	WaitFor string
	// WaitUntil is the step's deadline for its signal, set once its
	// parents completed; zero before, and when it waits without a
	// timeout (stored as 9999-12-31).
	WaitUntil time.Time
	// ChildWorkflowID is the child workflow the job started (waiting:
	// waits for), 0 when it started none.
	ChildWorkflowID int64
}

var (
	// sqlCancelWorkflow marks the workflow cancelled, unless it finished
	// (no job of it left in the jobs table; cancelling a cancelled one
	// again is allowed), and moves its jobs that are not running to the
	// dead-letter table. Running ones finish their run; the triggers of
	// migration 014 cancel their dependents and stop them if they come
	// back to the queue (a retry, an expired lease). The job found live is
	// share-locked, so the workflow's last job cannot complete unseen
	// between the check and the mark: its completion waits for the cancel
	// and then sees the workflow cancelled. It returns whether the
	// workflow exists, whether it was marked, how many jobs were cancelled
	// and whether any job of it is dead (a finished workflow failed).
	sqlCancelWorkflow = pgsql.SQL(`WITH live AS (
	SELECT 1 FROM {{schema}}.docket_jobs WHERE workflow_id = $1 LIMIT 1 FOR KEY SHARE
), wf AS (
	UPDATE {{schema}}.docket_workflows SET cancelled_at = COALESCE(cancelled_at, now())
	WHERE id = $1 AND (cancelled_at IS NOT NULL OR EXISTS (SELECT 1 FROM live))
	RETURNING id
), gone AS (
	DELETE FROM {{schema}}.docket_jobs j USING wf
	WHERE j.workflow_id = wf.id AND j.state <> 'running'
	RETURNING j.*, 'cancelled'::text AS reason, format('workflow %s cancelled', wf.id) AS err
), dead AS (` + pgsql.DeadInsert + `
)
SELECT EXISTS (SELECT 1 FROM {{schema}}.docket_workflows WHERE id = $1),
	EXISTS (SELECT 1 FROM wf), (SELECT count(*) FROM dead),
	EXISTS (SELECT 1 FROM {{schema}}.docket_jobs_dead WHERE workflow_id = $1)`)

	// sqlWorkflowStatus reads the status view, with the parent job of a
	// child workflow (migration 023) from the workflow's row.
	sqlWorkflowStatus = pgsql.SQL(`SELECT id, s.name, s.created_at, s.cancelled_at, s.jobs, s.remaining, s.failed, s.state,
	COALESCE(w.parent_job_id, 0), COALESCE(w.parent_workflow_id, 0), w.depth
FROM {{schema}}.docket_workflow_status s JOIN {{schema}}.docket_workflows w USING (id)`)

	// sqlWorkflowJobStates lists a workflow's live and dead jobs. A waiting
	// step whose signal was not sent yet has its signal's name and
	// deadline (migration 022; a deadline of 9999-12-31 means none); each
	// job has the child workflow it started, if any (the newest: a job
	// replayed after its child failed may have started another).
	sqlWorkflowJobStates = pgsql.SQL(`SELECT j.id, j.kind, j.queue, j.state, '', '',
	CASE WHEN j.state = 'waiting' AND NOT EXISTS (SELECT 1 FROM {{schema}}.docket_workflow_signals s
		WHERE s.workflow_id = w.workflow_id AND s.name = w.signal) THEN COALESCE(w.signal, '') ELSE '' END,
	CASE WHEN j.state = 'waiting' AND j.wait_until < '9999-12-31' THEN j.wait_until END,
	COALESCE((SELECT max(c.id) FROM {{schema}}.docket_workflows c WHERE c.parent_job_id = j.id), 0)
FROM {{schema}}.docket_jobs j
LEFT JOIN {{schema}}.docket_workflow_waits w ON w.job_id = j.id
WHERE j.workflow_id = $1
UNION ALL
SELECT d.id, d.kind, d.queue, 'dead', d.reason, COALESCE(d.last_error, ''), '', NULL,
	COALESCE((SELECT max(c.id) FROM {{schema}}.docket_workflows c WHERE c.parent_job_id = d.id), 0)
FROM {{schema}}.docket_jobs_dead d WHERE d.workflow_id = $1
ORDER BY 1`)
)

// Cancel cancels workflow id: it is marked cancelled, and its jobs
// that are not running move to the dead-letter table with reason
// "cancelled". A running job finishes its run (a transactional handler's
// effects commit); whatever its outcome, no job of the workflow runs after
// it, and if it comes back to the queue (a retry, an expired lease) it is
// cancelled instead. It returns how many jobs it cancelled now; cancelling
// a cancelled workflow again is no error and cancels what is left.
//
// A workflow that already finished (state succeeded or failed: none of its
// jobs is left in the jobs table) is not changed: the error wraps
// ErrWorkflowFinished and names its state. An unknown id is
// ErrWorkflowNotFound.
func (h Workflows) Cancel(ctx context.Context, db DB, id int64) (int64, error) {
	c := h.c
	var found, marked, anyDead bool
	var n int64
	err := db.QueryRow(ctx, sqlCancelWorkflow.For(c.schema), id).Scan(&found, &marked, &n, &anyDead)
	switch {
	case err != nil:
		return 0, c.wrapErr(err)
	case !found:
		return 0, fmt.Errorf("%w: no workflow %d", ErrWorkflowNotFound, id)
	case !marked:
		state := WorkflowSucceeded
		if anyDead {
			state = WorkflowFailed
		}
		return 0, fmt.Errorf("%w: workflow %d %s; it was left as it is", ErrWorkflowFinished, id, state)
	}
	return n, nil
}

// Status returns workflow id's row of docket_workflow_status; an
// unknown id is ErrWorkflowNotFound.
func (h Workflows) Status(ctx context.Context, db DB, id int64) (WorkflowState, error) {
	c := h.c
	list, err := c.workflows(ctx, db, ` WHERE id = $1`, id)
	if err != nil {
		return WorkflowState{}, err
	}
	if len(list) == 0 {
		return WorkflowState{}, fmt.Errorf("%w: no workflow %d", ErrWorkflowNotFound, id)
	}
	return list[0], nil
}

// List returns the newest workflows first, at most limit of them
// (zero or less means 50).
func (h Workflows) List(ctx context.Context, db DB, limit int) ([]WorkflowState, error) {
	c := h.c
	if limit <= 0 {
		limit = 50
	}
	return c.workflows(ctx, db, ` ORDER BY id DESC LIMIT $1`, limit)
}

func (c *Client) workflows(ctx context.Context, db DB, tail string, args ...any) ([]WorkflowState, error) {
	rows, err := db.Query(ctx, sqlWorkflowStatus.For(c.schema)+tail, args...)
	if err != nil {
		return nil, c.wrapErr(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkflowState, error) {
		var s WorkflowState
		var cancelled *time.Time
		err := row.Scan(&s.ID, &s.Name, &s.CreatedAt, &cancelled, &s.Jobs, &s.Remaining, &s.Failed, &s.State,
			&s.ParentJobID, &s.ParentWorkflowID, &s.Depth)
		if cancelled != nil {
			s.CancelledAt = *cancelled
		}
		return s, err
	})
	return list, c.wrapErr(err)
}

// Jobs returns the jobs of workflow id that are still live or
// dead, by id; completed jobs are in history (docket_jobs_done, column
// workflow_id) and not listed.
func (h Workflows) Jobs(ctx context.Context, db DB, id int64) ([]WorkflowJobState, error) {
	c := h.c
	rows, err := db.Query(ctx, sqlWorkflowJobStates.For(c.schema), id)
	if err != nil {
		return nil, c.wrapErr(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (WorkflowJobState, error) {
		var s WorkflowJobState
		var until *time.Time
		err := row.Scan(&s.ID, &s.Kind, &s.Queue, &s.State, &s.Reason, &s.LastError, &s.WaitFor, &until, &s.ChildWorkflowID)
		if until != nil {
			s.WaitUntil = *until
		}
		return s, err
	})
	return list, c.wrapErr(err)
}
