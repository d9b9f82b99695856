package bench

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/docketq/docket"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// insert enqueues cfg.Jobs no-op jobs in batches of cfg.Batch, one
// transaction per batch on cfg.Inserters connections, and times it. The
// one bare COPY of the same rows is timed before and after it, and its
// limit is the mean of the two, as drain's.
func (r *Runner) insert(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	before, err := r.copyRate(ctx, db, limitRows(r.cfg.Jobs), r.cfg.Jobs)
	if err != nil {
		return Result{}, fmt.Errorf("limit: %w", err)
	}
	e, err := r.setup(ctx, db, ScenarioInsert)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	idb, err := warmPool(ctx, e.db, e.r.cfg.Inserters)
	if err != nil {
		return Result{}, err
	}
	defer idb.Close()
	timed, err := r.startTimed(ctx, db, ScenarioInsert, nil)
	if err != nil {
		return Result{}, err
	}
	prog := r.progress("insert", int64(r.cfg.Jobs))
	start := time.Now()
	err = e.fill(ctx, idb, r.cfg.Jobs, prog)
	elapsed := time.Since(start)
	prog.finish()
	if perr := timed.stop(); err == nil {
		err = perr
	}
	if err != nil {
		return Result{}, err
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM `+e.table("docket_jobs")).Scan(&n); err != nil {
		return Result{}, err
	}
	if n != r.cfg.Jobs {
		return Result{}, fmt.Errorf("inserted %d jobs but the table holds %d", r.cfg.Jobs, n)
	}
	res := Result{Jobs: n, Batch: r.cfg.Batch, Inserters: r.cfg.Inserters, Seconds: elapsed.Seconds(),
		JobsPerSec: float64(n) / elapsed.Seconds(), CPU: timed.cpu(n)}
	after, batched, err := r.insertLimit(ctx, db)
	if err != nil {
		return Result{}, fmt.Errorf("limit: %w", err)
	}
	r.logf("insert: one COPY %.0f rows/s before, %.0f after", before, after)
	res.LimitPerSec, res.BatchedLimitPerSec = (before+after)/2, batched
	return res, nil
}

// fill enqueues n no-op jobs with EnqueueMany in batches of cfg.Batch, one
// transaction per batch, from cfg.Inserters connections at once, counting
// them on prog. db must have that many connections.
func (e *env) fill(ctx context.Context, db *pgxpool.Pool, n int, prog *progress) error {
	return e.fillWith(ctx, db, n, prog, nil)
}

// fillWith is fill with each job from item, when not nil, instead of a
// no-op job with no options. item is called from several goroutines.
func (e *env) fillWith(ctx context.Context, db *pgxpool.Pool, n int, prog *progress, item func() docket.Item) error {
	items := make([]docket.Item, min(e.r.cfg.Batch, n))
	for i := range items {
		items[i].Args = noop{}
	}
	var (
		next = make(chan int) // the first job of the next batch
		errs = make(chan error, e.r.cfg.Inserters)
		done atomic.Int64
	)
	for range e.r.cfg.Inserters {
		go func() {
			for first := range next {
				batch := items[:min(len(items), n-first)]
				if item != nil {
					batch = slices.Clone(batch)
					for i := range batch {
						batch[i] = item()
					}
				}
				err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
					_, err := e.jobs.EnqueueMany(ctx, tx, batch)
					return err
				})
				if err != nil {
					errs <- fmt.Errorf("enqueue batch at job %d: %w", first, err)
					for range next { // let the feeder finish
					}
					return
				}
				prog.set(done.Add(int64(len(batch))))
			}
			errs <- nil
		}()
	}
	for first := 0; first < n; first += len(items) {
		next <- first
	}
	close(next)
	var first error
	for range e.r.cfg.Inserters {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
