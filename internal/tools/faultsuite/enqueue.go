package faultsuite

import (
	"context"
	"fmt"
	"time"

	"github.com/docketq/docket"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Enqueuer puts in numbered Work jobs, a batch per transaction with bulk
// enqueue (COPY for jobs without a unique key or a delay), and records each
// committed batch in the batches table in the same transaction. A batch
// that fails (a reset connection, a server restarting) is retried once it
// is known not to have committed, so that every number is enqueued exactly
// once whatever the network does. Use one Enqueuer per schema, from one
// goroutine.
type Enqueuer struct {
	DB     *pgxpool.Pool
	Client *docket.Client // enqueue-only, on Schema
	Schema string
	// Item returns the job numbered n. Nil means half Plain, half Tx.
	Item func(n int) docket.Item

	next    int // the next job's number
	batch   int // the next batch's number
	Retries int // failed attempts so far
}

// Enqueue puts in the next n jobs as one batch, retrying until it
// committed or ctx ends.
func (e *Enqueuer) Enqueue(ctx context.Context, n int) error {
	items := make([]docket.Item, n)
	doomed := 0
	for i := range items {
		items[i] = e.item(e.next + i)
		if w, ok := work(items[i].Args); ok && w.Mode == ModeDoomed {
			doomed++
		}
	}
	b := e.batch
	record := `INSERT INTO ` + pgx.Identifier{e.Schema}.Sanitize() + `.batches (b, jobs, doomed) VALUES ($1, $2, $3)`
	for {
		err := pgx.BeginFunc(ctx, e.DB, func(tx pgx.Tx) error {
			if _, err := e.Client.EnqueueMany(ctx, tx, items); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, record, b, n, doomed)
			return err
		})
		if err == nil {
			break
		}
		e.Retries++
		committed, cerr := e.committed(ctx, b)
		if cerr != nil {
			return fmt.Errorf("faultsuite: batch %d: %w (after %v)", b, cerr, err)
		}
		if committed {
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("faultsuite: batch %d: %w", b, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
	e.next += n
	e.batch++
	return nil
}

// Enqueued returns how many jobs were enqueued.
func (e *Enqueuer) Enqueued() int { return e.next }

// committed asks until the database answers whether batch b committed.
func (e *Enqueuer) committed(ctx context.Context, b int) (bool, error) {
	q := `SELECT EXISTS (SELECT FROM ` + pgx.Identifier{e.Schema}.Sanitize() + `.batches WHERE b = $1)`
	for {
		var ok bool
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := e.DB.QueryRow(qctx, q, b).Scan(&ok)
		cancel()
		if err == nil {
			return ok, nil
		}
		select {
		case <-ctx.Done():
			return false, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (e *Enqueuer) item(n int) docket.Item {
	if e.Item != nil {
		return e.Item(n)
	}
	if n%2 == 0 {
		return docket.Item{Args: Plain{Work{N: n}}}
	}
	return docket.Item{Args: Tx{Work{N: n}}}
}

// work returns the Work of a harness job's args.
func work(a any) (Work, bool) {
	switch v := a.(type) {
	case Plain:
		return v.Work, true
	case Tx:
		return v.Work, true
	}
	return Work{}, false
}
