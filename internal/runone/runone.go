// Package runone carries the single-run path of package handlers to package
// dockettest without making it public API of handlers: handlers sets [Run]
// in an init function, dockettest calls it. Nothing else may use it.
//
// The registry and middleware travel as any because this package cannot
// import handlers (handlers imports it); handlers checks their types.
package runone

import (
	"context"
	"time"

	docket "github.com/docketq/docket/internal/engine/core"
	"github.com/jackc/pgx/v5"
)

// Beginner starts the transaction a transactional handler runs in
// (*pgxpool.Pool, *pgx.Conn and pgx.Tx satisfy it).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Request is one job to run as a worker would.
type Request struct {
	// Registry is a *handlers.Registry holding the job's kind.
	Registry any
	// Middleware is a []handlers.Middleware, the first outermost; nil for none.
	Middleware any
	// DB gives transactional handlers their transaction; nil is an error for them.
	DB Beginner
	// Job is the job to run: Kind, Attempt, MaxAttempts and Payload matter.
	Job *docket.Job
}

// Result is what the worker would do with the job after this run.
type Result struct {
	// Outcome is "completed", "retried", "snoozed" or "dead", the names
	// the worker's metrics use.
	Outcome string
	// Delay is the retry's backoff or the snooze's delay.
	Delay time.Duration
	// Reason is why a dead job is dead: outbox.ReasonCancelled,
	// ReasonUndecodable or ReasonExhausted.
	Reason string
	// Error is the error text the worker would record on the job.
	Error string
	// Err is what the middleware chain and handler returned.
	Err error
	// TimedOut reports that the kind's Timeout cut the run short.
	TimedOut bool
}

// Run runs req. It is set by package handlers; it returns an error, and no
// result, when the kind is not registered or req is malformed.
var Run func(ctx context.Context, req Request) (Result, error)
