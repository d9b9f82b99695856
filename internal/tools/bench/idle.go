package bench

import (
	"context"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5/pgxpool"
)

// settle is how long idle lets a fresh worker run before the first job, so
// that its start-up claims and maintenance are over and the queue is idle:
// three poll rounds, after which its connections have prepared the claim.
// With half a second the first job's pickup carried that preparation (about
// 3 ms, once per connection) and was the run's slowest every time.
const settle = 3500 * time.Millisecond

// idle enqueues Config.IdleJobs jobs, one every IdleInterval, on an empty queue
// and reports their commit-to-start latencies.
func (r *Runner) idle(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	e, err := r.setup(ctx, db, ScenarioIdle)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	rec := newRecorder(r.cfg.IdleJobs)
	stopWorker, err := e.worker(ctx, func(ctx context.Context, j *handlers.Job[noop]) error {
		rec.started(j.ID, time.Now())
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	defer stopWorker()
	// A connection for the enqueues, opened before the timed part.
	if err := warm(ctx, db, 1); err != nil {
		return Result{}, err
	}
	select {
	case <-ctx.Done():
		return Result{}, ctx.Err()
	case <-time.After(settle):
	}

	timed, err := r.startTimed(ctx, db, ScenarioIdle, nil)
	if err != nil {
		return Result{}, err
	}
	prog := r.progress("idle", int64(r.cfg.IdleJobs))
	tick := time.NewTicker(IdleInterval)
	for range r.cfg.IdleJobs {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-tick.C:
		}
		if err != nil {
			break
		}
		var id int64
		if id, err = e.enqueueOne(ctx, db); err != nil {
			break
		}
		rec.committed(id, time.Now())
		prog.add(1)
	}
	tick.Stop()
	if err == nil {
		err = e.waitStarted(ctx, rec)
	}
	if perr := timed.stop(); err == nil {
		err = perr
	}
	prog.finish()
	if err != nil {
		return Result{}, err
	}
	committed, _ := rec.counts()
	return Result{Jobs: committed, Workers: r.cfg.Workers, Latency: Summarize(rec.latencies()), CPU: timed.cpu(committed)}, nil
}
