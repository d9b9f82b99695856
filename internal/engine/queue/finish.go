package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/core"
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

// ownRuns matches the rows of runs $1 of worker $2 whose claims are $3
// (see runClaims): the fence of every statement below that takes runs by
// their claims.
const ownRuns = `j.id = ANY($1::bigint[]) AND j.claim_id = ($3::jsonb ->> j.id::text)::bigint AND j.locked_by = $2`

// deleteCompleted deletes the completed runs (ownRuns) from the hot table,
// every completion's first step. A run whose job an operator asked to
// cancel is refused, as by every outcome but Cancelled.
const deleteCompleted = `DELETE FROM {{schema}}.docket_jobs j
WHERE ` + ownRuns + ` AND j.cancel_requested_at IS NULL`

// completeDelete is a completion with history off as CTE "d", returning
// cols of the deleted rows, then CTEs more (results kept, say), returning
// the ids.
func completeDelete(cols, more string) string {
	return `WITH d AS (
	` + deleteCompleted + `
	RETURNING ` + cols + `
)` + more + `
SELECT id FROM d`
}

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
	` + deleteCompleted + `
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

// completeSerial is the completion of a batch that holds runs of serial
// jobs (see Run.Serial): completeHistory, or with history false the
// deletion, that also hands each completed holder's key to the head of
// its line (migration 009), for the whole batch in the statement itself.
// The departing holder is deleted by this statement, so no other
// transaction can make a holder of its key until it commits (every other
// path sees the holder still there); the unique holder index backs that.
// It announces the queues of the heads it made ready, as the per-row
// trigger does, which it spares (see serialPassSettings). It returns the
// completed ids. The final statement becomes the CTE "done"; the pass and
// the notifications run as CTEs beside it. note is read once, before any
// row, so that its NOTIFYs are sent whatever the batch completed.
func completeSerial(history, results bool) string {
	return serialBody(history, results, `, nxt AS (
	UPDATE {{schema}}.docket_jobs w
	SET state = 'ready', ready_seq = `+pgsql.NextReadySeq+`, run_at = greatest(w.run_at, now())
	FROM d
	WHERE `+serialHeads+`
	RETURNING w.queue
), note AS (
	SELECT pg_notify('docket_' || btrim('{{schema}}', '"'), n.queue) FROM (SELECT DISTINCT queue FROM nxt) n
)
SELECT id FROM done WHERE (SELECT count(*) FROM note) >= 0`)
}

// serialHeads joins each completed holder of CTE "d" to the head of its
// key's line, w, still waiting: one descent of the line index per
// completed row.
const serialHeads = `d.serial_seq IS NOT NULL AND d.state <> 'waiting' AND w.id = (SELECT x.id FROM {{schema}}.docket_jobs x
			WHERE x.serial_key = d.serial_key AND x.state = 'waiting'
			ORDER BY x.serial_seq LIMIT 1)
		AND w.state = 'waiting'`

// completeHandOn is completeSerial that also claims for worker $2 the heads
// in queues $n with kinds $n+1, under a lease of $n+2 ms and the claim id
// that sqlHandOnSettings drew (CompleteHandOn): they go from waiting
// straight to running, one write each, and only the heads it leaves are
// made ready and announced. Workflow jobs are left ready: becoming ready
// runs their gate (docket_workflow_gate), which may hold them back.
//
// One UPDATE moves every head, to running or to ready by whether the
// worker takes it, so that each completed row looks up its key's head
// once. Its rows come back with the completed ids, in one result (see
// scanHandOn): a completed run as its id, every other column null; a
// handed job as a claim returns it (scanJobs' columns), its queue never
// null. Handed jobs are outside workflows: they carry no signal and no
// inputs.
func completeHandOn(history, results bool, n int) string {
	ours := fmt.Sprintf(`(w.workflow_id IS NULL AND w.queue = ANY($%d::text[]) AND w.kind = ANY($%d::text[]))`, n, n+1)
	when := func(then, otherwise string) string {
		return `CASE WHEN ` + ours + ` THEN ` + then + ` ELSE ` + otherwise + ` END`
	}
	// Beside jobColumns, a handed job's row has ready_seq, its signal and
	// its inputs: a completed run's has as many nulls after its id.
	nulls := strings.Repeat(", NULL", columnCount(jobColumns)+2)
	return serialBody(history, results, `, u AS (
	UPDATE {{schema}}.docket_jobs w
	SET state = `+when(`'running'`, `'ready'`)+`, ready_seq = `+pgsql.NextReadySeq+`,
		run_at = greatest(w.run_at, now()), attempts = `+when(`w.attempts + 1`, `w.attempts`)+`,
		locked_by = `+when(`$2::uuid`, `w.locked_by`)+`, locked_at = `+when(`now()`, `w.locked_at`)+`,
		lease_until = `+when(`now() + $`+strconv.Itoa(n+2)+`::bigint * interval '1 millisecond'`, `w.lease_until`)+`,
		claim_id = `+when(`currval('{{schema}}.docket_claims_seq')`, `w.claim_id`)+`
	FROM d
	WHERE `+serialHeads+`
	RETURNING w.*
), note AS (
	SELECT pg_notify('docket_' || btrim('{{schema}}', '"'), n.queue) FROM (SELECT DISTINCT queue FROM u WHERE state = 'ready') n
)
SELECT id`+nulls+` FROM done WHERE (SELECT count(*) FROM note) >= 0
UNION ALL
SELECT `+jobColumns+`, ready_seq, NULL::jsonb, NULL::jsonb FROM u WHERE state = 'running'`)
}

// columnCount counts the columns of a select list: its commas outside
// parentheses, plus one.
func columnCount(list string) int {
	n, depth := 1, 0
	for _, r := range list {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	return n
}

// serialBody is completeHistory, or with history false the deletion, as
// CTEs "d" (the deleted rows) and "done" (the completed ids), followed by
// tail: the statement's last CTEs and its query.
func serialBody(history, results bool, tail string) string {
	body := completeHistory(results)
	at := strings.LastIndex(body, "\nINSERT INTO")
	if !history {
		keep := ""
		if results {
			keep = keepWorkflowResults("$4")
		}
		body = completeDelete("j.*", keep)
		at = strings.LastIndex(body, "\nSELECT id FROM d")
	}
	return body[:at] + `, done AS (` + body[at:] + `
)` + tail
}

// serialPassSettings runs before completeSerial and completeHandOn on a
// pool or connection:
// pgsql.IndexSettings, a generic plan, and the mark that this statement
// hands its holders' keys on itself, which the row trigger
// docket_jobs_serial_pass then skips (migration 025). It lasts for the
// statement's implicit transaction. In a caller's transaction the mark is
// not set and the trigger runs too: it finds the head already made ready
// and does nothing.
//
// The generic plan spares each completion its planning, as the claim's
// does (see sqlClaimSettings): with some statistics the plan cache finds
// the custom plans of these statements cheaper and plans every run (seen
// with 10,000 jobs in 20 lines, where planning took a third of the
// backend's time per completion). TestHotPathPlans checks the generic
// plans use the indexes.
const serialPassSettings = `SELECT set_config('enable_seqscan', 'off', true),
	set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('docket.serial_pass', 'statement', true)`

var (
	// sqlHandOnSettings is serialPassSettings for a completion that claims
	// the heads it hands keys to (CompleteHandOn), and draws that claim's
	// id, which the completion reads with currval.
	sqlHandOnSettings = pgsql.SQL(serialPassSettings + `,
	nextval('{{schema}}.docket_claims_seq')`)

	// sqlCompleteSerial* are completeSerial with and without history and
	// results (see completions).
	sqlCompleteSerialHistory        = pgsql.SQL(completeSerial(true, false))
	sqlCompleteSerialHistoryResults = pgsql.SQL(completeSerial(true, true))
	sqlCompleteSerialDelete         = pgsql.SQL(completeSerial(false, false))
	sqlCompleteSerialDeleteResults  = pgsql.SQL(completeSerial(false, true))

	// handOns are the completions of CompleteHandOn by kind of batch
	// (serial is always true): completeHandOn, with its hand-on arguments
	// after the completion's.
	handOns = map[completionKind]*pgsql.Statement{
		{serial: true, history: true}:                pgsql.SQL(completeHandOn(true, false, 5)),
		{serial: true, history: true, results: true}: pgsql.SQL(completeHandOn(true, true, 6)),
		{serial: true}:                pgsql.SQL(completeHandOn(false, false, 4)),
		{serial: true, results: true}: pgsql.SQL(completeHandOn(false, true, 5)),
	}

	// sqlCompleteHistory moves runs to history: see completeHistory.
	sqlCompleteHistory = pgsql.SQL(completeHistory(false))

	// sqlCompleteHistoryResults is sqlCompleteHistory for a batch of which
	// some runs recorded results ($5, see runResults): stored with their
	// history rows and, for workflow jobs, kept for their dependents.
	sqlCompleteHistoryResults = pgsql.SQL(completeHistory(true))

	// sqlCompleteDelete deletes completed runs when history is off.
	sqlCompleteDelete = pgsql.SQL(deleteCompleted + `
RETURNING j.id`)

	// sqlCompleteDeleteResults is sqlCompleteDelete for a batch of which
	// some runs recorded results ($4): only workflow jobs' are kept.
	sqlCompleteDeleteResults = pgsql.SQL(completeDelete("j.id, j.workflow_id", keepWorkflowResults("$4")))

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
	WHERE ` + ownRuns + ` AND j.cancel_requested_at IS NOT NULL
	RETURNING j.*, 'cancelled'::text AS reason, COALESCE(j.cancel_note, '` + CancelledError + `') AS err
)
` + pgsql.DeadInsert)

	// sqlRelease hands unfinished jobs back at shutdown; the interrupted
	// attempt is not counted.
	sqlRelease = pgsql.SQL(`UPDATE {{schema}}.docket_jobs j
SET state = 'ready', ready_seq = ` + pgsql.NextReadySeq + `, attempts = j.attempts - 1, locked_by = NULL, locked_at = NULL, lease_until = NULL
WHERE ` + ownRuns + ` AND j.cancel_requested_at IS NULL
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
	serial := slices.ContainsFunc(runs, func(r Run) bool { return r.SerialKey != "" })
	kind, args := q.completion(serial, ids, worker, claims, results, finishedAt)
	stmt := completions[kind]
	settings := pgsql.IndexSettings
	if serial {
		settings = serialPassSettings
	}
	var done []int64
	err := q.completing(ctx, db, finishedAt, func() error {
		return q.run(ctx, db, settings, stmt.For(q.schema), args, func(rows pgx.Rows) error {
			var err error
			done, err = pgx.CollectRows(rows, pgx.RowTo[int64])
			return err
		})
	})
	return done, err
}

// completionKind says which of Complete's statements a batch takes.
type completionKind struct{ serial, history, results bool }

// completions are Complete's statements by kind of batch.
var completions = map[completionKind]*pgsql.Statement{
	{history: true}:                sqlCompleteHistory,
	{history: true, results: true}: sqlCompleteHistoryResults,
	{}:                             sqlCompleteDelete,
	{results: true}:                sqlCompleteDeleteResults,
	{serial: true, history: true}:  sqlCompleteSerialHistory,
	{serial: true, history: true, results: true}: sqlCompleteSerialHistoryResults,
	{serial: true}:                sqlCompleteSerialDelete,
	{serial: true, results: true}: sqlCompleteSerialDeleteResults,
}

// completion is the kind of statement that completes a batch of runs
// (serial: it holds runs of serial jobs) for this Queue, and its
// arguments.
func (q *Queue) completion(serial bool, ids []int64, worker uuid.UUID, claims string, results any, finishedAt time.Time) (completionKind, []any) {
	args := []any{ids, worker, claims}
	if q.history {
		var at *time.Time
		if !finishedAt.IsZero() {
			at = &finishedAt
		}
		args = append(args, at)
	}
	if results != nil {
		args = append(args, results)
	}
	return completionKind{serial: serial, history: q.history, results: results != nil}, args
}

// completing runs write, a completion. Outside a caller's transaction, when
// it failed for a missing history partition, it creates the partition and
// runs write once more. In a caller's transaction the failed statement has
// aborted the transaction: the error is returned (see
// partition.History.Repair).
func (q *Queue) completing(ctx context.Context, db DB, finishedAt time.Time, write func() error) error {
	err := write()
	if q.history && !pgsql.IsTx(db) {
		if missing, perr := partition.Of(q.Schema()).Repair(ctx, db, err, finishedAt); missing && perr == nil {
			return write()
		}
	}
	return err
}

// HandOn is what CompleteHandOn may claim for its worker: the next job
// of a completed run's serial key, when it is ready in one of Queues and
// of one of Kinds, under a lease of Lease.
type HandOn struct {
	Queues, Kinds []string
	Lease         time.Duration
}

// CompleteHandOn is Complete that also claims for worker, in the same
// transaction, the jobs that the completions made ready by handing their
// serial keys on and that h allows, and returns them as Claim does. A key
// passes to its next job only once the completion of the one before
// commits, so a handed job starts after its predecessor's outcome is
// durable, as one claimed later would; it saves the claim's round trip
// and its commit, and the job goes from waiting to running in one write.
// Heads it leaves ready are announced. On a caller's transaction, or for
// runs without serial keys, it is Complete.
func (q *Queue) CompleteHandOn(ctx context.Context, db DB, worker uuid.UUID, runs []Run, finishedAt time.Time, h HandOn) ([]int64, []*core.Job, error) {
	b, ok := db.(interface {
		SendBatch(context.Context, *pgx.Batch) pgx.BatchResults
	})
	serial := slices.ContainsFunc(runs, func(r Run) bool { return r.SerialKey != "" })
	if !ok || pgsql.IsTx(db) || !serial || len(h.Queues) == 0 || len(h.Kinds) == 0 || h.Lease <= 0 {
		done, err := q.Complete(ctx, db, worker, runs, finishedAt)
		return done, nil, err
	}
	ids, claims := runClaims(runs)
	results := runResults(runs, func(r Run) Run { return r })
	kind, args := q.completion(true, ids, worker, claims, results, finishedAt)
	args = append(args, h.Queues, h.Kinds, h.Lease.Milliseconds())
	var done []int64
	var jobs []*core.Job
	err := q.completing(ctx, db, finishedAt, func() error {
		batch := &pgx.Batch{}
		batch.Queue(sqlHandOnSettings.For(q.schema))
		batch.Queue(handOns[kind].For(q.schema), args...)
		res := b.SendBatch(ctx, batch)
		_, err := res.Exec()
		if err == nil {
			var rows pgx.Rows
			if rows, err = res.Query(); err == nil {
				done, jobs, err = scanHandOn(rows)
				rows.Close()
			}
		}
		if cerr := res.Close(); err == nil {
			err = cerr
		}
		return q.wrapErr(err) // on error rolled back: nothing completed, nothing claimed
	})
	if err != nil {
		return nil, nil, err
	}
	return done, jobs, nil
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
