package queue

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
)

// Workflow signals, waits and timers (migration 022). A step that waits
// for a signal is held in 'waiting' by the gate trigger once its parents
// are done, with its deadline in wait_until; Signal (package enqueue)
// releases it, and SweepDeadlines below fails or releases it when its
// deadline passed. Its claim reads the signal (claimSignal).

// claimSignal is the claim's expression for the signal a workflow step
// waited for, over the claimed row (named docket_jobs): a JSON array
// [name, timed out, payload], or NULL for a job that waited for none. Jobs
// outside workflows stop at the CASE and read nothing more. A step that
// timed out (wait_until kept) reads no signal: one sent later for another
// step is not its. One whose signal is not there either timed out before
// (a dead-lettered step replayed): it too is reported timed out.
const claimSignal = `CASE WHEN docket_jobs.workflow_id IS NOT NULL THEN (
		SELECT jsonb_build_array(w.signal, s.workflow_id IS NULL, s.payload)
		FROM {{schema}}.docket_workflow_waits w
		LEFT JOIN {{schema}}.docket_workflow_signals s
			ON docket_jobs.wait_until IS NULL AND s.workflow_id = w.workflow_id AND s.name = w.signal
		WHERE w.job_id = docket_jobs.id AND w.signal IS NOT NULL) END`

// scanSignal fills j's signal fields from claimSignal's value.
func scanSignal(j *core.Job, b []byte) error {
	var v [3]json.RawMessage
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("docket: job %d kind %s: decode signal: %w", j.ID, j.Kind, err)
	}
	if err := json.Unmarshal(v[0], &j.WaitedFor); err != nil {
		return fmt.Errorf("docket: job %d kind %s: decode signal name: %w", j.ID, j.Kind, err)
	}
	j.SignalTimedOut = string(v[1]) == "true"
	if len(v[2]) > 0 && string(v[2]) != "null" {
		j.SignalPayload = v[2]
	}
	return nil
}

// sqlSweepDeadlines takes up to $1 steps waiting for a signal whose
// deadline passed (docket_jobs_wait_until_idx), skipping those another
// transaction holds (a Signal releasing them, say). Policy 'fail': the
// step moves to the dead-letter table (reason timed_out), and the release
// trigger of migration 014 cancels its dependents as for any failed job.
// Policy 'run': the step is released; the gate trigger keeps its
// wait_until, which its claim reports as timed out. Each step is taken by
// one sweep only (the row lock, and the state it leaves), however many
// workers sweep. It returns the queues of the steps made ready.
var sqlSweepDeadlines = pgsql.SQL(`WITH t AS (
	SELECT j.id, w.on_timeout, w.signal
	FROM {{schema}}.docket_jobs j
	JOIN {{schema}}.docket_workflow_waits w ON w.job_id = j.id
	WHERE j.state = 'waiting' AND j.wait_until <= now()
	ORDER BY j.wait_until
	LIMIT $1
	FOR UPDATE OF j SKIP LOCKED
), gone AS (
	DELETE FROM {{schema}}.docket_jobs j USING t
	WHERE j.id = t.id AND t.on_timeout = 'fail'
	RETURNING j.*, 'timed_out'::text AS reason,
		format('signal %s did not come before %s', t.signal, j.wait_until) AS err
), dead AS (` + pgsql.DeadInsert + `
), ready AS (
	UPDATE {{schema}}.docket_jobs j
	SET state = CASE WHEN j.run_at > now() THEN 'scheduled' ELSE 'ready' END,
		ready_seq = ` + pgsql.NextReadySeq + `, run_at = greatest(j.run_at, now())
	FROM t
	WHERE j.id = t.id AND t.on_timeout = 'run'
	RETURNING j.queue, j.state
)
SELECT queue FROM ready WHERE state = 'ready'`)

// SweepDeadlines fails or releases up to limit steps whose signal did not
// come before their deadline (see sqlSweepDeadlines) and returns the
// queues of the steps it made ready, one entry per step. Cheap when no
// deadline passed: one probe of a partial index that holds only steps
// waiting for a signal.
func (q *Queue) SweepDeadlines(ctx context.Context, db DB, limit int) ([]string, error) {
	return column[string](ctx, q, db, sqlSweepDeadlines.For(q.schema), limit)
}
