package bench

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5/pgxpool"
)

// drainPoll is how often drain checks, once every handler has run, whether
// the last completions are written.
const drainPoll = 2 * time.Millisecond

// drain fills the queue with cfg.Jobs jobs (not timed), then times a
// worker from its start until the jobs table is empty.
func (r *Runner) drain(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	e, err := r.setup(ctx, db, ScenarioDrain)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	n := r.cfg.Jobs
	prog := r.progress("drain: filling", int64(n))
	err = e.fill(ctx, n, prog)
	prog.finish()
	if err != nil {
		return Result{}, err
	}
	// The planner sees the backlog, as autovacuum's analyze would show it
	// to a queue that filled up over time.
	if _, err := db.Exec(ctx, `ANALYZE `+e.table("docket_jobs")); err != nil {
		return Result{}, err
	}

	var ran atomic.Int64
	prog = r.progress("drain", int64(n))
	handler := func(ctx context.Context, j *handlers.Job[noop]) error {
		ran.Add(1)
		prog.add(1)
		return nil
	}
	stopProfile, err := r.profile(ScenarioDrain)
	if err != nil {
		prog.finish()
		return Result{}, err
	}
	resetPeakRSS()
	start := time.Now()
	stopWorker, err := e.worker(ctx, handler)
	if err == nil {
		err = wait(ctx, drainPoll, ran.Load, func() (bool, error) {
			if ran.Load() < int64(n) {
				return false, nil
			}
			var left bool
			err := db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM `+e.table("docket_jobs")+`)`).Scan(&left)
			return !left, err
		})
	}
	elapsed := time.Since(start)
	rss := peakRSSMiB()
	if perr := stopProfile(); err == nil {
		err = perr
	}
	if stopWorker != nil {
		stopWorker()
	}
	prog.finish()
	if err != nil {
		return Result{}, fmt.Errorf("after %d of %d jobs: %w", ran.Load(), n, err)
	}
	return Result{Jobs: n, Workers: r.cfg.Workers, Seconds: elapsed.Seconds(),
		JobsPerSec: float64(n) / elapsed.Seconds(), MaxRSSMiB: rss}, nil
}
