package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// OneRun is one job to run as a worker would, outside any worker.
type OneRun struct {
	// Handlers hold the job's kind.
	Handlers Handlers
	// Middleware wraps the run, the first outermost; nil for none.
	Middleware []core.Middleware
	// DB gives a transactional handler its transaction; nil is an error
	// for them.
	DB pgsql.Beginner
	// Job is the job to run: Kind, Attempt, MaxAttempts and Payload matter.
	Job *core.Job
}

// OneResult is what a worker would do with the job after this run.
type OneResult struct {
	// Outcome is "completed", "retried", "snoozed" or "dead", the names
	// the worker's metrics use.
	Outcome string
	// Delay is the retry's backoff or the snooze's delay.
	Delay time.Duration
	// Reason is why a dead job is dead (core.ReasonCancelled,
	// ReasonUndecodable or ReasonExhausted).
	Reason string
	// Error is the error text the worker would record on the job.
	Error string
	// Err is what the middleware chain and handler returned.
	Err error
	// TimedOut reports that the kind's Timeout cut the run short.
	TimedOut bool
}

// RunOne runs one job through its kind's middleware, timeout and panic
// handling and classifies the result exactly as a worker's slot does, but
// writes no outcome: there is no claim, lease or finisher (package
// dockettest's Work). A transactional handler gets a transaction from
// r.DB, committed when the run completes and rolled back otherwise; no
// outcome hook is called, since no completion is written. A serial key is
// ignored: nothing else runs. It returns an error, and no result, for an
// unregistered kind or a malformed request.
func RunOne(ctx context.Context, r OneRun) (OneResult, error) {
	if r.Handlers == nil || r.Job == nil {
		return OneResult{}, errors.New("docket: run one job: no handlers or no job")
	}
	opts, ok := r.Handlers.KindOpts(r.Job.Kind)
	if !ok {
		return OneResult{}, fmt.Errorf("docket: run one job: kind %q is not registered", r.Job.Kind)
	}
	kr := newKindRun(Config{Handlers: r.Handlers, Middleware: r.Middleware}, r.Job.Kind, opts)
	if kr.tx && r.DB == nil {
		return OneResult{}, fmt.Errorf("docket: run one job: kind %q is transactional and needs a database", kr.name)
	}
	w := &Worker{log: slog.New(slog.DiscardHandler)}
	t := &task{job: r.Job, kind: kr}
	t.setContext(context.WithCancelCause(ctx))
	defer t.cancel(errJobDone)

	var tx pgx.Tx
	if kr.tx {
		var err error
		if tx, err = r.DB.Begin(t.ctx); err != nil {
			return OneResult{}, fmt.Errorf("docket: run one job: begin transaction: %w", err)
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no-op after Commit
	}
	var run *core.TxRun
	if tx != nil {
		run = &core.TxRun{Tx: tx, JobID: r.Job.ID, ClaimID: r.Job.ClaimID}
	}
	timedOut, err := w.call(t, run)
	if err == nil && tx != nil {
		if cerr := tx.Commit(t.ctx); cerr != nil {
			err = fmt.Errorf("commit: %w", cerr) // the worker retries a failed commit too
		}
	}
	o := w.classify(t, err, timedOut)
	return OneResult{
		Outcome: outcomeName(o), Delay: o.delay, Reason: o.reason, Error: o.err,
		Err: err, TimedOut: timedOut,
	}, nil
}
