package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// startedPoll is how often a latency scenario checks whether every
// committed job has started.
const startedPoll = 5 * time.Millisecond

// sustained runs cfg.Producers producers at a total of cfg.Rate jobs/s for
// cfg.Duration against a running worker, and reports the rate achieved and
// the commit-to-start latencies.
func (r *Runner) sustained(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	e, err := r.setup(ctx, db, ScenarioSustained)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	pdb, err := warmPool(ctx, db, r.cfg.Producers)
	if err != nil {
		return Result{}, err
	}
	defer pdb.Close()
	target := int(float64(r.cfg.Rate) * r.cfg.Duration.Seconds())
	rec := newRecorder(target)
	stopWorker, err := e.worker(ctx, func(ctx context.Context, j *handlers.Job[noop]) error {
		rec.started(j.ID, time.Now())
		return nil
	})
	if err != nil {
		return Result{}, err
	}
	defer stopWorker()

	timed, err := r.startTimed(ctx, db, ScenarioSustained, nil)
	if err != nil {
		return Result{}, err
	}
	prog := r.progress("sustained", int64(target))
	start := time.Now()
	err = e.produce(ctx, pdb, r.cfg.Producers, r.cfg.Rate, start, start.Add(r.cfg.Duration), func(id int64, at time.Time) {
		rec.committed(id, at)
		prog.add(1)
	})
	produced, _ := rec.counts()
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
	return Result{Rate: r.cfg.Rate, AchievedRate: float64(produced) / r.cfg.Duration.Seconds(),
		Jobs: produced, Producers: r.cfg.Producers, Workers: r.cfg.Workers,
		Latency: Summarize(rec.latencies()), CPU: timed.cpu(produced)}, nil
}

// produce runs n producers that enqueue single no-op jobs, one per
// transaction, on one shared schedule of rate jobs/s from start until
// deadline, and calls committed after each commit. Job k is due at start +
// k/rate; a producer that is late does not sleep, so the schedule, not the
// producers, sets the pace and sleeps cannot accumulate drift. It returns
// when the deadline has passed, or the first enqueue error.
func (e *env) produce(ctx context.Context, db *pgxpool.Pool, n, rate int, start, deadline time.Time, committed func(id int64, at time.Time)) error {
	return e.produceArgs(ctx, db, noop{}, n, rate, start, deadline, committed)
}

// produceArgs is produce with jobs of args instead of no-op jobs.
func (e *env) produceArgs(ctx context.Context, db *pgxpool.Pool, args core.Args, n, rate int, start, deadline time.Time, committed func(id int64, at time.Time)) error {
	pctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	interval := float64(time.Second) / float64(rate)
	var (
		next atomic.Int64 // the next job's place in the shared schedule
		wg   sync.WaitGroup
	)
	for range n {
		wg.Go(func() {
			timer := time.NewTimer(time.Hour)
			defer timer.Stop()
			for {
				k := next.Add(1) - 1
				due := start.Add(time.Duration(float64(k) * interval))
				if !due.Before(deadline) {
					return
				}
				if d := time.Until(due); d > 0 {
					timer.Reset(d)
					select {
					case <-pctx.Done():
						return
					case <-timer.C:
					}
				}
				if time.Now().After(deadline) {
					return
				}
				id, err := e.enqueueArgs(pctx, db, args)
				if err != nil {
					cancel(fmt.Errorf("enqueue: %w", err))
					return
				}
				committed(id, time.Now())
			}
		})
	}
	wg.Wait()
	if err := context.Cause(pctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// enqueueOne enqueues one no-op job in a transaction of its own (explicit
// with Config.ProducerTx) and returns its id once it has committed.
func (e *env) enqueueOne(ctx context.Context, db *pgxpool.Pool) (int64, error) {
	return e.enqueueArgs(ctx, db, noop{})
}

// enqueueArgs is enqueueOne with a job of args.
func (e *env) enqueueArgs(ctx context.Context, db *pgxpool.Pool, args core.Args) (int64, error) {
	if !e.r.cfg.ProducerTx {
		res, err := e.jobs.Enqueue(ctx, db, args, docket.Opts{})
		return res.ID, err
	}
	var id int64
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		res, err := e.jobs.Enqueue(ctx, tx, args, docket.Opts{})
		id = res.ID
		return err
	})
	return id, err
}

// waitStarted waits until every job rec saw committed has started.
func (e *env) waitStarted(ctx context.Context, rec *recorder) error {
	started := func() int64 {
		_, s := rec.counts()
		return int64(s)
	}
	err := wait(ctx, startedPoll, started, func() (bool, error) {
		c, s := rec.counts()
		return s >= c, nil
	})
	if err != nil {
		c, s := rec.counts()
		return fmt.Errorf("%d of %d committed jobs started: %w", s, c, err)
	}
	return nil
}
