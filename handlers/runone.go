package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	docket "github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/runone"
	"github.com/jackc/pgx/v5"
)

// The single-run path for package dockettest goes through internal/runone
// rather than an exported function, so that handlers' public API does not
// grow a testing entry point.
func init() { runone.Run = runOnce }

// runOnce runs one job through the kind's middleware, timeout and panic
// handling and classifies the result exactly as a worker's slot does, but
// writes no outcome: there is no claim, lease or completer. A transactional
// handler gets a transaction from req.DB, committed when the run completes
// and rolled back otherwise; the kind's outcome hook is not called, since
// no completion is written. A serial key is ignored: nothing else runs.
func runOnce(ctx context.Context, req runone.Request) (runone.Result, error) {
	reg, ok := req.Registry.(*Registry)
	if !ok || reg == nil {
		return runone.Result{}, errors.New("docket: run one job: no registry")
	}
	var mws []Middleware
	if req.Middleware != nil {
		if mws, ok = req.Middleware.([]Middleware); !ok {
			return runone.Result{}, fmt.Errorf("docket: run one job: middleware is a %T", req.Middleware)
		}
	}
	if req.Job == nil {
		return runone.Result{}, errors.New("docket: run one job: no job")
	}
	k := reg.lookup(req.Job.Kind)
	if k == nil {
		return runone.Result{}, fmt.Errorf("docket: run one job: kind %q is not registered", req.Job.Kind)
	}
	if k.tx && req.DB == nil {
		return runone.Result{}, fmt.Errorf("docket: run one job: kind %q is transactional and needs a database", k.name)
	}
	inner := k.inner
	kr := &kindRun{kind: k, work: chain(mws, func(ctx context.Context, job *docket.Job) error {
		tx, _ := ctx.Value(txKey{}).(pgx.Tx)
		return inner(ctx, tx, job)
	})}
	w := &Worker{log: slog.New(slog.DiscardHandler)}
	e := &task{job: req.Job, kind: kr}
	e.ctx, e.cancel = context.WithCancelCause(ctx)
	defer e.cancel(errJobDone)

	var tx pgx.Tx
	if k.tx {
		var err error
		if tx, err = req.DB.Begin(e.ctx); err != nil {
			return runone.Result{}, fmt.Errorf("docket: run one job: begin transaction: %w", err)
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }() // no-op after Commit
	}
	timedOut, err := w.call(e, tx)
	if err == nil && tx != nil {
		if cerr := tx.Commit(e.ctx); cerr != nil {
			err = fmt.Errorf("commit: %w", cerr) // the worker retries a failed commit too
		}
	}
	o := w.classify(e, err, timedOut)
	return runone.Result{
		Outcome: outcomeName(o), Delay: o.delay, Reason: o.reason, Error: o.err,
		Err: err, TimedOut: timedOut,
	}, nil
}
