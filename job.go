package docket

import "github.com/docketq/docket/internal/engine/core"

// Args is the payload of a job. Kind names the job type; it is stored with
// every job and selects the handler, so it must stay stable across deploys.
// Args values are encoded to JSON when enqueued.
type Args = core.Args

// Job is a claimed job as the worker runtime and handlers see it (a
// handler gets it embedded in its [handlers.Job]). Its fields:
//
//   - ID int64: the job's id, unique in its schema and never reused.
//   - Queue, Kind string: the queue it was claimed from, and its kind.
//   - Priority int: its priority, -10..10 (higher runs first).
//   - RunAt, CreatedAt time.Time: when it became due, and when it was
//     enqueued.
//   - Attempt int: 1 on the first run; it counts runs, not snoozes.
//   - MaxAttempts int: the runs the job gets, as stored when it was
//     enqueued; a failure on the last one dead-letters it.
//   - UniqueKey, Tenant, SerialKey string: as given at enqueue; empty when
//     the job has none.
//   - Payload json.RawMessage: the raw JSON of the job's Args. It may carry
//     personal data and is never logged by Docket.
//   - Meta map[string]string: the job's metadata: the enqueuer's trace
//     context, a schedule run's name and fire time, and what the caller
//     put in its options' Meta.
//   - LockedAt, LeaseUntil time.Time: when this run was claimed, and until
//     when its lease holds (the worker's heartbeat extends it).
//   - LastError string: the error of the previous attempt, if any.
//   - ClaimID int64: the claim this run came from, one number per claim
//     statement, never reused. Every write about the run (heartbeat,
//     outcome) is matched against it, so a run that lost its lease changes
//     nothing after the job was claimed again.
//   - WaitedFor string, SignalPayload json.RawMessage, SignalTimedOut
//     bool: for a workflow step that waited for a signal
//     (WorkflowJob.WaitFor), its name, its payload (nil without one) and
//     whether the step runs because its WaitTimeout passed instead
//     (TimeoutRun). Zero for other jobs. Job.Signal decodes the payload
//     and returns ErrSignalTimedOut or ErrNoSignal.
type Job = core.Job

// State is where a job is in its life inside the jobs table.
type State = core.State

// The states of a live job. docs/state-machine.md shows every move between
// them, and where a job goes when it leaves the jobs table.
const (
	// StateScheduled is a job whose run_at is in the future (first run,
	// retry backoff or snooze). It becomes ready when it is due.
	StateScheduled = core.StateScheduled
	// StateReady is a due job waiting to be claimed.
	StateReady = core.StateReady
	// StateRunning is a job claimed by a worker holding a lease on it.
	StateRunning = core.StateRunning
	// StateWaiting is a job that may not run yet: a serial key's job in the
	// key's line behind the job that holds the key, or a workflow job
	// waiting for its parents. It is never claimed in this state.
	StateWaiting = core.StateWaiting
)
