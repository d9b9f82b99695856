package outbox

// The statements of operations: status, paused queues, the worker registry,
// dead-letter triage and manual job commands. Like queries.go, they are the
// only place these tables are read or written; {{schema}} is the quoted schema.

const (
	sqlQueueStatus = `SELECT queue, paused, ready, scheduled, running, oldest_due_at, lag_seconds,
	completed_1m, completed_1h, retries_1m, retries_1h, dead_1m, dead_1h, dlq_size, dlq_delta_24h
FROM {{schema}}.docket_queue_status ORDER BY queue`

	sqlTableStatus = `SELECT table_name, live_tuples, dead_tuples, last_vacuum, last_autovacuum,
	last_analyze, last_autoanalyze
FROM {{schema}}.docket_table_status ORDER BY table_name`

	sqlStuckJobs = `SELECT id, queue, kind, attempts, locked_by, lease_until, overdue_seconds
FROM {{schema}}.docket_stuck_jobs ORDER BY lease_until LIMIT $1`

	sqlStuckCount = `SELECT count(*) FROM {{schema}}.docket_stuck_jobs`

	sqlUnserved = `SELECT queue, kind, jobs, oldest_run_at FROM {{schema}}.docket_unserved_kinds ORDER BY queue, kind`

	sqlWorkers = `SELECT id, host, pid, kinds, queues, started_at, last_seen, expires_at > now(), claims,
	claim_p50_ms, claim_p95_ms, claim_p99_ms
FROM {{schema}}.docket_workers ORDER BY started_at, id`

	sqlHorizon = `SELECT holder, pid, application_name, state, name, database, same_database, xid_age, age_seconds
FROM {{schema}}.docket_horizon
ORDER BY age_seconds DESC NULLS LAST, xid_age DESC`

	sqlNow = `SELECT now()`

	sqlPausedQueues = `SELECT name FROM {{schema}}.docket_queues WHERE paused ORDER BY name`

	sqlSetPaused = `INSERT INTO {{schema}}.docket_queues AS q (name, paused, paused_at, updated_at)
VALUES ($1, $2, CASE WHEN $2 THEN now() END, now())
ON CONFLICT (name) DO UPDATE SET paused = EXCLUDED.paused, updated_at = now(),
	paused_at = CASE WHEN EXCLUDED.paused THEN coalesce(CASE WHEN q.paused THEN q.paused_at END, now()) END`

	sqlUpsertWorker = `INSERT INTO {{schema}}.docket_workers
	(id, host, pid, kinds, queues, expires_at, claims, claim_p50_ms, claim_p95_ms, claim_p99_ms)
VALUES ($1, $2, $3, $4, $5, now() + $6::bigint * interval '1 millisecond', $7, $8, $9, $10)
ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, kinds = EXCLUDED.kinds,
	queues = EXCLUDED.queues, last_seen = now(), expires_at = EXCLUDED.expires_at,
	claims = EXCLUDED.claims, claim_p50_ms = EXCLUDED.claim_p50_ms,
	claim_p95_ms = EXCLUDED.claim_p95_ms, claim_p99_ms = EXCLUDED.claim_p99_ms`

	// sqlPruneWorkers forgets processes that have not been seen for a day.
	sqlPruneWorkers = `DELETE FROM {{schema}}.docket_workers WHERE expires_at < now() - interval '1 day'`

	sqlDeleteWorker = `DELETE FROM {{schema}}.docket_workers WHERE id = $1`

	// sqlDeadList filters the dead-letter table; an empty filter field
	// matches everything. Payloads are fetched only when $7 is true.
	sqlDeadList = `SELECT id, queue, kind, priority, tenant, attempts, max_attempts, created_at, run_at,
	dead_at, reason, COALESCE(last_error, ''), COALESCE(unique_key, ''), meta,
	CASE WHEN $7 THEN payload END
FROM {{schema}}.docket_jobs_dead
WHERE ($1 = '' OR kind = $1) AND ($2 = '' OR queue = $2)
	AND ($3 = '' OR last_error LIKE $3) AND ($4::timestamptz IS NULL OR dead_at >= $4)
	AND ($5::bigint[] IS NULL OR id = ANY($5)) AND ($8::timestamptz IS NULL OR dead_at < $8)
ORDER BY dead_at, id
LIMIT $6`

	// sqlReplay moves dead jobs $1 back into docket_jobs in one statement:
	// the dead row is deleted only when its job was inserted, so a dead job
	// whose unique key is taken by a live job stays where it is. The job
	// keeps its id, kind, queue, payload and meta; attempts start over.
	sqlReplay = `WITH src AS (
	SELECT * FROM {{schema}}.docket_jobs_dead
	WHERE id = ANY($1::bigint[])
	FOR UPDATE SKIP LOCKED
), ins AS (
	INSERT INTO {{schema}}.docket_jobs
		(id, state, queue, kind, priority, run_at, created_at, max_attempts, unique_key, tenant, serial_key, payload, meta)
	SELECT id, 'ready', queue, kind, priority, now(), now(), max_attempts, unique_key, tenant, serial_key, payload, meta
	FROM src
	ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING
	RETURNING id, queue
), del AS (
	DELETE FROM {{schema}}.docket_jobs_dead d USING ins WHERE d.id = ins.id
	RETURNING d.id, d.queue, d.dead_at
), logged AS (
	INSERT INTO {{schema}}.docket_dead_removed (queue, dead_minute, n)
	SELECT queue, date_trunc('minute', dead_at), count(*) FROM del GROUP BY 1, 2
)
SELECT id, queue FROM del`

	sqlPurgeDead = `WITH del AS (
	DELETE FROM {{schema}}.docket_jobs_dead
	WHERE id IN (SELECT id FROM {{schema}}.docket_jobs_dead WHERE dead_at < $1 ORDER BY dead_at LIMIT $2)
	RETURNING queue, dead_at
), logged AS (
	INSERT INTO {{schema}}.docket_dead_removed (queue, dead_minute, n)
	SELECT queue, date_trunc('minute', dead_at), count(*) FROM del GROUP BY 1, 2
)
SELECT count(*) FROM del`

	sqlPruneRemoved = `DELETE FROM {{schema}}.docket_dead_removed WHERE at < now() - interval '2 days'`

	// sqlCancelJob moves a job that is not running to the dead-letter table.
	sqlCancelJob = `WITH gone AS (
	DELETE FROM {{schema}}.docket_jobs
	WHERE id = $1 AND state <> 'running'
	RETURNING *, 'cancelled'::text AS reason, $2::text AS err
)
` + deadInsert

	// sqlRetryNow makes a scheduled job due now, in a fresh place in line.
	sqlRetryNow = `UPDATE {{schema}}.docket_jobs
SET state = 'ready', run_at = now(), ready_seq = ` + nextReadySeq + `
WHERE id = $1 AND state = 'scheduled'
RETURNING queue`

	sqlJobState = `SELECT state FROM {{schema}}.docket_jobs WHERE id = $1
UNION ALL SELECT 'dead' FROM {{schema}}.docket_jobs_dead WHERE id = $1
LIMIT 1`
)

// opQueries holds the operations statements rendered for one schema.
type opQueries struct {
	queueStatus, tableStatus, stuckJobs, stuckCount, unserved, workers, horizon, now string
	pausedQueues, setPaused, upsertWorker, pruneWorkers, deleteWorker                string
	deadList, replay, purgeDead, pruneRemoved, cancelJob, retryNow, jobState         string
}

func renderOpQueries(schema string) opQueries {
	r := func(s string) string { return render(s, schema) }
	return opQueries{
		queueStatus: r(sqlQueueStatus), tableStatus: r(sqlTableStatus), stuckJobs: r(sqlStuckJobs),
		stuckCount: r(sqlStuckCount), unserved: r(sqlUnserved), workers: r(sqlWorkers),
		horizon: r(sqlHorizon), now: sqlNow, pausedQueues: r(sqlPausedQueues), setPaused: r(sqlSetPaused),
		upsertWorker: r(sqlUpsertWorker), pruneWorkers: r(sqlPruneWorkers), deleteWorker: r(sqlDeleteWorker),
		deadList: r(sqlDeadList), replay: r(sqlReplay), purgeDead: r(sqlPurgeDead),
		pruneRemoved: r(sqlPruneRemoved), cancelJob: r(sqlCancelJob), retryNow: r(sqlRetryNow),
		jobState: r(sqlJobState),
	}
}
