package scheduler

import "strings"

// Every statement on docket_schedules lives in this file. Jobs are written
// only through the enqueue engine (Config.Jobs). {{schema}} is replaced by the quoted schema.

const scheduleColumns = `name, spec, time_zone, kind, queue, priority, tenant, serial_key,
	max_attempts, payload, spread_ms, misfire, paused, next_fire, last_fire,
	created_at, updated_at, registered_at, run_queue, run_priority, run_max_attempts`

const (
	// sqlUpsert registers schedules given as a JSON array, in name order so
	// that processes registering the same set lock rows in the same order.
	// The pause state of an existing schedule is left alone. The resolved
	// options of the runs (run_*) are NULL from a process that does not
	// know the kind's; such a registration keeps those stored unless it
	// changes what they were resolved from.
	sqlUpsert = `INSERT INTO {{schema}}.docket_schedules AS s
	(name, spec, time_zone, kind, queue, priority, tenant, serial_key, max_attempts, payload, spread_ms, misfire, paused,
	 run_queue, run_priority, run_max_attempts)
SELECT r.name, r.spec, r.time_zone, r.kind, r.queue, r.priority, r.tenant, r.serial_key,
	r.max_attempts, r.payload, r.spread_ms, r.misfire, r.paused, r.run_queue, r.run_priority, r.run_max_attempts
FROM json_to_recordset($1::json) AS r(name text, spec text, time_zone text, kind text, queue text,
	priority smallint, tenant text, serial_key text, max_attempts integer, payload jsonb,
	spread_ms bigint, misfire text, paused boolean, run_queue text, run_priority smallint, run_max_attempts integer)
ORDER BY r.name
ON CONFLICT (name) DO UPDATE SET
	spec = EXCLUDED.spec, time_zone = EXCLUDED.time_zone, kind = EXCLUDED.kind, queue = EXCLUDED.queue,
	priority = EXCLUDED.priority, tenant = EXCLUDED.tenant, serial_key = EXCLUDED.serial_key,
	max_attempts = EXCLUDED.max_attempts, payload = EXCLUDED.payload, spread_ms = EXCLUDED.spread_ms,
	misfire = EXCLUDED.misfire, registered_at = now(),
	run_queue = CASE WHEN EXCLUDED.run_queue IS NULL AND (s.kind, s.queue, s.priority, s.max_attempts) =
		(EXCLUDED.kind, EXCLUDED.queue, EXCLUDED.priority, EXCLUDED.max_attempts)
		THEN s.run_queue ELSE EXCLUDED.run_queue END,
	run_priority = CASE WHEN EXCLUDED.run_queue IS NULL AND (s.kind, s.queue, s.priority, s.max_attempts) =
		(EXCLUDED.kind, EXCLUDED.queue, EXCLUDED.priority, EXCLUDED.max_attempts)
		THEN s.run_priority ELSE EXCLUDED.run_priority END,
	run_max_attempts = CASE WHEN EXCLUDED.run_queue IS NULL AND (s.kind, s.queue, s.priority, s.max_attempts) =
		(EXCLUDED.kind, EXCLUDED.queue, EXCLUDED.priority, EXCLUDED.max_attempts)
		THEN s.run_max_attempts ELSE EXCLUDED.run_max_attempts END,
	updated_at = CASE WHEN (s.spec, s.time_zone, s.kind, s.queue, s.priority, s.tenant, s.serial_key,
			s.max_attempts, s.payload, s.spread_ms, s.misfire)
		IS DISTINCT FROM (EXCLUDED.spec, EXCLUDED.time_zone, EXCLUDED.kind, EXCLUDED.queue,
			EXCLUDED.priority, EXCLUDED.tenant, EXCLUDED.serial_key, EXCLUDED.max_attempts,
			EXCLUDED.payload, EXCLUDED.spread_ms, EXCLUDED.misfire)
		THEN now() ELSE s.updated_at END`

	// sqlReconcileLock serializes reconcilers (and registrations) of one
	// schema for the length of a transaction.
	sqlReconcileLock = `SELECT pg_advisory_xact_lock(hashtextextended('docket_schedules:' || $1, 0))`

	// sqlActive pages through active schedules after name $1; $2 limits to
	// some names (NULL: all), $3 to those without a pending run.
	sqlActive = `SELECT ` + scheduleColumns + ` FROM {{schema}}.docket_schedules
WHERE NOT paused AND name > $1 AND ($2::text[] IS NULL OR name = ANY($2::text[]))
	AND (NOT $3::boolean OR next_fire IS NULL)
ORDER BY name
LIMIT $4`

	// sqlSetNext records the fire times of runs the reconciler created,
	// unless the row changed meanwhile, and returns the names it updated.
	sqlSetNext = `UPDATE {{schema}}.docket_schedules s SET next_fire = u.next
FROM unnest($1::text[], $2::timestamptz[], $3::timestamptz[]) AS u(name, next, old)
WHERE s.name = u.name AND s.next_fire IS NOT DISTINCT FROM u.old AND NOT s.paused
RETURNING s.name`

	sqlLockOne = `SELECT ` + scheduleColumns + ` FROM {{schema}}.docket_schedules WHERE name = $1 FOR UPDATE`

	sqlAdvance = `UPDATE {{schema}}.docket_schedules SET last_fire = $2, next_fire = $3 WHERE name = $1`

	sqlGet = `SELECT ` + scheduleColumns + ` FROM {{schema}}.docket_schedules WHERE name = $1`

	sqlList = `SELECT ` + scheduleColumns + ` FROM {{schema}}.docket_schedules ORDER BY name`

	sqlStale = `SELECT ` + scheduleColumns + ` FROM {{schema}}.docket_schedules
WHERE registered_at < now() - $1::bigint * interval '1 millisecond' ORDER BY name`

	sqlPause = `UPDATE {{schema}}.docket_schedules SET paused = true, updated_at = now() WHERE name = $1`

	// sqlResume clears the pause; a schedule whose pending run ran while
	// paused has next_fire NULL and gets its next run from the reconciler.
	sqlResume = `UPDATE {{schema}}.docket_schedules SET paused = false, updated_at = now() WHERE name = $1`

	sqlRemove = `DELETE FROM {{schema}}.docket_schedules WHERE name = $1`
)

// queries holds the statements rendered for one schema.
type queries struct {
	upsert, active, setNext, lockOne, advance, get, list, stale, pause, resume, remove string
}

func renderQueries(schema string) queries {
	r := func(s string) string { return strings.ReplaceAll(s, "{{schema}}", `"`+schema+`"`) }
	return queries{
		upsert: r(sqlUpsert), active: r(sqlActive), setNext: r(sqlSetNext), lockOne: r(sqlLockOne),
		advance: r(sqlAdvance), get: r(sqlGet), list: r(sqlList), stale: r(sqlStale),
		pause: r(sqlPause), resume: r(sqlResume), remove: r(sqlRemove),
	}
}
