package docket

import "github.com/docketq/docket/internal/core"

// Args is the payload of a job. Kind names the job type; it is stored with
// every job and selects the handler, so it must stay stable across deploys.
// Args values are encoded to JSON when enqueued.
type Args = core.Args

// Job is a claimed job as the worker runtime and handlers see it. Payload is
// the raw JSON of the job's Args; it may carry personal data and is never
// logged by Docket. ClaimID identifies the claim a run came from; every
// write about the run is matched against it.
type Job = core.Job

// State is where a job is in its life inside the jobs table.
type State = core.State

// The states of a live job.
const (
	// StateScheduled is a job whose run_at is in the future (first run,
	// retry backoff or snooze). It becomes ready when it is due.
	StateScheduled = core.StateScheduled
	// StateReady is a due job waiting to be claimed.
	StateReady = core.StateReady
	// StateRunning is a job claimed by a worker holding a lease on it.
	StateRunning = core.StateRunning
	// StateWaiting is a due job of a serial key waiting in the key's line
	// for the jobs ahead of it to finish. It is never claimed in this state.
	StateWaiting = core.StateWaiting
)
