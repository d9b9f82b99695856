package admin

import (
	"context"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// OverviewLimit is where the counts of Overview stop.
const OverviewLimit = 10_000

// Overview is a snapshot for a page that refreshes every second or so (the
// dashboard's overview): the queues and the warnings of Status, read so
// that the cost does not grow with the backlog. Each count walks a partial
// index and stops at Limit, so a count equal to Limit means "at least"
// (Capped), and the warnings say "at least" for such counts. Status is the
// exact snapshot, for docket status and the metrics, at the cost of
// counting every live job.
type Overview struct {
	// Status holds the queues, the tables, the count of stuck jobs (not
	// the list), workers, schedules no worker serves, the vacuum horizon,
	// the relay's backlog and the warnings. Its queues carry Paused, Ready
	// (up to Limit), Running, Lag (the age of the oldest job at the head
	// of the queue, by claim order), Scheduled (from the next Limit
	// scheduled jobs), Completed1m and Completed1h (from the latest Limit
	// jobs completed in the last hour), Dead1h, DLQSize and DLQDelta24h
	// (from the latest Limit dead jobs); their other counts are left
	// zero. A queue's share of a window that stopped at Limit is a lower
	// bound: Capped(Scheduled), Capped(Completed1h) and Capped(DLQ) say so
	// for the totals, and so for every queue. Unserved kinds are looked for among the first 1,000 ready
	// jobs of each queue, where jobs that no worker claims gather
	// (UnservedKind.AtLeast says when more follow).
	*Status
	// Limit is where the counts stop (OverviewLimit).
	Limit int64
	// Totals over every queue, each up to Limit: scheduled jobs, jobs
	// waiting in a serial key's line, workflow jobs waiting for their
	// parents, jobs completed in the last hour, and dead letters (the
	// sums of the queues' Scheduled, Completed1h and DLQSize).
	Scheduled, SerialWaiting, WorkflowWaiting, Completed1h, DLQ int64
	// Completed1mCapped, Dead1hCapped and DLQDelta24hCapped report that
	// the window every queue's Completed1m, Dead1h or DLQDelta24h is drawn
	// from stopped at Limit jobs (over all queues): each queue's figure is
	// then a lower bound, and their sum is at least Limit.
	Completed1mCapped, Dead1hCapped, DLQDelta24hCapped bool
}

// unservedHead is how many ready jobs per queue Overview looks at for kinds
// no live worker serves.
const unservedHead = 1000

// sqlBoundedSettings runs before each bounded read (Overview, DeadLetters.Groups),
// in the same implicit transaction (see pgsql.Run). Their statements stop
// at a LIMIT, which the planner prices as if matching rows were spread
// evenly: on a large table it picked sequential scans that the LIMIT
// would stop early, and read the whole table when the rows it wanted sat
// at the end; sequential scans are off. And the estimates, made for the
// whole backlog that the LIMITs never read, passed jit_above_cost: on
// 1,000,000 jobs compiling took seconds where running takes milliseconds;
// JIT is off.
const sqlBoundedSettings = `SELECT set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true)`

// eachBounded is each with sqlBoundedSettings.
func (c *Client) eachBounded(ctx context.Context, db DB, sql string, args []any, fn func(scan func(...any) error) error) error {
	return c.wrapErr(pgsql.Run(ctx, db, sqlBoundedSettings, sql, args, func(rows pgx.Rows) error { return pgsql.EachRow(rows, fn) }))
}

var (
	// sqlOverviewQueues lists the queues that have ready or running jobs,
	// scheduled jobs among the next $1, finished jobs among the latest $1
	// of the last hour, dead jobs among the latest $1, a row in
	// docket_queues or a live worker, with bounded counts; the last
	// column is the queue's share of the latest $1 dead jobs that died in
	// the last 24 hours. Ready queues come from a skip scan of the claim
	// index; a queue's lag from the head of each of its priorities. Each
	// window is read once, through its index, and split by queue: the
	// next scheduled jobs by run_at (docket_jobs_scheduled_idx), the
	// latest finished ones by finished_at (docket_jobs_done_finished_idx,
	// which includes the queue), the latest dead ones by dead_at
	// (docket_jobs_dead_dead_at_idx). A window that held fewer than $1
	// jobs holds all of them: the latest $1 dead jobs hold every job dead
	// in the last 24 hours unless $1 died in them.
	sqlOverviewQueues = pgsql.SQL(`WITH RECURSIVE ready(queue) AS (
	SELECT min(queue) FROM {{schema}}.docket_jobs WHERE state = 'ready'
	UNION ALL
	SELECT (SELECT min(queue) FROM {{schema}}.docket_jobs WHERE state = 'ready' AND queue > ready.queue)
	FROM ready WHERE ready.queue IS NOT NULL
), running AS (
	SELECT queue, count(*) AS n, count(*) FILTER (WHERE lease_until < now()) AS stuck
	FROM {{schema}}.docket_jobs WHERE state = 'running' GROUP BY queue
), scheduled AS (
	SELECT queue, count(*) AS n FROM (
		SELECT queue FROM {{schema}}.docket_jobs WHERE state = 'scheduled' ORDER BY run_at LIMIT $1) s
	GROUP BY queue
), done AS (
	SELECT queue, count(*) FILTER (WHERE finished_at > now() - interval '1 minute') AS n1m, count(*) AS n1h FROM (
		SELECT queue, finished_at FROM {{schema}}.docket_jobs_done
		WHERE finished_at > now() - interval '1 hour' ORDER BY finished_at DESC LIMIT $1) d
	GROUP BY queue
), dead AS (
	SELECT queue, count(*) FILTER (WHERE dead_at > now() - interval '1 hour') AS n1h,
		count(*) FILTER (WHERE dead_at > now() - interval '24 hours') AS n24h, count(*) AS n FROM (
		SELECT queue, dead_at FROM {{schema}}.docket_jobs_dead ORDER BY dead_at DESC LIMIT $1) d
	GROUP BY queue
), removed AS (
	SELECT queue, sum(n) AS n FROM {{schema}}.docket_dead_removed
	WHERE at > now() - interval '24 hours' AND dead_minute <= now() - interval '24 hours'
	GROUP BY queue
), names AS (
	SELECT queue FROM ready WHERE queue IS NOT NULL
	UNION SELECT queue FROM running
	UNION SELECT queue FROM scheduled
	UNION SELECT queue FROM done
	UNION SELECT queue FROM dead
	UNION SELECT name FROM {{schema}}.docket_queues
	UNION SELECT unnest(queues) FROM {{schema}}.docket_workers WHERE expires_at > now()
)
SELECT n.queue, coalesce(q.paused, false),
	(SELECT count(*) FROM (SELECT 1 FROM {{schema}}.docket_jobs j
		WHERE j.state = 'ready' AND j.queue = n.queue LIMIT $1) r),
	coalesce(s.n, 0), coalesce(rn.n, 0),
	coalesce(extract(epoch FROM now() - (
		SELECT min(h.run_at) FROM generate_series(-10, 10) AS p(priority)
		CROSS JOIN LATERAL (
			SELECT j.run_at FROM {{schema}}.docket_jobs j
			WHERE j.state = 'ready' AND j.queue = n.queue AND j.priority = p.priority
			ORDER BY j.ready_seq LIMIT 1) h)), 0)::double precision,
	coalesce(d.n1m, 0), coalesce(d.n1h, 0), coalesce(x.n1h, 0), coalesce(x.n, 0),
	(coalesce(x.n24h, 0) - coalesce(rm.n, 0))::bigint,
	coalesce(rn.stuck, 0), coalesce(x.n24h, 0)
FROM names n
LEFT JOIN running rn ON rn.queue = n.queue
LEFT JOIN scheduled s ON s.queue = n.queue
LEFT JOIN done d ON d.queue = n.queue
LEFT JOIN dead x ON x.queue = n.queue
LEFT JOIN removed rm ON rm.queue = n.queue
LEFT JOIN {{schema}}.docket_queues q ON q.name = n.queue
ORDER BY n.queue`)

	// sqlOverviewTotals counts, each up to $1, jobs in a serial key's line
	// and workflow jobs waiting for their parents. Both kinds of waiting
	// have their own partial index; a workflow job has no serial key.
	// (The totals of scheduled, completed and dead jobs are the sums of the
	// queues' windows.)
	sqlOverviewTotals = pgsql.SQL(`SELECT
	(SELECT count(*) FROM (SELECT 1 FROM {{schema}}.docket_jobs WHERE state = 'waiting' AND serial_key IS NOT NULL LIMIT $1) w),
	(SELECT count(*) FROM (SELECT 1 FROM {{schema}}.docket_jobs WHERE state = 'waiting' AND workflow_id IS NOT NULL LIMIT $1) f)`)

	// sqlOverviewUnserved finds, among the first $1 ready jobs of each
	// queue in claim order, kinds that no live worker serves; the last
	// column is true when the head was full, so that more ready jobs may
	// follow and the count is a lower bound. (The head is counted outside
	// the LIMIT: a window function beside it would count the whole queue.)
	sqlOverviewUnserved = pgsql.SQL(`WITH RECURSIVE ready(queue) AS (
	SELECT min(queue) FROM {{schema}}.docket_jobs WHERE state = 'ready'
	UNION ALL
	SELECT (SELECT min(queue) FROM {{schema}}.docket_jobs WHERE state = 'ready' AND queue > ready.queue)
	FROM ready WHERE ready.queue IS NOT NULL
)
SELECT h.queue, h.kind, count(*), min(h.run_at), bool_or(h.head = $1)
FROM ready r
CROSS JOIN LATERAL (
	SELECT f.*, count(*) OVER () AS head FROM (
		SELECT j.queue, j.kind, j.run_at FROM {{schema}}.docket_jobs j
		WHERE j.state = 'ready' AND j.queue = r.queue
		ORDER BY j.priority DESC, j.ready_seq LIMIT $1) f) h
WHERE r.queue IS NOT NULL AND NOT EXISTS (
	SELECT 1 FROM {{schema}}.docket_workers p
	WHERE p.expires_at > now() AND h.kind = ANY(p.kinds) AND h.queue = ANY(p.queues))
GROUP BY h.queue, h.kind
ORDER BY h.queue, h.kind`)
)

// Overview reads the bounded snapshot; see the type. It needs the same
// migrations as Status and reads, never writes.
func (c *Client) Overview(ctx context.Context, db DB, th Thresholds) (*Overview, error) {
	th = th.withDefaults()
	o := &Overview{Status: &Status{}, Limit: OverviewLimit}
	s := o.Status
	if err := db.QueryRow(ctx, sqlNow).Scan(&s.At); err != nil {
		return nil, c.wrapErr(err)
	}
	var completed1m, dead1h, dead24h int64 // the windows' sizes, over all queues
	err := c.eachBounded(ctx, db, sqlOverviewQueues.For(c.schema), []any{o.Limit}, func(scan func(...any) error) error {
		var q QueueStatus
		var lag float64
		var stuck, n24h int64
		if err := scan(&q.Queue, &q.Paused, &q.Ready, &q.Scheduled, &q.Running, &lag, &q.Completed1m, &q.Completed1h,
			&q.Dead1h, &q.DLQSize, &q.DLQDelta24h, &stuck, &n24h); err != nil {
			return err
		}
		q.Lag = seconds(lag)
		s.StuckCount += stuck
		completed1m, dead1h, dead24h = completed1m+q.Completed1m, dead1h+q.Dead1h, dead24h+n24h
		o.Scheduled, o.Completed1h, o.DLQ = o.Scheduled+q.Scheduled, o.Completed1h+q.Completed1h, o.DLQ+q.DLQSize
		s.Queues = append(s.Queues, q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	o.Completed1mCapped, o.Dead1hCapped, o.DLQDelta24hCapped = o.Capped(completed1m), o.Capped(dead1h), o.Capped(dead24h)
	s.caps = countCaps{ready: o.Limit, dlqDelta: o.DLQDelta24hCapped, dlqSize: o.Capped(o.DLQ)}
	err = c.eachBounded(ctx, db, sqlOverviewTotals.For(c.schema), []any{o.Limit}, func(scan func(...any) error) error {
		return scan(&o.SerialWaiting, &o.WorkflowWaiting)
	})
	if err != nil {
		return nil, err
	}
	err = c.eachBounded(ctx, db, sqlOverviewUnserved.For(c.schema), []any{unservedHead}, func(scan func(...any) error) error {
		var u UnservedKind
		if err := scan(&u.Queue, &u.Kind, &u.Jobs, &u.OldestRunAt, &u.AtLeast); err != nil {
			return err
		}
		s.Unserved = append(s.Unserved, u)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := c.readRest(ctx, db, th, s); err != nil {
		return nil, err
	}
	return o, nil
}

// Capped reports whether a count of the overview stopped at its limit.
func (o *Overview) Capped(n int64) bool { return n >= o.Limit }
