package pgsql

// DeadInsert moves the rows of CTE "gone" (deleted from docket_jobs, with
// columns reason and err) into the dead-letter table. Outcomes, the reaper
// and cancelling a job all end this way.
const DeadInsert = `INSERT INTO {{schema}}.docket_jobs_dead
	(id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
	 created_at, run_at, reason, last_error, payload, meta)
SELECT id, queue, kind, priority, tenant, serial_key, unique_key, attempts, max_attempts,
	created_at, run_at, reason, err, payload, meta
FROM gone
RETURNING id`

// NextReadySeq draws a job's place in line when it becomes ready. Ids come
// from the same sequence (migration 005), so a job inserted with a
// preallocated id takes that id as its ready_seq.
const NextReadySeq = `nextval('{{schema}}.docket_jobs_id_seq')`
