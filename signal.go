package docket

import (
	"context"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
)

// ErrWorkflowNotFound is returned, naming the id, by Signal for a workflow
// id that does not exist. It is admin.ErrWorkflowNotFound.
var ErrWorkflowNotFound = core.ErrWorkflowNotFound

// ErrWorkflowFinished is returned, naming the workflow's state, by Signal
// for a workflow that was cancelled or finished (none of its jobs is left
// in the jobs table). It is admin.ErrWorkflowFinished.
var ErrWorkflowFinished = core.ErrWorkflowFinished

// ErrSignalNotAwaited is returned by Signal when no step of the running
// workflow waits for the signal: none has it as WaitFor, or those that
// had were released already (by their timeout) or left the queue
// (cancelled with a failed parent, say). The signal is not stored.
var ErrSignalNotAwaited = enqueue.ErrSignalNotAwaited

// ErrSignalSent is returned by Signal when the workflow already received a
// signal of that name: each name is sent once per workflow. The first
// signal and its payload stay.
var ErrSignalSent = enqueue.ErrSignalSent

// ErrInvalidSignal is returned by Signal for an empty name, a name longer
// than MaxNameLen or not valid UTF-8 or holding NUL, and for a payload
// that Enqueue would refuse as a job's payload (see Enqueue). It names the
// workflow and the signal, never the payload.
var ErrInvalidSignal = enqueue.ErrInvalidSignal

// ErrSignalTimedOut is returned, wrapped, by Job.Signal for a workflow step
// that ran because its WaitTimeout passed (TimeoutRun) before its signal
// came.
var ErrSignalTimedOut = core.ErrSignalTimedOut

// ErrNoSignal is returned, wrapped, by Job.Signal for a job that waited for
// no signal.
var ErrNoSignal = core.ErrNoSignal

// Signalled reports a signal Client.Signal sent.
type Signalled struct {
	// Waiting lists the ids of the workflow's steps that wait for the
	// signal, in id order: at least one.
	Waiting []int64
	// Released lists those of them released now (their parents were
	// done): ready, or scheduled after their Delay. The others take the
	// signal when their parents complete.
	Released []int64
}

// Signal sends signal name with payload (encoded to JSON; nil for none) to
// workflow id, through db: pass the caller's pgx.Tx to send it with the
// caller's own writes, so that a rolled-back transaction sends nothing. A
// pool or connection sends it in a transaction of its own.
//
// The signal is stored (docket_workflow_signals): steps waiting for it
// (WorkflowJob.WaitFor) whose parents completed are released in this
// transaction; those whose parents still run find it when their parents
// complete. Each step's handler reads the payload with Job.Signal.
//
// Signal refuses, having written nothing: an unknown id
// (ErrWorkflowNotFound), a cancelled or finished workflow
// (ErrWorkflowFinished), a name sent to the workflow before
// (ErrSignalSent), a name no step waits for any more
// (ErrSignalNotAwaited), an invalid name or payload (ErrInvalidSignal,
// before anything is sent). Only the database's own failures abort a
// caller's transaction. Missing tables return ErrNotMigrated.
func (c *Client) Signal(ctx context.Context, db DB, id int64, name string, payload any) (Signalled, error) {
	res, err := c.jobs.Signal(ctx, db, id, name, payload)
	return Signalled(res), err
}

// SignalSQL is Signal through database/sql: pass the caller's *sql.Tx to
// send the signal with the caller's writes; a *sql.DB or *sql.Conn sends it
// in a transaction of its own.
func (c *Client) SignalSQL(ctx context.Context, db SQLDB, id int64, name string, payload any) (Signalled, error) {
	res, err := c.jobs.SignalSQL(ctx, db, id, name, payload)
	return Signalled(res), err
}
