package outbox

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"time"

	docket "github.com/docketq/docket/internal/core"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Every outcome below is fenced by the claim it speaks for: a job's id, the
// claim id of its run and locked_by = worker must all match (see
// queries.go). A run that lost its lease (reaped, maybe claimed again, even
// by the same worker) changes nothing, and the job is missing from the
// returned ids.

// Run names one claimed run of a job: the job's id and the claim it came
// from. Outcomes and heartbeats act on runs, not on jobs.
type Run struct {
	ID      int64
	ClaimID int64
}

// RunOf returns the run of a job returned by Claim.
func RunOf(j *docket.Job) Run { return Run{ID: j.ID, ClaimID: j.ClaimID} }

// runClaims returns the ids of runs, in order, and their claims as the
// JSON object from job id to claim id that heartbeat, complete and release
// match rows against (see queries.go). Of two runs of one job, the later
// claim is kept: the earlier one is stale and would match nothing anyway.
func runClaims(runs []Run) (ids []int64, claims []byte) {
	sorted := slices.Clone(runs)
	slices.SortFunc(sorted, func(a, b Run) int {
		return cmp.Or(cmp.Compare(a.ID, b.ID), cmp.Compare(a.ClaimID, b.ClaimID))
	})
	ids = make([]int64, 0, len(sorted))
	claims = make([]byte, 0, 24*len(sorted)+2)
	claims = append(claims, '{')
	for i, r := range sorted {
		if i+1 < len(sorted) && sorted[i+1].ID == r.ID {
			continue // a later claim of the same job follows
		}
		if len(ids) > 0 {
			claims = append(claims, ',')
		}
		ids = append(ids, r.ID)
		claims = append(claims, '"')
		claims = strconv.AppendInt(claims, r.ID, 10)
		claims = append(claims, '"', ':')
		claims = strconv.AppendInt(claims, r.ClaimID, 10)
	}
	return ids, append(claims, '}')
}

// Complete finishes the worker's runs: their jobs move to history, or are
// deleted when history is off. finishedAt is recorded as the finish time;
// zero means the database's clock when the statement runs. It returns the
// ids it finished.
//
// Outside a transaction, a missing history partition is created and the
// statement run again. In a caller's transaction the failed statement has
// aborted the transaction: the error is returned (see RepairHistory).
func (c *Client) Complete(ctx context.Context, db Pgx, worker uuid.UUID, runs []Run, finishedAt time.Time) ([]int64, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids, claims := runClaims(runs)
	if !c.history {
		return c.ids(db, ctx, c.q.completeDelete, ids, worker, claims)
	}
	var at *time.Time
	if !finishedAt.IsZero() {
		at = &finishedAt
	}
	done, err := c.ids(db, ctx, c.q.completeHistory, ids, worker, claims, at)
	if !isTx(db) {
		if missing, perr := c.RepairHistory(ctx, db, err, finishedAt); missing && perr == nil {
			return c.ids(db, ctx, c.q.completeHistory, ids, worker, claims, at)
		}
	}
	return done, err
}

// RepairHistory reports whether err says that the history partition for a
// finished job was missing and, if so, creates the partitions around at
// (the day before, that day and the next two; zero at means now) through
// db, which must not be a transaction the error aborted, and returns the
// error of that creation.
func (c *Client) RepairHistory(ctx context.Context, db Pgx, err error, at time.Time) (missing bool, _ error) {
	if sqlState(err) != codeNoPartition {
		return false, nil
	}
	if at.IsZero() {
		at = time.Now()
	}
	return true, c.EnsurePartitions(ctx, db, at.AddDate(0, 0, -1), 3)
}

// Failure is one failed attempt of a job.
type Failure struct {
	Run
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
	claims := make([]int64, len(failures))
	errs := make([]string, len(failures))
	delays := make([]int64, len(failures))
	for i, f := range failures {
		ids[i], claims[i], errs[i], delays[i] = f.ID, f.ClaimID, f.Error, f.Delay.Milliseconds()
	}
	err := c.run(ctx, db, sqlIndexSettings, c.q.fail, []any{ids, worker, errs, delays, claims}, func(rows pgx.Rows) error {
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
	Run
	Delay time.Duration
}

// Snooze puts the worker's jobs back for another run after their delay; the
// attempt the claim counted is given back.
func (c *Client) Snooze(ctx context.Context, db Pgx, worker uuid.UUID, jobs []Snoozed) ([]int64, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(jobs))
	claims := make([]int64, len(jobs))
	delays := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i], claims[i], delays[i] = j.ID, j.ClaimID, j.Delay.Milliseconds()
	}
	return c.ids(db, ctx, c.q.snooze, ids, worker, delays, claims)
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
	Run
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
	claims := make([]int64, len(jobs))
	reasons := make([]string, len(jobs))
	errs := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i], claims[i], reasons[i], errs[i] = j.ID, j.ClaimID, j.Reason, j.Error
	}
	return c.ids(db, ctx, c.q.deadLetter, ids, worker, reasons, errs, claims)
}

// Release hands the worker's unfinished runs back to ready at once (at
// shutdown), without counting the interrupted attempt.
func (c *Client) Release(ctx context.Context, db Pgx, worker uuid.UUID, runs []Run) ([]int64, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids, claims := runClaims(runs)
	return c.ids(db, ctx, c.q.release, ids, worker, claims)
}
