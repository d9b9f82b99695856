package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Every outcome below is guarded by locked_by = worker and state = running:
// a worker that lost a job (its lease expired and it was reaped or claimed
// again) changes nothing, and the job is missing from the returned ids.

// Complete finishes the worker's jobs ids: they move to history, or are
// deleted when history is off. It returns the ids it finished.
func (c *Client) Complete(ctx context.Context, db Pgx, worker uuid.UUID, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if !c.history {
		return c.ids(db, ctx, c.q.completeDelete, ids, worker)
	}
	done, err := c.ids(db, ctx, c.q.completeHistory, ids, worker)
	if sqlState(err) == codeNoPartition {
		// Today's history partition is missing (maintenance has not run yet):
		// create it and try again. In a transaction the failed statement
		// aborted it, so leave the retry to the caller.
		if !isTx(db) {
			if perr := c.EnsurePartitions(ctx, db, time.Now(), 1); perr == nil {
				return c.ids(db, ctx, c.q.completeHistory, ids, worker)
			}
		}
	}
	return done, err
}

// Failure is one failed attempt of a job.
type Failure struct {
	ID int64
	// Error is recorded as the job's last error. It must not contain payload data.
	Error string
	// Delay is how long to wait before the next attempt (see Backoff).
	Delay time.Duration
}

// FailResult says what Fail did with each job it still owned.
type FailResult struct {
	Retried []int64 // back to ready or scheduled after their delay
	Dead    []int64 // attempts exhausted: moved to the dead-letter table
}

// Fail records failed attempts. Jobs with attempts left are retried after
// their Delay; jobs on their last attempt move to the dead-letter table.
func (c *Client) Fail(ctx context.Context, db Pgx, worker uuid.UUID, failures []Failure) (FailResult, error) {
	var res FailResult
	if len(failures) == 0 {
		return res, nil
	}
	ids := make([]int64, len(failures))
	errs := make([]string, len(failures))
	delays := make([]int64, len(failures))
	for i, f := range failures {
		ids[i], errs[i], delays[i] = f.ID, f.Error, f.Delay.Milliseconds()
	}
	err := c.run(ctx, db, sqlIndexSettings, c.q.fail, []any{ids, worker, errs, delays}, func(rows pgx.Rows) error {
		for rows.Next() {
			var id int64
			var dead bool
			if err := rows.Scan(&id, &dead); err != nil {
				return err
			}
			if dead {
				res.Dead = append(res.Dead, id)
			} else {
				res.Retried = append(res.Retried, id)
			}
		}
		return nil
	})
	if err != nil {
		return FailResult{}, err
	}
	return res, nil
}

// Snoozed is one job to run again later without spending an attempt.
type Snoozed struct {
	ID    int64
	Delay time.Duration
}

// Snooze puts the worker's jobs back for another run after their delay; the
// attempt the claim counted is given back.
func (c *Client) Snooze(ctx context.Context, db Pgx, worker uuid.UUID, jobs []Snoozed) ([]int64, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(jobs))
	delays := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i], delays[i] = j.ID, j.Delay.Milliseconds()
	}
	return c.ids(db, ctx, c.q.snooze, ids, worker, delays)
}

// Dead-letter reasons recorded in docket_jobs_dead.reason.
const (
	ReasonExhausted    = "exhausted"     // every attempt failed
	ReasonCancelled    = "cancelled"     // the handler cancelled the job
	ReasonUndecodable  = "undecodable"   // the payload does not decode into the args type
	ReasonLeaseExpired = "lease_expired" // the last attempt's worker stopped heartbeating
)

// Dead is one job to move to the dead-letter table at once.
type Dead struct {
	ID     int64
	Reason string // one of the Reason constants
	Error  string
}

// DeadLetter moves the worker's jobs straight to the dead-letter table,
// whatever attempts they have left (cancelled or undecodable jobs).
func (c *Client) DeadLetter(ctx context.Context, db Pgx, worker uuid.UUID, jobs []Dead) ([]int64, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(jobs))
	reasons := make([]string, len(jobs))
	errs := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i], reasons[i], errs[i] = j.ID, j.Reason, j.Error
	}
	return c.ids(db, ctx, c.q.deadLetter, ids, worker, reasons, errs)
}

// Release hands the worker's unfinished jobs back to ready at once (at
// shutdown), without counting the interrupted attempt.
func (c *Client) Release(ctx context.Context, db Pgx, worker uuid.UUID, ids []int64) ([]int64, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return c.ids(db, ctx, c.q.release, ids, worker)
}
