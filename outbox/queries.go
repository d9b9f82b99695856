package outbox

// Every statement that touches Docket's job tables lives in this file, so the
// shape of the hot table can change in one place. {{schema}} is replaced by
// the client's quoted schema when the client is created.
//
// Statements on a worker's running jobs (heartbeat and every outcome) are
// fenced by the claim they speak for: they match a job's id together with
// the claim_id its claim wrote (one number per claim statement, from
// docket_claims_seq), and locked_by = worker. A run that lost its lease
// changes nothing, even when the same process has claimed the job again
// since: that claim wrote a new claim_id. A check constraint keeps locked_by
// set exactly while a job runs, so state need not be matched; leaving it out
// keeps these statements on the primary key instead of the running-jobs
// index, whose dead entries pile up while a long transaction holds back
// vacuum.
//
// Heartbeat, complete and release take the claims as a JSON object from
// job id to claim id (runClaims) and read the table by id = ANY($1) alone,
// in primary-key order, with the claim as a filter: a join with the runs
// instead let cached generic plans rescan the runs for every row (seconds
// for a batch of thousands) or lock rows out of key order (deadlocks between
// concurrent batches). The outcomes that carry a value per job (fail,
// snooze, dead-letter) still join with their rows.

// jobColumns is what a claim returns, in the order scanJob reads it.
const jobColumns = `id, queue, kind, priority, run_at, created_at, attempts, max_attempts,
	COALESCE(unique_key, '') AS unique_key, tenant, COALESCE(serial_key, '') AS serial_key,
	payload, meta, locked_at, lease_until, COALESCE(last_error, '') AS last_error, claim_id`

// deadInsert moves the rows of CTE "gone" (deleted from docket_jobs, with
// columns reason and err) into the dead-letter table.
const deadInsert = `INSERT INTO {{schema}}.docket_jobs_dead
	(id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
	 created_at, run_at, reason, last_error, payload, meta)
SELECT id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
	created_at, run_at, reason, err, payload, meta
FROM gone
RETURNING id`

// claimUpdate marks the rows of CTE "c" running under one new claim id
// and returns them in claim order.
const claimUpdate = `, k AS (
	SELECT nextval('{{schema}}.docket_claims_seq') AS next_claim
), u AS (
	UPDATE {{schema}}.docket_jobs
	SET state = 'running', attempts = attempts + 1, locked_by = $4, locked_at = now(),
		lease_until = now() + $5::bigint * interval '1 millisecond', claim_id = k.next_claim
	FROM k
	WHERE id = ANY(ARRAY(SELECT id FROM c))
	RETURNING ` + jobColumns + `, ready_seq
)
SELECT * FROM u ORDER BY priority DESC, ready_seq`

// sqlIndexSettings runs before each statement a worker runs on its jobs as
// a transaction of its own (outcomes, heartbeats, reaping, promotion), in
// the same implicit transaction: one batch, one round trip, and the
// setting ends with the statement. It turns sequential scans off. A worker
// that starts on a near-empty jobs table plans its statements there, where
// a sequential scan is cheapest, and the plan cache may keep those plans
// for as long as the connection lives (until an ANALYZE invalidates them):
// when a burst then fills the table, every statement would read all of it.
// With sequential scans off the plans use the indexes they were written
// for at any size (TestPlansCachedWhileSmall).
const sqlIndexSettings = `SELECT set_config('enable_seqscan', 'off', true)`

// sqlClaimSettings is sqlIndexSettings for a claim, with two more settings.
// A generic plan spares the claim its planning, about a fifth of its cost,
// which the plan cache would otherwise pay on most claims because it finds
// the custom plans cheaper; TestHotPathPlans checks that generic plans use
// the indexes. And the claim commits without waiting for its WAL flush: a
// claim lost in a database crash only puts its jobs back to ready, which
// at-least-once delivery allows, and the first durable commit after it (an
// outcome, say) flushes it anyway.
const sqlClaimSettings = `SELECT set_config('enable_seqscan', 'off', true),
	set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('synchronous_commit', 'off', true)`

// In a caller's transaction (a RegisterTx handler's completion, say) the
// settings above would last until the caller commits, and a claim's would
// make the caller's own commit asynchronous. There only sequential scans
// are turned off, and turned back to what they were right after the
// statement, in the same batch: sqlTxIndexSettings saves the caller's value
// in a setting of Docket's own and sqlTxRestore puts it back. Without it a
// plan made there would also serve the same statement outside transactions
// on that connection, since the plan cache ignores settings.
const (
	sqlTxIndexSettings = `SELECT set_config('docket.enable_seqscan', current_setting('enable_seqscan'), true),
	set_config('enable_seqscan', 'off', true)`
	sqlTxRestore = `SELECT set_config('enable_seqscan', current_setting('docket.enable_seqscan'), true)`
)

// enqueueResult ends the single-job inserts; CASE guarantees pg_notify runs
// only for a job inserted ready.
const enqueueResult = `
SELECT id, state, inserted,
	CASE WHEN $12::text IS NOT NULL AND state = 'ready' AND inserted THEN pg_notify($12, $1) IS NOT NULL ELSE false END
FROM ins`

const (
	// sqlEnqueue inserts one job and returns its id, its state, whether it
	// was inserted (false: a duplicate key was in flight), and whether it
	// sent the NOTIFY that announces it: when $12 names a channel and the
	// job was inserted ready, in the same round trip.
	sqlEnqueue = `WITH ins AS (
	INSERT INTO {{schema}}.docket_jobs
		(state, queue, kind, priority, run_at, max_attempts, unique_key, tenant, serial_key, payload, meta)
	SELECT CASE WHEN t.at > now() THEN 'scheduled' ELSE 'ready' END,
		$1, $2, $3, t.at, $4, $5, $6, $7, $8::jsonb, $9::jsonb
	FROM (SELECT COALESCE($10::timestamptz, now() + $11::bigint * interval '1 millisecond') AS at) t
	ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING
	RETURNING id, state, true AS inserted
)` + enqueueResult

	// sqlEnqueueMove is sqlEnqueue where a duplicate key moves the existing
	// job's run_at instead, unless that job is already running.
	sqlEnqueueMove = `WITH ins AS (
	INSERT INTO {{schema}}.docket_jobs AS j
		(state, queue, kind, priority, run_at, max_attempts, unique_key, tenant, serial_key, payload, meta)
	SELECT CASE WHEN t.at > now() THEN 'scheduled' ELSE 'ready' END,
		$1, $2, $3, t.at, $4, $5, $6, $7, $8::jsonb, $9::jsonb
	FROM (SELECT COALESCE($10::timestamptz, now() + $11::bigint * interval '1 millisecond') AS at) t
	ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL
	DO UPDATE SET run_at = EXCLUDED.run_at, state = EXCLUDED.state, ready_seq = EXCLUDED.ready_seq
	WHERE j.state <> 'running'
	RETURNING id, state, (xmax = 0) AS inserted
)` + enqueueResult

	sqlLookupKey = `SELECT id, state FROM {{schema}}.docket_jobs WHERE unique_key = $1`

	sqlLookupKeys = `SELECT j.unique_key, j.id, j.state FROM {{schema}}.docket_jobs j
WHERE j.unique_key IN (SELECT jsonb_array_elements_text($1::jsonb))`

	// nextReadySeq draws a job's place in line when it becomes ready. Ids
	// come from the same sequence (migration 005), so a job inserted with a
	// preallocated id takes that id as its ready_seq.
	nextReadySeq = `nextval('{{schema}}.docket_jobs_id_seq')`

	sqlNextIDs = `SELECT nextval('{{schema}}.docket_jobs_id_seq') FROM generate_series(1, $1::int)`

	// sqlEnqueueSet inserts a JSON array of jobs with preallocated ids; rows
	// whose unique key is taken (also by an earlier row of the same array)
	// are skipped and missing from the result.
	sqlEnqueueSet = `INSERT INTO {{schema}}.docket_jobs
	(id, ready_seq, state, queue, kind, priority, run_at, max_attempts, unique_key, tenant, serial_key, payload, meta)
SELECT r.id, r.id, CASE WHEN t.at > now() THEN 'scheduled' ELSE 'ready' END,
	r.queue, r.kind, r.priority, t.at, r.max_attempts, r.unique_key, r.tenant, r.serial_key, r.payload, r.meta
FROM jsonb_to_recordset($1::jsonb) AS r(id bigint, queue text, kind text, priority smallint,
	run_at timestamptz, delay_ms bigint, max_attempts integer, unique_key text, tenant text,
	serial_key text, payload jsonb, meta jsonb)
CROSS JOIN LATERAL (SELECT COALESCE(r.run_at, now() + r.delay_ms * interval '1 millisecond') AS at) t
ON CONFLICT (unique_key) WHERE unique_key IS NOT NULL DO NOTHING
RETURNING id, state`

	sqlNotify = `SELECT pg_notify($1, $2)`

	// sqlRemoveQueued deletes the job holding a unique key unless it runs.
	sqlRemoveQueued = `DELETE FROM {{schema}}.docket_jobs
WHERE unique_key = $1 AND state <> 'running'
RETURNING id`

	// sqlClaim takes up to $3 ready jobs of kinds $2 from the (queue,
	// priority, after, upto) ranges $1, $6, $7, $8 of ready_seq, probing them
	// in that order: per range one descent of docket_jobs_claim_idx to the
	// first entry after the cursor. Entries behind the cursor — jobs already claimed, which a
	// long transaction elsewhere may keep vacuum from removing — are never
	// visited. The outer UPDATE finds rows by id = ANY(array) so no
	// statistics can turn it into a join over the whole table.
	sqlClaim = `WITH c AS (
	SELECT j.id
	FROM unnest($1::text[], $6::smallint[], $7::bigint[], $8::bigint[]) AS p(queue, priority, after, upto)
	CROSS JOIN LATERAL (
		SELECT id FROM {{schema}}.docket_jobs
		WHERE state = 'ready' AND queue = p.queue AND priority = p.priority
			AND ready_seq > p.after AND ready_seq <= p.upto AND kind = ANY($2::text[])
		ORDER BY ready_seq
		LIMIT $3
		FOR NO KEY UPDATE SKIP LOCKED
	) j
	LIMIT $3
)` + claimUpdate

	// sqlStragglers finds, without locking anything, up to $3 ready jobs of
	// kinds $2 per (queue, priority) that wait at or behind the cursors
	// ($1, $4, $5): jobs whose transaction committed after the claimers had
	// moved past them. It steps over every entry behind the cursor, which is
	// what makes it slow while the vacuum horizon is held, so it runs off
	// the claim path.
	sqlStragglers = `SELECT p.queue, p.priority, j.ready_seq
FROM unnest($1::text[], $4::smallint[], $5::bigint[]) AS p(queue, priority, upto)
CROSS JOIN LATERAL (
	SELECT ready_seq FROM {{schema}}.docket_jobs
	WHERE state = 'ready' AND queue = p.queue AND priority = p.priority
		AND ready_seq <= p.upto AND kind = ANY($2::text[])
	ORDER BY ready_seq
	LIMIT $3
) j`

	// sqlClaimCapped is sqlClaim for one queue $1 where no tenant gets more
	// than $6 of the batch. It walks the queue's distinct tenants with a
	// skip scan over docket_jobs_tenant_idx and takes each tenant's head;
	// "tenant <> ''" is what lets it use that index, which no other
	// statement can. Jobs without a tenant are not in that index (it would
	// cost every insert an entry): they count as one more tenant, looked for
	// among the queue's first 4×$3 ready jobs through the claim index. Of
	// all these heads it keeps the best $3.
	sqlClaimCapped = `WITH RECURSIVE t(tenant) AS (
	SELECT min(tenant) FROM {{schema}}.docket_jobs WHERE state = 'ready' AND tenant <> '' AND queue = $1
	UNION ALL
	SELECT (SELECT min(tenant) FROM {{schema}}.docket_jobs
		WHERE state = 'ready' AND tenant <> '' AND queue = $1 AND tenant > t.tenant)
	FROM t WHERE t.tenant IS NOT NULL
), untenanted AS (
	SELECT id, priority, ready_seq FROM {{schema}}.docket_jobs
	WHERE id = ANY(ARRAY(
		SELECT id FROM {{schema}}.docket_jobs
		WHERE state = 'ready' AND queue = $1 AND kind = ANY($2::text[])
		ORDER BY priority DESC, ready_seq
		LIMIT 4 * $3))
		AND state = 'ready' AND tenant = ''
	ORDER BY priority DESC, ready_seq
	LIMIT $6
	FOR NO KEY UPDATE SKIP LOCKED
), c AS (
	SELECT id FROM (
		SELECT h.id, h.priority, h.ready_seq
		FROM t CROSS JOIN LATERAL (
			SELECT id, priority, ready_seq FROM {{schema}}.docket_jobs
			WHERE state = 'ready' AND tenant <> '' AND queue = $1 AND tenant = t.tenant AND kind = ANY($2::text[])
			ORDER BY priority DESC, ready_seq
			LIMIT $6
			FOR NO KEY UPDATE SKIP LOCKED
		) h
		WHERE t.tenant IS NOT NULL
		UNION ALL
		SELECT id, priority, ready_seq FROM untenanted
	) heads
	ORDER BY priority DESC, ready_seq
	LIMIT $3
)` + claimUpdate

	// sqlHeartbeat extends the leases of runs ($1 ids, $4 their claims, see
	// runClaims) of worker $2 by $3 ms. A lease that ran out but was not
	// reaped yet is extended too: the claim is still the run's, nobody else
	// took it.
	sqlHeartbeat = `UPDATE {{schema}}.docket_jobs j
SET lease_until = now() + $3::bigint * interval '1 millisecond'
WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($4::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
RETURNING j.id`

	// sqlCompleteHistory moves runs ($1 ids, $3 their claims, see
	// runClaims) of worker $2 to history, finished at $4, or when the
	// statement runs if $4 is null (not at the start of its transaction: a
	// transactional handler's transaction began before its handler ran).
	sqlCompleteHistory = `WITH d AS (
	DELETE FROM {{schema}}.docket_jobs j
	WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($3::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
	RETURNING j.*
)
INSERT INTO {{schema}}.docket_jobs_done
	(id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
	 created_at, run_at, started_at, finished_at, payload, meta)
SELECT id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
	created_at, run_at, locked_at, COALESCE($4::timestamptz, clock_timestamp()), payload, meta
FROM d
RETURNING id`

	sqlCompleteDelete = `DELETE FROM {{schema}}.docket_jobs j
WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($3::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
RETURNING j.id`

	// sqlFail records failed attempts: jobs with attempts left go back to
	// ready/scheduled after their delay; exhausted ones move to dead.
	sqlFail = `WITH i AS (
	SELECT * FROM unnest($1::bigint[], $3::text[], $4::bigint[], $5::bigint[]) AS i(id, err, delay_ms, claim_id)
), gone AS (
	DELETE FROM {{schema}}.docket_jobs j USING i
	WHERE j.id = i.id AND j.claim_id = i.claim_id AND j.locked_by = $2 AND j.attempts >= j.max_attempts
	RETURNING j.*, 'exhausted'::text AS reason, i.err
), dead AS (` + deadInsert + `
), retried AS (
	UPDATE {{schema}}.docket_jobs j
	SET state = CASE WHEN i.delay_ms > 0 THEN 'scheduled' ELSE 'ready' END,
		run_at = now() + i.delay_ms * interval '1 millisecond', ready_seq = ` + nextReadySeq + `,
		last_error = i.err, locked_by = NULL, locked_at = NULL, lease_until = NULL
	FROM i
	WHERE j.id = i.id AND j.claim_id = i.claim_id AND j.locked_by = $2 AND j.attempts < j.max_attempts
	RETURNING j.id
)
SELECT id, true FROM dead UNION ALL SELECT id, false FROM retried`

	// sqlSnooze reschedules jobs without spending the attempt their claim counted.
	sqlSnooze = `UPDATE {{schema}}.docket_jobs j
SET state = CASE WHEN i.delay_ms > 0 THEN 'scheduled' ELSE 'ready' END,
	run_at = now() + i.delay_ms * interval '1 millisecond', ready_seq = ` + nextReadySeq + `,
	attempts = j.attempts - 1, locked_by = NULL, locked_at = NULL, lease_until = NULL
FROM unnest($1::bigint[], $3::bigint[], $4::bigint[]) AS i(id, delay_ms, claim_id)
WHERE j.id = i.id AND j.claim_id = i.claim_id AND j.locked_by = $2
RETURNING j.id`

	sqlDeadLetter = `WITH i AS (
	SELECT * FROM unnest($1::bigint[], $3::text[], $4::text[], $5::bigint[]) AS i(id, reason, err, claim_id)
), gone AS (
	DELETE FROM {{schema}}.docket_jobs j USING i
	WHERE j.id = i.id AND j.claim_id = i.claim_id AND j.locked_by = $2
	RETURNING j.*, i.reason, i.err
)
` + deadInsert

	// sqlRelease hands unfinished jobs back at shutdown; the interrupted
	// attempt is not counted.
	sqlRelease = `UPDATE {{schema}}.docket_jobs j
SET state = 'ready', ready_seq = ` + nextReadySeq + `, attempts = j.attempts - 1, locked_by = NULL, locked_at = NULL, lease_until = NULL
WHERE j.id = ANY($1::bigint[]) AND j.claim_id = ($3::jsonb ->> j.id::text)::bigint AND j.locked_by = $2
RETURNING j.id`

	// sqlReap returns running jobs whose lease expired to ready, or moves
	// them to dead when that was their last attempt. The lost attempt counts:
	// a job that kills its worker must not be retried forever.
	sqlReap = `WITH x AS (
	SELECT id FROM {{schema}}.docket_jobs
	WHERE state = 'running' AND lease_until < now()
	ORDER BY id
	LIMIT $1
	FOR NO KEY UPDATE SKIP LOCKED
), gone AS (
	DELETE FROM {{schema}}.docket_jobs
	WHERE id = ANY(ARRAY(SELECT id FROM x)) AND attempts >= max_attempts
	RETURNING *, 'lease_expired'::text AS reason, $2::text AS err
), dead AS (` + deadInsert + `
), back AS (
	UPDATE {{schema}}.docket_jobs
	SET state = 'ready', ready_seq = ` + nextReadySeq + `, last_error = $2, locked_by = NULL, locked_at = NULL, lease_until = NULL
	WHERE id = ANY(ARRAY(SELECT id FROM x)) AND attempts < max_attempts
	RETURNING id
)
SELECT (SELECT count(*) FROM back), (SELECT count(*) FROM dead)`

	sqlPromote = `WITH p AS (
	SELECT id FROM {{schema}}.docket_jobs
	WHERE state = 'scheduled' AND run_at <= now()
	ORDER BY run_at
	LIMIT $1
	FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE {{schema}}.docket_jobs SET state = 'ready', ready_seq = ` + nextReadySeq + `
WHERE id = ANY(ARRAY(SELECT id FROM p))
RETURNING queue`

	sqlNextScheduled = `SELECT min(run_at) FROM {{schema}}.docket_jobs WHERE state = 'scheduled'`

	sqlPartitions = `SELECT c.relname FROM pg_inherits i
JOIN pg_class c ON c.oid = i.inhrelid
JOIN pg_class p ON p.oid = i.inhparent
JOIN pg_namespace n ON n.oid = p.relnamespace
WHERE n.nspname = $1 AND p.relname = 'docket_jobs_done'`

	// sqlPartitionAttached reports whether history partition $2 of schema
	// $1 is attached.
	sqlPartitionAttached = `SELECT EXISTS (` + sqlPartitions + ` AND c.relname = $2)`

	// sqlCreatePartition creates the table, then attaches it: ATTACH takes
	// a lock on the parent that does not block completions, where CREATE
	// TABLE ... PARTITION OF would block them all while it waits and runs.
	sqlCreatePartition = `CREATE TABLE IF NOT EXISTS {{schema}}.%[1]s
	(LIKE {{schema}}.docket_jobs_done INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
ALTER TABLE {{schema}}.docket_jobs_done ATTACH PARTITION {{schema}}.%[1]s
	FOR VALUES FROM ('%[2]s') TO ('%[3]s')`

	// sqlDropPartition takes an exclusive lock on the parent for a moment;
	// ddl bounds the wait with a short lock_timeout.
	sqlDropPartition = `DROP TABLE IF EXISTS {{schema}}.%s`
)

// queries holds every statement rendered for one schema.
type queries struct {
	enqueue, enqueueMove, lookupKey, lookupKeys, nextIDs, enqueueSet, notify, removeQueued   string
	claim, claimCapped, stragglers, heartbeat, completeHistory, completeDelete, fail         string
	snooze, deadLetter, release, reap, promote, nextScheduled, partitions, partitionAttached string
	createPartition, dropPartition                                                           string
}

func renderQueries(schema string) queries {
	r := func(s string) string { return render(s, schema) }
	return queries{
		enqueue: r(sqlEnqueue), enqueueMove: r(sqlEnqueueMove), lookupKey: r(sqlLookupKey),
		lookupKeys: r(sqlLookupKeys), nextIDs: r(sqlNextIDs), enqueueSet: r(sqlEnqueueSet),
		notify: sqlNotify, removeQueued: r(sqlRemoveQueued), claim: r(sqlClaim), claimCapped: r(sqlClaimCapped), stragglers: r(sqlStragglers),
		heartbeat: r(sqlHeartbeat), completeHistory: r(sqlCompleteHistory),
		completeDelete: r(sqlCompleteDelete), fail: r(sqlFail), snooze: r(sqlSnooze),
		deadLetter: r(sqlDeadLetter), release: r(sqlRelease), reap: r(sqlReap),
		promote: r(sqlPromote), nextScheduled: r(sqlNextScheduled), partitions: sqlPartitions, partitionAttached: sqlPartitionAttached,
		createPartition: r(sqlCreatePartition), dropPartition: r(sqlDropPartition),
	}
}
