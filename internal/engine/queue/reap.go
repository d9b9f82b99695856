package queue

import (
	"context"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// ReapResult counts what one Reap did.
type ReapResult struct {
	Requeued int64 // expired leases put back to ready
	Dead     int64 // expired on their last attempt, or cancelled by an operator: dead-lettered
}

// leaseExpiredError is recorded on jobs whose worker stopped heartbeating.
const leaseExpiredError = "lease expired: the worker stopped heartbeating (crashed, frozen or cut off)"

// reapReason and reapError are the reason and error of a reaped job (j)
// that moves to dead: cancelled if an operator asked for it while it ran,
// else its lease expired on its last attempt.
const (
	reapReason = `CASE WHEN j.cancel_requested_at IS NULL THEN 'lease_expired' ELSE 'cancelled' END`
	reapError  = `CASE WHEN j.cancel_requested_at IS NULL THEN $2::text ELSE COALESCE(j.cancel_note, $3::text) END`
)

var (
	// sqlReap returns running jobs whose lease expired to ready, or moves
	// them to dead when that was their last attempt. The lost attempt counts:
	// a job that kills its worker must not be retried forever, and leaves
	// its entry in the job's attempt_log. A job an operator asked to
	// cancel while it ran is dead-lettered as cancelled instead, with the
	// request's note ($3 when it had none).
	sqlReap = pgsql.SQL(`WITH x AS (
	SELECT id FROM {{schema}}.docket_jobs
	WHERE state = 'running' AND lease_until < now()
	ORDER BY id
	LIMIT $1
	FOR NO KEY UPDATE SKIP LOCKED
), gone AS (
	DELETE FROM {{schema}}.docket_jobs j
	WHERE j.id = ANY(ARRAY(SELECT id FROM x)) AND (j.attempts >= j.max_attempts OR j.cancel_requested_at IS NOT NULL)
	RETURNING j.*, ` + reapReason + ` AS reason, ` + reapError + ` AS err,
		` + pgsql.AttemptAppend("j.attempt_log", pgsql.AttemptEntry("j", "j.locked_by", reapReason, reapError)) + ` AS ended_log
), dead AS (` + pgsql.DeadInsertEnded + `
), back AS (
	UPDATE {{schema}}.docket_jobs j
	SET state = 'ready', ready_seq = ` + pgsql.NextReadySeq + `, last_error = $2, locked_by = NULL, locked_at = NULL, lease_until = NULL,
		attempt_log = ` + pgsql.AttemptAppend("j.attempt_log", pgsql.AttemptEntry("j", "j.locked_by", "'lease_expired'", "$2::text")) + `
	WHERE j.id = ANY(ARRAY(SELECT id FROM x)) AND j.attempts < j.max_attempts AND j.cancel_requested_at IS NULL
	RETURNING j.id
)
SELECT (SELECT count(*) FROM back), (SELECT count(*) FROM dead)`)
)

// Reap returns up to limit running jobs whose lease expired to ready, or to
// the dead-letter table when that was their last attempt (reason
// lease_expired) or an operator asked to cancel them (reason cancelled). It is cheap and
// idempotent, and safe to run from every process at once.
func (q *Queue) Reap(ctx context.Context, db DB, limit int) (ReapResult, error) {
	var r ReapResult
	err := q.run(ctx, db, pgsql.IndexSettings, sqlReap.For(q.schema), []any{limit, leaseExpiredError, CancelledError}, func(rows pgx.Rows) error {
		return pgsql.ScanOne(rows, &r.Requeued, &r.Dead)
	})
	return r, err
}
