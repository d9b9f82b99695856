package enqueue

import (
	"context"
	"errors"
	"fmt"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// MaxWorkflowDepth is the deepest a child workflow may be nested: a
// workflow nobody waits for has depth 0, a child workflow its parent job's
// workflow's depth + 1 (a job outside workflows counts as depth 0).
const MaxWorkflowDepth = 8

// ErrChildWorkflow wraps every refusal of EnqueueChildWorkflow that is about
// where it was called from rather than about the workflow: not from a
// transactional handler's run (handlers.RegisterTx) with the context that
// run was given, a transaction other than the handler's own, a job other
// than the one the handler runs, a job that no longer runs under that claim
// (its lease was lost), a second child workflow in one run, a job with a
// serial key. Nothing is written.
var ErrChildWorkflow = errors.New("docket: cannot start a child workflow here")

// ErrWorkflowTooDeep is returned, wrapped, when a child workflow would be
// nested deeper than MaxWorkflowDepth. Nothing is written.
var ErrWorkflowTooDeep = errors.New("docket: child workflow nested too deep")

// parentStep is the job that waits for a child workflow.
type parentStep struct {
	jobID      int64
	workflowID *int64 // nil for a job outside workflows
	depth      int    // its workflow's depth; 0 outside workflows
}

// sqlParentStep reads the running job $1 under claim $2: its workflow and
// that workflow's depth. No row: the run lost its claim.
var sqlParentStep = pgsql.SQL(`SELECT j.workflow_id, COALESCE(w.depth, 0)
FROM {{schema}}.docket_jobs j
LEFT JOIN {{schema}}.docket_workflows w ON w.id = j.workflow_id
WHERE j.id = $1 AND j.claim_id = $2 AND j.state = 'running'`)

// EnqueueChildWorkflow writes w as a child workflow of step, the job whose
// transactional handler is running: in tx, the handler's transaction, with
// ctx the context the handler was given. When the handler then returns
// nil, its job does not complete: it waits (state waiting) until w
// finishes, then completes if every job of w completed, or dead-letters
// (reason child_failed) if one failed or w was cancelled. If the handler
// fails, tx rolls back and w never existed. See docs/workflows.md.
//
// Refusals, with nothing written: ErrChildWorkflow (see there),
// ErrWorkflowTooDeep, and what EnqueueWorkflow refuses.
func (c *Client) EnqueueChildWorkflow(ctx context.Context, tx pgx.Tx, step *core.Job, w Workflow) (WorkflowEnqueued, error) {
	run := core.TxRunFrom(ctx)
	switch {
	case step == nil:
		return WorkflowEnqueued{}, fmt.Errorf("%w: workflow %q: no parent job", ErrChildWorkflow, w.Name)
	case run == nil:
		return WorkflowEnqueued{}, fmt.Errorf("%w: workflow %q: job %d: call it from a transactional handler (handlers.RegisterTx) with the context it was given",
			ErrChildWorkflow, w.Name, step.ID)
	case tx == nil || any(tx) != run.Tx:
		return WorkflowEnqueued{}, fmt.Errorf("%w: workflow %q: job %d: pass the handler's own transaction, not another one or a savepoint of it",
			ErrChildWorkflow, w.Name, step.ID)
	case step.ID != run.JobID || step.ClaimID != run.ClaimID:
		return WorkflowEnqueued{}, fmt.Errorf("%w: workflow %q: job %d (claim %d) is not the run of this handler (job %d, claim %d)",
			ErrChildWorkflow, w.Name, step.ID, step.ClaimID, run.JobID, run.ClaimID)
	case step.SerialKey != "":
		return WorkflowEnqueued{}, fmt.Errorf("%w: workflow %q: job %d has a serial key; a serial job cannot wait for a child workflow",
			ErrChildWorkflow, w.Name, step.ID)
	}
	p, err := c.planWorkflow(ctx, w)
	if err != nil {
		return WorkflowEnqueued{}, err
	}
	if !run.ReserveChild() {
		return WorkflowEnqueued{}, fmt.Errorf("%w: workflow %q: job %d already started a child workflow in this run",
			ErrChildWorkflow, w.Name, step.ID)
	}
	var out WorkflowEnqueued
	defer func() { run.SetChild(out.ID) }() // 0 gives the reservation back
	if err := c.checkMigrated(ctx, pgsql.OnPgx(tx)); err != nil {
		return WorkflowEnqueued{}, err
	}
	err = pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
		cn := pgsql.OnPgx(sp)
		parent := &parentStep{jobID: step.ID}
		found := false
		err := cn.Query(ctx, sqlParentStep.For(c.schema), []any{step.ID, step.ClaimID}, func(scan func(...any) error) error {
			found = true
			return scan(&parent.workflowID, &parent.depth)
		})
		switch {
		case err != nil:
			return err
		case !found:
			return fmt.Errorf("%w: workflow %q: job %d no longer runs under claim %d (its lease was lost)",
				ErrChildWorkflow, w.Name, step.ID, step.ClaimID)
		case parent.depth+1 > MaxWorkflowDepth:
			return fmt.Errorf("%w: workflow %q: job %d runs in workflow %d at depth %d; a child would be at %d, beyond %d",
				ErrWorkflowTooDeep, w.Name, step.ID, *parent.workflowID, parent.depth, parent.depth+1, MaxWorkflowDepth)
		}
		res, err := c.insertWorkflow(ctx, cn, p, parent)
		if err != nil {
			return err
		}
		out = res
		return nil
	})
	if err != nil {
		out = WorkflowEnqueued{}
		return WorkflowEnqueued{}, c.wrapErr(err)
	}
	return out, nil
}
