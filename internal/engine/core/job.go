// Package core holds the types every Docket package shares: the job
// arguments interface, the job as a handler sees it, and its states. The
// root package docket re-exports them; library packages import this one
// (as docket) so that the root package can build on them.
package core

import (
	"encoding/json"
	"log/slog"
	"time"
)

// Args is the payload of a job. Kind names the job type; it is stored with
// every job and selects the handler, so it must stay stable across deploys.
// Args values are encoded to JSON when enqueued.
type Args interface {
	Kind() string
}

// State is where a job is in its life inside the jobs table.
type State string

const (
	// StateScheduled is a job whose run_at is in the future (first run,
	// retry backoff or snooze). It becomes ready when it is due.
	StateScheduled State = "scheduled"
	// StateReady is a due job waiting to be claimed.
	StateReady State = "ready"
	// StateRunning is a job claimed by a worker holding a lease on it.
	StateRunning State = "running"
	// StateWaiting is a job that may not run yet: a serial key's job in the
	// key's line behind the job that holds the key, or a workflow job
	// waiting for its parents. It is never claimed in this state.
	StateWaiting State = "waiting"
)

// States returns every state of a live job, each once, in the order the job
// list and the dashboard offer them. It is the one list of them in Go: the
// jobs table's CHECK constraint, the Ent schema and docs/state-machine.md
// name the same states, and a test fails when they differ. Each call
// returns a new slice.
func States() []State {
	return []State{StateScheduled, StateReady, StateWaiting, StateRunning}
}

// Job is a claimed job as the worker runtime and handlers see it. Payload is
// the raw JSON of the job's Args; it may carry personal data and is never
// logged by Docket.
type Job struct {
	ID          int64
	Queue       string
	Kind        string
	Priority    int
	RunAt       time.Time
	CreatedAt   time.Time
	Attempt     int // 1 on the first run; counts runs, not counting snoozes
	MaxAttempts int
	UniqueKey   string // empty when the job has none
	Tenant      string // empty when the job has none
	SerialKey   string // empty when the job has none
	Payload     json.RawMessage
	Meta        map[string]string
	LockedAt    time.Time
	LeaseUntil  time.Time
	LastError   string // error of the previous attempt, if any
	// ClaimID identifies the claim this run came from: one number per claim
	// statement, never reused. Every write about the run (heartbeat,
	// outcome) is matched against it, so a run that lost its lease changes
	// nothing after the job was claimed again. Zero for a job that no
	// worker claimed.
	ClaimID int64
	// WaitedFor is the name of the signal this workflow step waited for
	// (docket.WorkflowJob.WaitFor); empty for every other job. Read the
	// signal with Signal.
	WaitedFor string
	// SignalPayload is the JSON payload of that signal; nil when the
	// signal had none, when the step timed out, and for other jobs.
	SignalPayload json.RawMessage
	// SignalTimedOut reports a step released by its WaitTimeout (policy
	// docket.TimeoutRun) because its signal did not come in time.
	SignalTimedOut bool

	// result is what the handler recorded (see SetResult); inputs what a
	// workflow job's claim read of its workflow (see SetInputs).
	result, inputs json.RawMessage
}

// The range of job priorities; package outbox exports them and the claim
// cursors of internal/queue walk it, highest first.
const (
	MinPriority = -10 // lowest priority
	MaxPriority = 10  // highest priority
)

// JobAttrs returns the attributes Docket logs for a job: job_id, kind,
// attempt and queue. Never the payload.
func JobAttrs(job *Job) []any {
	return []any{
		slog.Int64("job_id", job.ID),
		slog.String("kind", job.Kind),
		slog.Int("attempt", job.Attempt),
		slog.String("queue", job.Queue),
	}
}
