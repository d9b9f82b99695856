package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5/pgxpool"
)

// drainPoll is how often drain checks, once every handler has run, whether
// the last completions are written.
const drainPoll = 2 * time.Millisecond

// backlog fills the scenario's queue with n no-op jobs, or the jobs item
// gives when not nil (see fillWith), on cfg.Inserters connections, and
// analyzes the jobs table: the planner sees the backlog, as autovacuum's
// analyze would show it to a queue that filled up over time.
func (e *env) backlog(ctx context.Context, n int, scenario string, item func() docket.Item) error {
	idb, err := warmPool(ctx, e.db, e.r.cfg.Inserters)
	if err != nil {
		return err
	}
	prog := e.r.progress(scenario+": filling", int64(n))
	err = e.fillWith(ctx, idb, n, prog, item)
	idb.Close()
	prog.finish()
	if err != nil {
		return err
	}
	_, err = e.db.Exec(ctx, `ANALYZE `+e.table("docket_jobs"))
	return err
}

// waitDrained waits until the handlers ran n jobs, as ran counts them, and
// the jobs table is empty: the last completions are written.
func (e *env) waitDrained(ctx context.Context, n int, ran func() int64) error {
	return wait(ctx, drainPoll, ran, func() (bool, error) {
		if ran() < int64(n) {
			return false, nil
		}
		var left bool
		err := e.db.QueryRow(ctx, `SELECT EXISTS (SELECT FROM `+e.table("docket_jobs")+`)`).Scan(&left)
		return !left, err
	})
}

// timedDrain starts the timed part of scenario (see startTimed) and an
// in-process worker with startWorker, waits until n jobs ran (as ran
// counts them) and the jobs table is empty, then stops the timed part, the
// worker and the progress line. It returns the time from the worker's
// start and the timed part, for its CPU figures.
func (e *env) timedDrain(ctx context.Context, db *pgxpool.Pool, scenario string, prog *progress, n int, ran func() int64,
	startWorker func() (func(), error)) (time.Duration, *timedPart, error) {
	timed, err := e.r.startTimed(ctx, db, scenario, nil)
	if err != nil {
		prog.finish()
		return 0, nil, err
	}
	start := time.Now()
	stop, err := startWorker()
	if err == nil {
		err = e.waitDrained(ctx, n, ran)
	}
	elapsed := time.Since(start)
	if perr := timed.stop(); err == nil {
		err = perr
	}
	if stop != nil {
		stop()
	}
	prog.finish()
	if err != nil {
		return 0, nil, fmt.Errorf("after %d of %d jobs: %w", ran(), n, err)
	}
	return elapsed, timed, nil
}

// drain fills the queue with cfg.Jobs jobs (not timed), then times a
// worker from its start until the jobs table is empty. The SQL-only limit
// is timed once before the drain and once after it, each with a fill of
// its own, and reported as their mean: the load of a shared machine that
// drifts during the run moves both sides of the ratio alike.
func (r *Runner) drain(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	before, beforeCPU, err := r.drainLimit(ctx, db)
	if err != nil {
		return Result{}, fmt.Errorf("limit: %w", err)
	}
	e, err := r.setup(ctx, db, ScenarioDrain)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	n := r.cfg.Jobs
	if err := e.backlog(ctx, n, ScenarioDrain, nil); err != nil {
		return Result{}, err
	}

	var ran atomic.Int64
	prog := r.progress("drain", int64(n))
	handler := func(ctx context.Context, j *handlers.Job[noop]) error {
		ran.Add(1)
		prog.add(1)
		return nil
	}
	var claims, claimed, claimNanos atomic.Int64
	e.onClaim = func(took time.Duration, jobs int) {
		claims.Add(1)
		claimed.Add(int64(jobs))
		claimNanos.Add(int64(took))
	}
	var kids *children
	if r.cfg.Processes > 1 {
		// The processes start before the clock; their workers start on
		// "go", as a worker in this process starts inside the timed part.
		if kids, err = e.spawn(r.cfg.Processes); err != nil {
			prog.finish()
			return Result{}, errors.Join(err, kids.stop())
		}
	}
	var children []int
	if kids != nil {
		children = kids.pids()
	}
	timed, err := r.startTimed(ctx, db, ScenarioDrain, children)
	if err != nil {
		prog.finish()
		if kids != nil {
			err = errors.Join(err, kids.stop())
		}
		return Result{}, err
	}
	resetPeakRSS()
	start := time.Now()
	ranTotal := ran.Load
	var stopWorkers func() error
	if kids != nil {
		ranTotal = func() int64 {
			t := kids.total()
			prog.set(t)
			return t
		}
		stopWorkers = kids.stop
		err = kids.start()
	} else {
		var stop func()
		if stop, err = e.worker(ctx, handler); stop != nil {
			stopWorkers = func() error { stop(); return nil }
		}
	}
	if err == nil {
		err = e.waitDrained(ctx, n, ranTotal)
	}
	elapsed := time.Since(start)
	if perr := timed.stop(); err == nil {
		err = perr
	}
	rss := peakRSSMiB()
	if kids != nil {
		rss = 0 // the workers' memory is in other processes
	}
	if stopWorkers != nil {
		if serr := stopWorkers(); err == nil {
			err = serr
		}
	}
	prog.finish()
	if err != nil {
		return Result{}, fmt.Errorf("after %d of %d jobs: %w", ranTotal(), n, err)
	}
	if c := claims.Load(); c > 0 {
		r.logf("drain: %d claims, %.1f jobs and %.2f ms each on average", c,
			float64(claimed.Load())/float64(c), float64(claimNanos.Load())/float64(c)/1e6)
	}
	res := Result{Jobs: n, Workers: r.cfg.Workers, Processes: r.cfg.Processes, Seconds: elapsed.Seconds(),
		JobsPerSec: float64(n) / elapsed.Seconds(), MaxRSSMiB: rss, CPU: timed.cpu(n)}
	after, afterCPU, err := r.drainLimit(ctx, db)
	if err != nil {
		return Result{}, fmt.Errorf("limit: %w", err)
	}
	r.logf("drain: SQL-only limit %.0f jobs/s before, %.0f after", before, after)
	res.LimitPerSec = (before + after) / 2
	res.LimitCPU = cpuUse{bench: (beforeCPU.bench + afterCPU.bench) / 2, pg: (beforeCPU.pg + afterCPU.pg) / 2,
		pgKnown: beforeCPU.pgKnown && afterCPU.pgKnown}
	return res, nil
}
