package pgsql

import (
	"strconv"
	"strings"
)

// Attempt history (migration 021). A run of a job that ends in anything but
// a completion appends one entry to the job row's attempt_log, a JSON
// array that travels with the row: to the dead-letter table, back on
// replay, to history. The entry is built in the statement that writes the
// outcome, so recording it costs no statement and no round trip, and
// nothing on the claim. A completion writes no entry: its attempt is the
// history row's started_at, finished_at and worker_id. Snoozes and
// shutdown releases give their attempt back and write none either.

// MaxAttemptError is how many characters of an attempt's error its entry
// keeps; a longer error is cut there and marked (see AttemptEntry).
const MaxAttemptError = 4096

// MaxAttemptLog is how many entries a job's attempt_log keeps: the oldest
// is dropped when a new one would exceed it.
const MaxAttemptLog = 100

// AttemptEntry is the SQL expression of one attempt_log entry: the run of
// job row alias j (its attempts counter, locked_at and locked_by) that
// ended now with outcome and error (SQL expressions; error may be NULL).
// worker is an expression for the worker's id whose host and pid are
// looked up in docket_workers (null when it is not registered): pass a
// parameter when every row of the statement has the same worker, so that
// the lookups run once per statement. One jsonb object per row, built in
// one call: the entry is on the failure path.
func AttemptEntry(j, worker, outcome, err string) string {
	r := strings.NewReplacer("{j}", j, "{worker}", worker, "{outcome}", outcome, "{err}", err,
		"{max}", strconv.Itoa(MaxAttemptError))
	return r.Replace(`jsonb_build_object('attempt', {j}.attempts, 'started_at', {j}.locked_at,
	'finished_at', clock_timestamp(), 'worker', {j}.locked_by,
	'host', (SELECT w.host FROM {{schema}}.docket_workers w WHERE w.id = {worker}),
	'pid', (SELECT w.pid FROM {{schema}}.docket_workers w WHERE w.id = {worker}),
	'outcome', {outcome},
	'error', CASE WHEN length({err}) > {max}
		THEN left({err}, {max}) || format(' …[truncated: %s more characters]', length({err}) - {max})
		ELSE {err} END)`)
}

// AttemptAppend is the SQL expression of attempt_log log (an expression,
// maybe NULL) with entry appended, keeping the newest MaxAttemptLog.
func AttemptAppend(log, entry string) string {
	return `(CASE WHEN jsonb_array_length(COALESCE(` + log + `, '[]')) >= ` + strconv.Itoa(MaxAttemptLog) +
		` THEN ` + log + ` - 0 ELSE COALESCE(` + log + `, '[]') END || ` + entry + `)`
}
