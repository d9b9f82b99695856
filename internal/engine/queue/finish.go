package queue

import (
	"context"
	"time"

	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Every outcome below is fenced by the claim it speaks for: a job's id, the
// claim id of its run and locked_by = worker must all match (see the
// package doc). A run that lost its lease (reaped, maybe claimed again, even
// by the same worker) changes nothing, and the job is missing from the
// returned ids.
//
// A run whose job an operator asked to cancel (cancel_requested_at set,
// see admin Jobs.Cancel) is refused by every outcome but Cancelled, and
// is missing from the returned ids too: the worker then writes Cancelled
// for it. Whichever commits first wins: an outcome written before the
// request stands (the request then finds no running job), and after it the
// run can only end cancelled.

// CancelledError is the error recorded on a cancelled running job whose
// request carried no note.
const CancelledError = "cancelled by an operator while running"

// completeHistory is the statement that moves runs ($1 ids, $3 their
// claims, see runClaims) of worker $2 to history, finished at $4, or when
// the statement runs if $4 is null (not at the start of its transaction: a
// transactional handler's transaction began before its handler ran). With
// results, $5 holds the runs' results (see runResults).
func completeHistory(results bool) string {
	keep, col, val := "", "", ""
	if results {
		keep, col, val = keepWorkflowResults("$5"), ", result", ", $5::jsonb -> id::text"
	}
	return `WITH d AS (
	DELETE FROM {{schema}}.docket_jobs j
	WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($3::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
		AND j.cancel_requested_at IS NULL
	RETURNING j.*
)` + keep + `
INSERT INTO {{schema}}.docket_jobs_done
	(id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
	 created_at, run_at, started_at, finished_at, payload, meta, workflow_id, attempt_log, worker_id` + col + `)
SELECT id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
	created_at, run_at, locked_at, COALESCE($4::timestamptz, clock_timestamp()), payload, meta, workflow_id,
	attempt_log, locked_by` + val + `
FROM d
RETURNING id`
}

// keepWorkflowResults keeps the results (param p, see runResults) of the
// completed workflow jobs of CTE "d" that have dependents, for those to
// read in their claims (docket_workflow_results, migration 019). The same
// statement releases the dependents, so they are never claimed before the
// results are there. A job whose workflow row was deleted meanwhile keeps
// nothing, rather than failing the batch on the foreign key.
func keepWorkflowResults(p string) string {
	return `, kept AS (
	INSERT INTO {{schema}}.docket_workflow_results (job_id, workflow_id, result)
	SELECT d.id, d.workflow_id, ` + p + `::jsonb -> d.id::text
	FROM d
	WHERE d.workflow_id IS NOT NULL AND ` + p + `::jsonb ? d.id::text
		AND EXISTS (SELECT 1 FROM {{schema}}.docket_workflow_deps x WHERE x.parent_id = d.id)
		AND EXISTS (SELECT 1 FROM {{schema}}.docket_workflows w WHERE w.id = d.workflow_id)
	ON CONFLICT (job_id) DO UPDATE SET result = EXCLUDED.result
)`
}

var (
	// sqlCompleteHistory moves runs to history: see completeHistory.
	sqlCompleteHistory = pgsql.SQL(completeHistory(false))

	// sqlCompleteHistoryResults is sqlCompleteHistory for a batch of which
	// some runs recorded results ($5, see runResults): stored with their
	// history rows and, for workflow jobs, kept for their dependents.
	sqlCompleteHistoryResults = pgsql.SQL(completeHistory(true))

	sqlCompleteDelete = pgsql.SQL(`DELETE FROM {{schema}}.docket_jobs j
WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($3::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
	AND j.cancel_requested_at IS NULL
RETURNING j.id`)

	// sqlCompleteDeleteResults is sqlCompleteDelete for a batch of which
	// some runs recorded results ($4): only workflow jobs' are kept.
	sqlCompleteDeleteResults = pgsql.SQL(`WITH d AS (
	DELETE FROM {{schema}}.docket_jobs j
	WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($3::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
	RETURNING j.id, j.workflow_id
)` + keepWorkflowResults("$4") + `
SELECT id FROM d`)

	// sqlFail records failed attempts: jobs with attempts left go back to
	// ready/scheduled after their delay; exhausted ones move to dead, with
	// the result their run recorded ($6, see runResults). Each failed run
	// leaves its entry in the job's attempt_log.
	sqlFail = pgsql.SQL(`WITH i AS (
	SELECT * FROM unnest($1::bigint[], $3::text[], $4::bigint[], $5::bigint[]) AS i(id, err, delay_ms, claim_id)
), gone AS (
	DELETE FROM {{schema}}.docket_jobs j USING i
	WHERE j.id = i.id AND j.claim_id = i.claim_id AND j.locked_by = $2 AND j.attempts >= j.max_attempts
		AND j.cancel_requested_at IS NULL
	RETURNING j.*, 'exhausted'::text AS reason, i.err, $6::jsonb -> j.id::text AS result,
		` + pgsql.AttemptAppend("j.attempt_log", pgsql.AttemptEntry("j", "$2", "'exhausted'", "i.err")) + ` AS ended_log
), dead AS (` + pgsql.DeadInsertOutcome + `
), retried AS (
	UPDATE {{schema}}.docket_jobs j
	SET state = CASE WHEN i.delay_ms > 0 THEN 'scheduled' ELSE 'ready' END,
		run_at = now() + i.delay_ms * interval '1 millisecond', ready_seq = ` + pgsql.NextReadySeq + `,
		last_error = i.err, locked_by = NULL, locked_at = NULL, lease_until = NULL,
		attempt_log = ` + pgsql.AttemptAppend("j.attempt_log", pgsql.AttemptEntry("j", "$2", "'failed'", "i.err")) + `
	FROM i
	WHERE j.id = i.id AND j.claim_id = i.claim_id AND j.locked_by = $2 AND j.attempts < j.max_attempts
		AND j.cancel_requested_at IS NULL
	RETURNING j.id
)
SELECT id, true FROM dead UNION ALL SELECT id, false FROM retried`)

	// sqlSnooze reschedules jobs without spending the attempt their claim counted.
	sqlSnooze = pgsql.SQL(`UPDATE {{schema}}.docket_jobs j
SET state = CASE WHEN i.delay_ms > 0 THEN 'scheduled' ELSE 'ready' END,
	run_at = now() + i.delay_ms * interval '1 millisecond', ready_seq = ` + pgsql.NextReadySeq + `,
	attempts = j.attempts - 1, locked_by = NULL, locked_at = NULL, lease_until = NULL
FROM unnest($1::bigint[], $3::bigint[], $4::bigint[]) AS i(id, delay_ms, claim_id)
WHERE j.id = i.id AND j.claim_id = i.claim_id AND j.locked_by = $2 AND j.cancel_requested_at IS NULL
RETURNING j.id`)

	// sqlDeadLetter moves jobs to dead with the results their runs
	// recorded ($6, see runResults).
	sqlDeadLetter = pgsql.SQL(`WITH i AS (
	SELECT * FROM unnest($1::bigint[], $3::text[], $4::text[], $5::bigint[]) AS i(id, reason, err, claim_id)
), gone AS (
	DELETE FROM {{schema}}.docket_jobs j USING i
	WHERE j.id = i.id AND j.claim_id = i.claim_id AND j.locked_by = $2 AND j.cancel_requested_at IS NULL
	RETURNING j.*, i.reason, i.err, $6::jsonb -> j.id::text AS result,
		` + pgsql.AttemptAppend("j.attempt_log", pgsql.AttemptEntry("j", "$2", "i.reason", "i.err")) + ` AS ended_log
)
` + pgsql.DeadInsertOutcome)

	// sqlCancelled dead-letters runs ($1 ids, $3 their claims) of worker $2
	// whose job an operator cancelled (reason cancelled, the operator's
	// note as the error): what becomes of such a run whatever its handler
	// returned, since every other outcome above is refused for it.
	sqlCancelled = pgsql.SQL(`WITH gone AS (
	DELETE FROM {{schema}}.docket_jobs j
	WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($3::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
		AND j.cancel_requested_at IS NOT NULL
	RETURNING j.*, 'cancelled'::text AS reason, COALESCE(j.cancel_note, '` + CancelledError + `') AS err
)
` + pgsql.DeadInsert)

	// sqlRelease hands unfinished jobs back at shutdown; the interrupted
	// attempt is not counted.
	sqlRelease = pgsql.SQL(`UPDATE {{schema}}.docket_jobs j
SET state = 'ready', ready_seq = ` + pgsql.NextReadySeq + `, attempts = j.attempts - 1, locked_by = NULL, locked_at = NULL, lease_until = NULL
WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($3::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
	AND j.cancel_requested_at IS NULL
RETURNING j.id`)
)

// Complete finishes the worker's runs: their jobs move to history, or are
// deleted when history is off. The runs' results go with them (see Run). finishedAt is recorded as the finish time;
// zero means the database's clock when the statement runs. It returns the
// ids it finished.
//
// Outside a transaction, a missing history partition is created and the
// statement run again. In a caller's transaction the failed statement has
// aborted the transaction: the error is returned (see partition.History.Repair).
func (q *Queue) Complete(ctx context.Context, db DB, worker uuid.UUID, runs []Run, finishedAt time.Time) ([]int64, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids, claims := runClaims(runs)
	// Batches without results run the statements that know nothing of
	// them: results cost nothing to the jobs that record none.
	results := runResults(runs, func(r Run) Run { return r })
	if !q.history {
		if results != nil {
			return q.ids(ctx, db, sqlCompleteDeleteResults.For(q.schema), ids, worker, claims, results)
		}
		return q.ids(ctx, db, sqlCompleteDelete.For(q.schema), ids, worker, claims)
	}
	var at *time.Time
	if !finishedAt.IsZero() {
		at = &finishedAt
	}
	sql, args := sqlCompleteHistory.For(q.schema), []any{ids, worker, claims, at}
	if results != nil {
		sql, args = sqlCompleteHistoryResults.For(q.schema), append(args, results)
	}
	done, err := q.ids(ctx, db, sql, args...)
	if !pgsql.IsTx(db) {
		if missing, perr := partition.Of(q.Schema()).Repair(ctx, db, err, finishedAt); missing && perr == nil {
			return q.ids(ctx, db, sql, args...)
		}
	}
	return done, err
}

// Failure is one failed attempt of a job.
type Failure struct {
	Run
	// Error is recorded as the job's last error. It must not contain payload data.
	Error string
	// Delay is how long to wait before the next attempt (see outbox.Backoff).
	Delay time.Duration
}

// FailResult says what Fail did with each job it still owned.
type FailResult struct {
	Retried []int64 // back to ready or scheduled after their delay
	Dead    []int64 // attempts exhausted: moved to the dead-letter table
}

// Fail records failed attempts. Jobs with attempts left are retried after
// their Delay; jobs on their last attempt move to the dead-letter table.
func (q *Queue) Fail(ctx context.Context, db DB, worker uuid.UUID, failures []Failure) (FailResult, error) {
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
	results := runResults(failures, func(f Failure) Run { return f.Run })
	err := q.run(ctx, db, pgsql.IndexSettings, sqlFail.For(q.schema), []any{ids, worker, errs, delays, claims, results}, func(rows pgx.Rows) error {
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
func (q *Queue) Snooze(ctx context.Context, db DB, worker uuid.UUID, jobs []Snoozed) ([]int64, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	ids := make([]int64, len(jobs))
	claims := make([]int64, len(jobs))
	delays := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i], claims[i], delays[i] = j.ID, j.ClaimID, j.Delay.Milliseconds()
	}
	return q.ids(ctx, db, sqlSnooze.For(q.schema), ids, worker, delays, claims)
}

// Dead is one job to move to the dead-letter table at once.
type Dead struct {
	Run
	Reason string // one of outbox's Reason constants
	Error  string
}

// DeadLetter moves the worker's jobs straight to the dead-letter table,
// whatever attempts they have left (cancelled or undecodable jobs).
func (q *Queue) DeadLetter(ctx context.Context, db DB, worker uuid.UUID, jobs []Dead) ([]int64, error) {
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
	results := runResults(jobs, func(d Dead) Run { return d.Run })
	return q.ids(ctx, db, sqlDeadLetter.For(q.schema), ids, worker, reasons, errs, claims, results)
}

// Release hands the worker's unfinished runs back to ready at once (at
// shutdown), without counting the interrupted attempt.
func (q *Queue) Release(ctx context.Context, db DB, worker uuid.UUID, runs []Run) ([]int64, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids, claims := runClaims(runs)
	return q.ids(ctx, db, sqlRelease.For(q.schema), ids, worker, claims)
}

// Cancelled moves the worker's runs whose job an operator asked to cancel
// to the dead-letter table (reason "cancelled", the request's note as the
// error) and returns their ids. Runs that were lost, or whose job has no
// cancel request, are left alone.
func (q *Queue) Cancelled(ctx context.Context, db DB, worker uuid.UUID, runs []Run) ([]int64, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids, claims := runClaims(runs)
	return q.ids(ctx, db, sqlCancelled.For(q.schema), ids, worker, claims)
}
