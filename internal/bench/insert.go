package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// insert enqueues cfg.Jobs no-op jobs in batches of cfg.Batch, one
// transaction per batch, and times it.
func (r *Runner) insert(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	e, err := r.setup(ctx, db, ScenarioInsert)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	stopProfile, err := r.profile(ScenarioInsert)
	if err != nil {
		return Result{}, err
	}
	prog := r.progress("insert", int64(r.cfg.Jobs))
	start := time.Now()
	err = e.fill(ctx, r.cfg.Jobs, prog)
	elapsed := time.Since(start)
	prog.finish()
	if perr := stopProfile(); err == nil {
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
	return Result{Jobs: n, Batch: r.cfg.Batch, Seconds: elapsed.Seconds(), JobsPerSec: float64(n) / elapsed.Seconds()}, nil
}

// fill enqueues n no-op jobs with EnqueueMany in batches of cfg.Batch, one
// transaction per batch, from one connection, counting them on prog.
func (e *env) fill(ctx context.Context, n int, prog *progress) error {
	items := make([]outbox.Item, min(e.r.cfg.Batch, n))
	for i := range items {
		items[i].Args = noop{}
	}
	for done := 0; done < n; {
		batch := items[:min(len(items), n-done)]
		err := pgx.BeginFunc(ctx, e.db, func(tx pgx.Tx) error {
			_, err := e.ob.EnqueueMany(ctx, tx, batch)
			return err
		})
		if err != nil {
			return fmt.Errorf("enqueue batch at job %d: %w", done, err)
		}
		done += len(batch)
		prog.set(int64(done))
	}
	return nil
}
