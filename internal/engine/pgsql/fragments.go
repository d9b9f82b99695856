package pgsql

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
)

// DeadInsert moves the rows of CTE "gone" (deleted from docket_jobs, with
// columns reason and err) into the dead-letter table, with their
// attempt_log as it is. Outcomes, the reaper and cancelling a job all end
// this way. A workflow job keeps its workflow_id there, which its
// dependents' trigger reads as "failed" (migration 014). A job's last
// reported progress goes with it (020).
const DeadInsert = deadInsertInto + `)
SELECT ` + deadValues + `attempt_log
FROM gone
RETURNING id`

// DeadInsertEnded is DeadInsert for runs that ended: "gone" also has
// column ended_log, the job's attempt_log with the entry of the run that
// ended (AttemptAppend), which the dead letter keeps instead.
const DeadInsertEnded = deadInsertInto + `)
SELECT ` + deadValues + `ended_log
FROM gone
RETURNING id`

// DeadInsertOutcome is DeadInsertEnded for a run's outcome, whose CTE
// "gone" also has a column result: what the failed run recorded with
// SetResult, or NULL.
const DeadInsertOutcome = deadInsertInto + `, result)
SELECT ` + deadValues + `ended_log, result
FROM gone
RETURNING id`

// deadInsertInto and deadValues are what the DeadInsert statements share:
// the dead letter's columns, and the values of CTE "gone" for all but the
// last, attempt_log.
const (
	deadInsertInto = `INSERT INTO {{schema}}.docket_jobs_dead
	(id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
	 created_at, run_at, reason, last_error, payload, meta, workflow_id,
	 progress, progress_message, progress_at, attempt_log`
	deadValues = `id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
	created_at, run_at, reason, err, payload, meta, workflow_id,
	progress, progress_message, progress_at, `
)

// NextReadySeq draws a job's place in line when it becomes ready. Ids come
// from the same sequence (migration 005), so a job inserted with a
// preallocated id takes that id as its ready_seq.
const NextReadySeq = `nextval('{{schema}}.docket_jobs_id_seq')`

// NotifyQueues announces queues on a notify channel ($1), one NOTIFY per
// entry of $2 with the queue's name as payload: the format every listener
// of Docket reads. $2 is a JSON array of names (see QueueList), which every
// database/sql driver can send, unlike an array parameter. The single-job
// insert announces its queue inside its own statement in the same format.
const NotifyQueues = `SELECT pg_notify($1, q) FROM jsonb_array_elements_text($2::jsonb) AS q`

// QueueList encodes queue names as NotifyQueues takes them.
func QueueList(queues []string) string {
	b, _ := json.Marshal(queues) // strings always encode
	return string(b)
}

// TableExists reports whether the table $1 (schema-qualified, quoted)
// exists: a check that cannot fail, so a caller's transaction is never
// aborted by a missing table.
const TableExists = `SELECT to_regclass($1::text) IS NOT NULL`

// NotifyChannel is the LISTEN/NOTIFY channel on which enqueuers announce
// the queues of schema that received due jobs (the payload names them) and
// workers listen. A schema name is at most 56 bytes, so it fits.
func NotifyChannel(schema string) string { return "docket_" + schema }

// CancelPayload starts the payload of the notification, on NotifyChannel,
// that an operator asked to cancel a running job; the job's id follows.
// No queue name holds a space, so no queue's announcement starts with it.
const CancelPayload = "cancel "

// EventChannel is the LISTEN/NOTIFY channel on which publishers announce
// committed events of schema and relays listen. A channel name must fit in
// 63 bytes: a long schema name is replaced by a hash of it.
func EventChannel(schema string) string {
	const prefix = "docket_events_"
	if len(prefix)+len(schema) <= 63 {
		return prefix + schema
	}
	h := fnv.New64a()
	h.Write([]byte(schema))
	return fmt.Sprintf("%s%016x", prefix, h.Sum64())
}

// NotifyEvents announces committed events on channel $1; the payload is
// empty.
const NotifyEvents = `SELECT pg_notify($1, '')`

// NotifyRebalance announces on event channel $1 that a relay gave
// partitions back, for the others to take them at once.
const NotifyRebalance = `SELECT pg_notify($1, 'rebalance')`

// ReplayPayload marks a notification on the event channel that says dead
// events were replayed or purged: events may be pending again below a
// relay's fetch floor.
const ReplayPayload = "replay"

// NotifyReplay announces on event channel $1 that dead events were
// replayed or purged.
const NotifyReplay = `SELECT pg_notify($1, '` + ReplayPayload + `')`

// MaxRowBytes bounds what one row carries beside its small columns: a
// job's payload and meta together, as JSON text both as Docket sends them
// and as PostgreSQL writes them back (jsonb_out, which spells numbers out
// in full: 1e131071 comes back as 131,072 digits), and an event's payload.
// PostgreSQL reads a statement's parameters in one protocol message, writes
// a row in one and builds a value's text in one buffer, each of at most
// 1 GiB; 1 MiB is left for the row's other columns.
const MaxRowBytes = 1<<30 - 1<<20

// NullJSON passes encoded JSON as a query parameter: SQL NULL for nil,
// else text (database/sql drivers would send []byte for jsonb as bytea).
func NullJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// RawJSON is NullJSON for COPY, which takes json.RawMessage as it is.
func RawJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// NullString passes s as a query parameter, SQL NULL when it is empty.
func NullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
