package docket

import (
	"context"
	"time"

	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/jackc/pgx/v5"
)

// ErrInvalidWorkflow wraps every validation failure of EnqueueWorkflow that
// is about the workflow's shape rather than one job's options: no jobs, an
// empty or repeated Ref, a dependency on an unknown Ref, a cycle, a serial
// key. Nothing is sent to the database, so a caller's transaction stays
// usable. (A job whose own options are invalid is reported with
// ErrInvalidJob, naming its Ref.)
var ErrInvalidWorkflow = enqueue.ErrInvalidWorkflow

// ErrWorkflowKeyTaken is returned, wrapped with the key and the id of the
// job in flight that holds it, when a job of a workflow has a UniqueKey that
// a job in flight holds. The whole workflow is refused: nothing of it is
// written.
var ErrWorkflowKeyTaken = enqueue.ErrWorkflowKeyTaken

// Workflow is a set of jobs enqueued together, with dependencies between
// them: a job runs once every job it comes After has completed. See
// docs/workflows.md.
type Workflow struct {
	// Name says what the workflow is for, for operators (docket workflows).
	// Required; at most MaxNameLen bytes of valid UTF-8 without NUL.
	Name string
	// Jobs are the workflow's jobs, at least one. Order does not matter.
	Jobs []WorkflowJob
}

// WorkflowJob is one job of a workflow.
type WorkflowJob struct {
	// Ref names the job inside the workflow, for the After lists of other
	// jobs and in EnqueueWorkflow's result. Required, unique in the
	// workflow, at most MaxNameLen bytes of valid UTF-8 without NUL.
	Ref string
	// Args and Opts are what Enqueue takes, with two limits: no SerialKey
	// and no MoveOnDuplicate. A UniqueKey is allowed; when a job in flight
	// already holds it, the whole workflow is refused (ErrWorkflowKeyTaken).
	Args Args
	Opts Opts
	// After lists the jobs this one runs after. Empty: it is ready (or
	// scheduled, with RunAt or Delay) as soon as the workflow commits.
	After []Dependency
	// WaitFor names a signal (Client.Signal) the step waits for once its
	// parents completed: it stays waiting until the signal was sent (also
	// when it was sent before), or until WaitTimeout passed. Its handler
	// reads the signal's payload with Job.Signal. Empty: it waits for no
	// signal. At most MaxNameLen bytes of valid UTF-8 without NUL.
	WaitFor string
	// WaitTimeout is how long the step waits for its signal, counted from
	// when its parents completed (from the enqueue for a step without
	// parents). Zero: it waits for ever. Needs WaitFor; at least 1ms.
	WaitTimeout time.Duration
	// OnTimeout is what happens when WaitTimeout passed without the
	// signal: TimeoutFail (the zero value) or TimeoutRun.
	OnTimeout TimeoutPolicy
	// Delay holds the step back this long once it is released (its
	// parents completed and, with WaitFor, its signal came or its
	// timeout passed): it is scheduled for then, durably, as a retry's
	// backoff is. Zero: no delay. Opts.Delay and Opts.RunAt, by contrast,
	// count from the enqueue: a step released after its RunAt runs at
	// once, one released before it waits for it.
	Delay time.Duration
}

// TimeoutPolicy is what becomes of a workflow step whose WaitTimeout
// passed before its signal came.
type TimeoutPolicy = enqueue.TimeoutPolicy

const (
	// TimeoutFail (the default) moves the step to the dead-letter table
	// with reason "timed_out"; its dependents are cancelled as for any
	// failed parent (those that RunAnyway run).
	TimeoutFail = enqueue.TimeoutFail
	// TimeoutRun runs the step without its signal: its handler's
	// Job.Signal returns an error wrapping ErrSignalTimedOut.
	TimeoutRun = enqueue.TimeoutRun
)

// Dependency is one parent of a workflow job.
type Dependency struct {
	// Ref is the parent's WorkflowJob.Ref.
	Ref string
	// RunAnyway makes the child run also when this parent dead-letters or
	// is cancelled. False (the default): the child, and every job after
	// it, is cancelled then.
	RunAnyway bool
}

// After returns a dependency on each of refs, with the default policy
// (cancel the dependent when the parent fails): a shorthand for
// WorkflowJob.After.
func After(refs ...string) []Dependency {
	deps := make([]Dependency, len(refs))
	for i, r := range refs {
		deps[i] = Dependency{Ref: r}
	}
	return deps
}

// WorkflowEnqueued reports an enqueued workflow.
type WorkflowEnqueued struct {
	// ID is the workflow's id (docket_workflows.id).
	ID int64
	// Jobs maps each WorkflowJob.Ref to its job's id.
	Jobs map[string]int64
}

// EnqueueWorkflow writes a workflow: its jobs, their dependencies and the
// workflow's row, all or nothing. A job without parents is ready (or
// scheduled) at once; the others wait until every parent completed, then
// become ready in the transaction that removed the last one (or within one
// sweep of a worker when two parents finish at once; see
// docs/workflows.md).
//
// Pass the caller's pgx.Tx to commit the workflow with the caller's own
// writes; the workflow is written under a savepoint, so a refusal leaves
// the caller's transaction usable. With a pool or connection it is written
// in a transaction of its own. db must be able to begin a transaction
// (pgx.Tx, *pgx.Conn and *pgxpool.Pool can).
//
// Validation happens before anything is sent: an ErrInvalidWorkflow error
// for the workflow's shape (see there), an ErrInvalidJob or ErrUnknownKind
// error naming the job's Ref for a job Enqueue would refuse. A UniqueKey
// held by a job in flight refuses the whole workflow with
// ErrWorkflowKeyTaken, having written nothing.
func (c *Client) EnqueueWorkflow(ctx context.Context, db DB, w Workflow) (WorkflowEnqueued, error) {
	res, err := c.jobs.EnqueueWorkflow(ctx, db, c.workflow(w))
	return WorkflowEnqueued(res), err
}

// workflow is w as the engine takes it, each job's options resolved.
func (c *Client) workflow(w Workflow) enqueue.Workflow {
	jobs := make([]enqueue.WorkflowJob, len(w.Jobs))
	for i, j := range w.Jobs {
		after := make([]enqueue.Dependency, len(j.After))
		for k, d := range j.After {
			after[k] = enqueue.Dependency(d)
		}
		jobs[i] = enqueue.WorkflowJob{Ref: j.Ref, Args: j.Args, Opts: resolve(j.Args, j.Opts), After: after,
			WaitFor: j.WaitFor, WaitTimeout: j.WaitTimeout, OnTimeout: j.OnTimeout, Delay: j.Delay}
	}
	return enqueue.Workflow{Name: w.Name, Jobs: jobs}
}

// MaxWorkflowDepth is the deepest a child workflow may be nested: a
// workflow that no job waits for has depth 0, a child workflow its parent
// job's workflow's depth + 1, where a job outside workflows counts as depth
// 0 (its child has depth 1). EnqueueChildWorkflow refuses a deeper one with
// ErrWorkflowTooDeep.
const MaxWorkflowDepth = enqueue.MaxWorkflowDepth

// ErrChildWorkflow wraps every refusal of EnqueueChildWorkflow that is about
// where it was called from: not from a transactional handler's run
// (handlers.RegisterTx) with the context that run was given, a transaction
// other than the handler's own (a savepoint of it included), a job other
// than the one the handler runs, a run that lost its claim, a second child
// workflow in one run, a job with a serial key. Nothing is written.
var ErrChildWorkflow = enqueue.ErrChildWorkflow

// ErrWorkflowTooDeep is returned, wrapped with the depths, when a child
// workflow would be nested deeper than MaxWorkflowDepth. Nothing is
// written.
var ErrWorkflowTooDeep = enqueue.ErrWorkflowTooDeep

// EnqueueChildWorkflow writes w as a child workflow of step, the job whose
// transactional handler (handlers.RegisterTx) is running: pass the
// handler's ctx, its tx and its job (job.Job for a *handlers.Job[T]). The
// workflow commits with the handler's transaction, or not at all: a
// handler that fails after the call rolls it back.
//
// When the handler returns nil, step does not complete: it stays in the
// jobs table, state waiting, until w finishes. Every job of w completed:
// step completes (to history, its dependents released). A job of w
// dead-lettered or was cancelled, or w was cancelled: step moves to the
// dead-letter table with reason child_failed and an error naming w and the
// failed job (its dependents are cancelled). Cancelling step's own
// workflow, or cancelling or deleting step, cancels w. step may be a job
// outside workflows; it then waits the same way.
//
// Refusals, with nothing written: ErrChildWorkflow, ErrWorkflowTooDeep,
// and what EnqueueWorkflow refuses. See docs/workflows.md, "Child
// workflows".
func (c *Client) EnqueueChildWorkflow(ctx context.Context, tx pgx.Tx, step *Job, w Workflow) (WorkflowEnqueued, error) {
	res, err := c.jobs.EnqueueChildWorkflow(ctx, tx, step, c.workflow(w))
	return WorkflowEnqueued(res), err
}
