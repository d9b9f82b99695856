package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The SQL-only limit's shape: claims of limitClaim jobs on limitConns
// connections, each claim completed at once (into history, or deleted with
// history off, as the worker of the same run completes them).
const (
	limitClaim = 500
	limitConns = 2
)

// limit measures both limits and reports them as one result line.
func (r *Runner) limit(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	drain, _, err := r.drainLimit(ctx, db)
	if err != nil {
		return Result{}, err
	}
	insert, batched, err := r.insertLimit(ctx, db)
	if err != nil {
		return Result{}, err
	}
	r.logf("limit: drain %.0f jobs/s, insert %.0f rows/s in one COPY, %.0f in COPYs of %d", drain, insert, batched, r.cfg.Batch)
	return Result{Jobs: r.cfg.Jobs, Batch: r.cfg.Batch, DrainLimit: drain, InsertLimit: insert, BatchedLimitPerSec: batched}, nil
}

// drainLimit fills a fresh schema with cfg.Jobs jobs (not timed), then
// times limitConns connections that claim limitClaim jobs at a time with
// the worker's own claim statement and complete them with its own
// completion statement (the one of cfg's history setting), with no
// handler, worker or outcome batching in between: the rate PostgreSQL
// sustains for the statements a drain runs, and the CPU they cost per
// 1,000 jobs, which the load of a shared machine moves far less than the
// rate.
func (r *Runner) drainLimit(ctx context.Context, db *pgxpool.Pool) (float64, cpuUse, error) {
	e, err := r.setup(ctx, db, "limit drain")
	defer e.drop()
	if err != nil {
		return 0, cpuUse{}, err
	}
	n := r.cfg.Jobs
	if err := e.backlog(ctx, n, "limit drain", nil); err != nil {
		return 0, cpuUse{}, err
	}
	q, err := queue.New(e.schema, queue.Config{DisableHistory: r.cfg.DisableHistory})
	if err != nil {
		return 0, cpuUse{}, err
	}
	conns, err := warmPool(ctx, e.db, limitConns)
	if err != nil {
		return 0, cpuUse{}, err
	}
	defer conns.Close()
	clock := newCPUClock(ctx, db)
	params := queue.ClaimParams{Worker: uuid.New(), Queues: []string{docket.DefaultQueue},
		Kinds: []string{noop{}.Kind()}, Limit: limitClaim, Lease: time.Minute}
	var wg sync.WaitGroup
	errs := make([]error, limitConns)
	from := clock.read()
	start := time.Now()
	for i := range limitConns {
		wg.Go(func() {
			runs := make([]queue.Run, 0, limitClaim)
			for {
				jobs, err := q.Claim(ctx, conns, params)
				if err != nil || len(jobs) == 0 {
					errs[i] = err
					return
				}
				runs = runs[:0]
				for _, j := range jobs {
					runs = append(runs, queue.RunOf(j))
				}
				if _, err := q.Complete(ctx, conns, params.Worker, runs, time.Time{}); err != nil {
					errs[i] = err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := clock.use(from, clock.read(), n)
	if err := errors.Join(errs...); err != nil {
		return 0, cpuUse{}, err
	}
	var left int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM `+e.table("docket_jobs")).Scan(&left); err != nil {
		return 0, cpuUse{}, err
	}
	if left != 0 {
		return 0, cpuUse{}, fmt.Errorf("the SQL-only drain left %d of %d jobs", left, n)
	}
	return float64(n) / elapsed.Seconds(), cpu, nil
}

// insertLimit times one COPY of cfg.Jobs rows into a fresh docket_jobs,
// the columns the bulk enqueue writes, ids and ready order from their
// defaults: the rate PostgreSQL takes the rows in at. batched is the same
// rows as bare COPYs of cfg.Batch rows, a transaction each, the shape of
// the insert scenario's transactions.
func (r *Runner) insertLimit(ctx context.Context, db *pgxpool.Pool) (one, batched float64, err error) {
	n := r.cfg.Jobs
	rows := limitRows(n)
	for _, size := range []int{n, r.cfg.Batch} {
		rate, err := r.copyRate(ctx, db, rows, size)
		if err != nil {
			return 0, 0, err
		}
		if size == n {
			one = rate
		} else {
			batched = rate
		}
	}
	return one, batched, nil
}

// limitRows returns n rows of a no-op job, in the columns copyRate
// copies.
func limitRows(n int) [][]any {
	rows := make([][]any, n)
	payload := []byte(`{}`)
	for i := range rows {
		rows[i] = []any{"ready", docket.DefaultQueue, noop{}.Kind(), int16(0), int32(25), "", nil, payload, nil}
	}
	return rows
}

// copyRate copies rows into a fresh schema's docket_jobs in COPYs of size
// rows, a transaction each, and returns the rows per second.
func (r *Runner) copyRate(ctx context.Context, db *pgxpool.Pool, rows [][]any, size int) (float64, error) {
	e, err := r.setup(ctx, db, "limit insert")
	defer e.drop()
	if err != nil {
		return 0, err
	}
	conn, err := e.db.Acquire(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Release()
	cols := []string{"state", "queue", "kind", "priority", "max_attempts", "tenant", "serial_key", "payload", "meta"}
	start := time.Now()
	for first := 0; first < len(rows); first += size {
		batch := rows[first:min(len(rows), first+size)]
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			copied, err := tx.CopyFrom(ctx, pgx.Identifier{e.schema, "docket_jobs"}, cols, pgx.CopyFromRows(batch))
			if err == nil && copied != int64(len(batch)) {
				err = fmt.Errorf("COPY took %d of %d rows", copied, len(batch))
			}
			return err
		})
		if err != nil {
			return 0, err
		}
	}
	return float64(len(rows)) / time.Since(start).Seconds(), nil
}
