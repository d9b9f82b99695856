package handlers

import "github.com/docketq/docket/internal/engine/core"

// The attributes of a job's run span ("docket.run <kind>", see Tracing in
// the package doc) and of the worker's metrics. The payload is never one
// of them: it may hold personal data.
const (
	AttrKind    = core.AttrKind    // docket.job.kind: the job's kind
	AttrQueue   = core.AttrQueue   // docket.job.queue: the job's queue
	AttrJobID   = core.AttrJobID   // docket.job.id: the job's id
	AttrAttempt = core.AttrAttempt // docket.job.attempt: this run's attempt, from 1
	// AttrOutcome is what the run led to: completed, retried, snoozed,
	// cancelled, dead, released (handed back at shutdown) or lost (the
	// lease was lost; the job runs again elsewhere).
	AttrOutcome = core.AttrOutcome
	AttrPool    = core.AttrPool // docket.pool: the worker pool that ran it (metrics)
	// AttrDatabase is docket.database: the database of the worker that ran
	// it, on the metrics of a worker whose WorkerConfig.Database is set.
	AttrDatabase = core.AttrDatabase
)
