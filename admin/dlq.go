package admin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// The statements of dead-letter triage and of the one-job commands;
// {{schema}} is the quoted schema.
var (
	// sqlDeadList filters the dead-letter table; an empty filter field
	// matches everything. Payloads are fetched only when $7 is true.
	sqlDeadList = pgsql.SQL(`SELECT id, queue, kind, priority, tenant, attempts, max_attempts, created_at, run_at,
	dead_at, reason, COALESCE(last_error, ''), COALESCE(unique_key, ''), COALESCE(serial_key, ''), meta,
	CASE WHEN $7 THEN payload END
FROM {{schema}}.docket_jobs_dead` + sqlDeadWhere + `
ORDER BY dead_at, id
LIMIT $6`)

	// sqlDeadWhere is DeadFilter's condition: $1 kind, $2 queue, $3 error
	// LIKE pattern, $4 since, $5 ids, $8 before.
	sqlDeadWhere = `
WHERE ($1 = '' OR kind = $1) AND ($2 = '' OR queue = $2)
	AND ($3 = '' OR last_error LIKE $3) AND ($4::timestamptz IS NULL OR dead_at >= $4)
	AND ($5::bigint[] IS NULL OR id = ANY($5)) AND ($8::timestamptz IS NULL OR dead_at < $8)`

	// sqlDeadCount counts the dead jobs a DeadFilter matches, up to $6;
	// $7 is the filter's before.
	sqlDeadCount = pgsql.SQL(`SELECT count(*) FROM (SELECT 1 FROM {{schema}}.docket_jobs_dead` +
		strings.ReplaceAll(sqlDeadWhere, "$8", "$7") + `
LIMIT $6) d`)

	// sqlDiscardDead deletes up to $6 of the dead jobs a DeadFilter
	// matches ($7 is its before), oldest death first, counted as removed as a purge counts
	// them.
	sqlDiscardDead = pgsql.SQL(`WITH del AS (
	DELETE FROM {{schema}}.docket_jobs_dead
	WHERE id IN (SELECT id FROM {{schema}}.docket_jobs_dead` + strings.ReplaceAll(sqlDeadWhere, "$8", "$7") + `
		ORDER BY dead_at, id LIMIT $6)
	RETURNING queue, dead_at
), logged AS (
	INSERT INTO {{schema}}.docket_dead_removed (queue, dead_minute, n)
	SELECT queue, date_trunc('minute', dead_at), count(*) FROM del GROUP BY 1, 2
)
SELECT count(*) FROM del`)

	// sqlReplay moves dead jobs $1 back into docket_jobs in one statement:
	// the dead row is deleted only when its job was inserted, so a dead job
	// whose unique key is taken by a live job stays where it is. The job
	// keeps its id, kind, queue, payload, meta, workflow and attempt
	// history; attempts start over.
	sqlReplay = pgsql.SQL(`WITH src AS (
	SELECT * FROM {{schema}}.docket_jobs_dead
	WHERE id = ANY($1::bigint[])
	FOR UPDATE SKIP LOCKED
), ins AS (
	INSERT INTO {{schema}}.docket_jobs
		(id, state, queue, kind, priority, run_at, created_at, max_attempts, unique_key, tenant, serial_key, payload, meta, workflow_id,
		 attempt_log)
	SELECT id, 'ready', queue, kind, priority, now(), now(), max_attempts, unique_key, tenant, serial_key, payload, meta, workflow_id,
		attempt_log
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
SELECT id, queue FROM del`)

	sqlPurgeDead = pgsql.SQL(`WITH del AS (
	DELETE FROM {{schema}}.docket_jobs_dead
	WHERE id IN (SELECT id FROM {{schema}}.docket_jobs_dead WHERE dead_at < $1 ORDER BY dead_at LIMIT $2)
	RETURNING queue, dead_at
), logged AS (
	INSERT INTO {{schema}}.docket_dead_removed (queue, dead_minute, n)
	SELECT queue, date_trunc('minute', dead_at), count(*) FROM del GROUP BY 1, 2
)
SELECT count(*) FROM del`)

	sqlPruneRemoved = pgsql.SQL(`DELETE FROM {{schema}}.docket_dead_removed WHERE at < now() - interval '2 days'`)

	// sqlCancelJob moves job $1 to the dead-letter table when it is not
	// running, with note $2 as its error (a row with false). A running job
	// is marked for cancellation instead (a row with true; a second request
	// keeps the first one's time and note), and its worker is told on
	// channel $3 with payload $4 and the id: from then on the run can only
	// end cancelled (see internal/engine/queue/finish.go).
	sqlCancelJob = pgsql.SQL(`WITH gone AS (
	DELETE FROM {{schema}}.docket_jobs
	WHERE id = $1 AND state <> 'running'
	RETURNING *, 'cancelled'::text AS reason, $2::text AS err
), dead AS (` + pgsql.DeadInsert + `
), req AS (
	UPDATE {{schema}}.docket_jobs
	SET cancel_requested_at = COALESCE(cancel_requested_at, now()), cancel_note = COALESCE(cancel_note, $2::text)
	WHERE id = $1 AND state = 'running'
	RETURNING id
), told AS (
	SELECT count(pg_notify($3::text, $4::text || id::text)) AS n FROM req
)
SELECT id, false FROM dead
UNION ALL
SELECT id, true FROM req, told`)

	// sqlRetryNow makes a scheduled job due now, in a fresh place in line.
	sqlRetryNow = pgsql.SQL(`UPDATE {{schema}}.docket_jobs
SET state = 'ready', run_at = now(), ready_seq = ` + pgsql.NextReadySeq + `
WHERE id = $1 AND state = 'scheduled'
RETURNING queue`)

	// sqlDeleteJob deletes a job that is not running, live or dead, for
	// good; a dead one is counted as removed, as a purge counts it.
	sqlDeleteJob = pgsql.SQL(`WITH live AS (
	DELETE FROM {{schema}}.docket_jobs WHERE id = $1 AND state <> 'running' RETURNING id
), dead AS (
	DELETE FROM {{schema}}.docket_jobs_dead WHERE id = $1 RETURNING id, queue, dead_at
), logged AS (
	INSERT INTO {{schema}}.docket_dead_removed (queue, dead_minute, n)
	SELECT queue, date_trunc('minute', dead_at), 1 FROM dead
)
SELECT id FROM live UNION ALL SELECT id FROM dead`)

	// sqlDeadGroups groups the latest $2 dead jobs (the dead_at index,
	// newest first) by kind and last error.
	sqlDeadGroups = pgsql.SQL(`SELECT kind, COALESCE(last_error, ''), count(*), min(dead_at), max(dead_at),
	min(queue), count(DISTINCT queue)
FROM (
	SELECT kind, last_error, dead_at, queue FROM {{schema}}.docket_jobs_dead
	ORDER BY dead_at DESC
	LIMIT $2
) d
GROUP BY kind, last_error
ORDER BY count(*) DESC, kind, last_error
LIMIT $1`)

	sqlJobState = pgsql.SQL(`SELECT state FROM {{schema}}.docket_jobs WHERE id = $1
UNION ALL SELECT 'dead' FROM {{schema}}.docket_jobs_dead WHERE id = $1
LIMIT 1`)
)

// DeadJob is one row of the dead-letter table. Payload is filled only when
// asked for (DeadFilter.WithPayload): it may hold personal data.
type DeadJob struct {
	ID          int64
	Queue       string
	Kind        string
	Priority    int
	Tenant      string
	Attempts    int
	MaxAttempts int
	CreatedAt   time.Time
	RunAt       time.Time
	DeadAt      time.Time
	// Reason is one of the Reason constants.
	Reason    string
	LastError string
	UniqueKey string
	SerialKey string
	Meta      map[string]string
	// Payload is nil unless DeadFilter.WithPayload was set.
	Payload json.RawMessage
}

// DeadFilter selects dead jobs. Zero fields match everything; the fields
// that are set must all match.
type DeadFilter struct {
	// IDs selects these jobs only.
	IDs []int64
	// Kind and Queue match exactly.
	Kind, Queue string
	// ErrorLike is a SQL LIKE pattern on the last error ("%timeout%"): an
	// error signature.
	ErrorLike string
	// Since keeps jobs that died at or after it; Before those that died
	// before it.
	Since, Before time.Time
	// Limit bounds the result. Zero means 100; -1 means no limit.
	Limit int
	// WithPayload fetches payloads. Leave it off unless a person asked to
	// see them.
	WithPayload bool
}

// List returns the dead jobs that match f, oldest death first.
func (h DeadLetters) List(ctx context.Context, db DB, f DeadFilter) ([]DeadJob, error) {
	c := h.c
	limit := int64(f.Limit)
	switch {
	case f.Limit == 0:
		limit = 100
	case f.Limit < 0:
		limit = 1 << 62
	}
	var ids any
	if f.IDs != nil {
		ids = f.IDs
	}
	var out []DeadJob
	err := c.each(ctx, db, sqlDeadList.For(c.schema), []any{f.Kind, f.Queue, f.ErrorLike, timeOrNil(f.Since), ids, limit, f.WithPayload, timeOrNil(f.Before)},
		func(scan func(...any) error) error {
			var d DeadJob
			var prio int16
			var meta, payload []byte
			if err := scan(&d.ID, &d.Queue, &d.Kind, &prio, &d.Tenant, &d.Attempts, &d.MaxAttempts, &d.CreatedAt,
				&d.RunAt, &d.DeadAt, &d.Reason, &d.LastError, &d.UniqueKey, &d.SerialKey, &meta, &payload); err != nil {
				return err
			}
			d.Priority = int(prio)
			if meta != nil {
				if err := json.Unmarshal(meta, &d.Meta); err != nil {
					return fmt.Errorf("docket: dead job %d kind %s: decode meta: %w", d.ID, d.Kind, err)
				}
			}
			if payload != nil {
				d.Payload = json.RawMessage(payload)
			}
			out = append(out, d)
			return nil
		})
	return out, err
}

// DeadGroup is the dead jobs of one kind that died with the same last
// error: usually one cause, triaged and replayed together.
type DeadGroup struct {
	Kind  string
	Error string
	Jobs  int64
	// First and Last are when the oldest and newest of them died.
	First, Last time.Time
	// Queue is their queue, or the first by name of Queues.
	Queue  string
	Queues int
}

// Filter selects the group's jobs for DeadLetters.List and DeadLetters.Replay: its kind and
// exactly its error. A group without an error selects its kind's dead jobs
// that have none only through DeadLetters.List's results, so Filter reports false
// for it.
func (g DeadGroup) Filter() (DeadFilter, bool) {
	if g.Error == "" {
		return DeadFilter{}, false
	}
	return DeadFilter{Kind: g.Kind, ErrorLike: likeEscaper.Replace(g.Error)}, true
}

// likeEscaper quotes LIKE's wildcards and its escape character.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// DeadGroupsScope is how many of the latest dead jobs DeadLetters.Groups groups,
// so that its cost does not grow with the dead-letter table.
const DeadGroupsScope = 10_000

// Groups returns up to limit groups of the latest DeadGroupsScope dead
// jobs by kind and last error, largest first. A group's Filter selects all
// of its kind and error, older ones included.
func (h DeadLetters) Groups(ctx context.Context, db DB, limit int) ([]DeadGroup, error) {
	c := h.c
	var out []DeadGroup
	err := c.eachBounded(ctx, db, sqlDeadGroups.For(c.schema), []any{limit, DeadGroupsScope}, func(scan func(...any) error) error {
		var g DeadGroup
		if err := scan(&g.Kind, &g.Error, &g.Jobs, &g.First, &g.Last, &g.Queue, &g.Queues); err != nil {
			return err
		}
		out = append(out, g)
		return nil
	})
	return out, err
}

// ErrJobNotFound is returned for a job id that is neither live nor dead.
var ErrJobNotFound = errors.New("docket: job not found")

// Get returns one dead job, with its payload only when withPayload
// is set, or ErrJobNotFound.
func (h DeadLetters) Get(ctx context.Context, db DB, id int64, withPayload bool) (DeadJob, error) {
	c := h.c
	got, err := DeadLetters{c}.List(ctx, db, DeadFilter{IDs: []int64{id}, Limit: 1, WithPayload: withPayload})
	if err != nil {
		return DeadJob{}, err
	}
	if len(got) == 0 {
		return DeadJob{}, fmt.Errorf("%w: no dead job %d", ErrJobNotFound, id)
	}
	return got[0], nil
}

// ReplayOptions paces a replay.
type ReplayOptions struct {
	// Rate is how many jobs per second go back into the queue. Zero means
	// 100; -1 means as fast as the database takes them.
	Rate float64
	// Progress, when set, is called after every batch with the totals so far.
	Progress func(ReplayResult)
	// Sleep waits; nil means a timer that ends early when ctx ends. Tests
	// may replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// ReplayResult counts what a replay did.
type ReplayResult struct {
	// Replayed are the jobs back in docket_jobs, ready now, under their
	// old ids.
	Replayed []int64
	// Skipped are dead jobs left in the dead-letter table: their unique
	// key is held by a live job, or another replay took them first.
	Skipped []int64
}

// replayBatchPerSecond is how many replay transactions per second a paced
// replay runs at most: the rate is divided into this many batches, so the
// spacing between jobs stays even at high rates without a transaction per job.
const replayBatchPerSecond = 20

// Replay puts the dead jobs that match f back into the queue, in a
// trickle of o.Rate jobs per second, so that a replay never floods the queue.
// Each batch is one statement: it inserts the jobs into docket_jobs (same
// id, queue, kind, priority, tenant, keys, payload and meta; attempts start
// from zero; created_at and run_at are the replay's time) and deletes their
// dead rows only where the insert happened, so a job is never lost nor
// duplicated, whatever fails when. f.Limit applies (zero means 100; -1
// means all). When ctx ends the replay stops between batches and returns
// what it did with ctx's error.
func (h DeadLetters) Replay(ctx context.Context, db DB, f DeadFilter, o ReplayOptions) (ReplayResult, error) {
	c := h.c
	f.WithPayload = false
	dead, err := DeadLetters{c}.List(ctx, db, f)
	if err != nil {
		return ReplayResult{}, err
	}
	ids := make([]int64, len(dead))
	for i, d := range dead {
		ids[i] = d.ID
	}
	return c.replayIDs(ctx, db, ids, o)
}

func (c *Client) replayIDs(ctx context.Context, db DB, ids []int64, o ReplayOptions) (ReplayResult, error) {
	var res ReplayResult
	rate := o.Rate
	if rate == 0 {
		rate = 100
	}
	batch := len(ids)
	if rate > 0 {
		batch = max(1, int(rate/replayBatchPerSecond))
	}
	batch = min(batch, maxReplayBatch)
	sleep := o.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	// Each batch starts batch/rate after the one before: a batch that was
	// late is not made up for with a burst.
	var last time.Time
	for done := 0; done < len(ids); {
		n := min(batch, len(ids)-done)
		if rate > 0 && done > 0 {
			due := last.Add(time.Duration(float64(n) / rate * float64(time.Second)))
			if err := sleep(ctx, time.Until(due)); err != nil {
				return res, err
			}
		}
		last = time.Now()
		chunk := ids[done : done+n]
		done += n
		got := map[int64]bool{}
		var queues []string
		seen := map[string]bool{}
		// A batch runs to its end once started: cancelling ctx stops the
		// replay between batches, never while a statement may already have
		// committed, so the result counts every job that was replayed.
		run := context.WithoutCancel(ctx)
		err := c.each(run, db, sqlReplay.For(c.schema), []any{chunk}, func(scan func(...any) error) error {
			var id int64
			var q string
			if err := scan(&id, &q); err != nil {
				return err
			}
			got[id] = true
			if !seen[q] {
				seen[q] = true
				queues = append(queues, q)
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		for _, id := range chunk {
			if got[id] {
				res.Replayed = append(res.Replayed, id)
			} else {
				res.Skipped = append(res.Skipped, id)
			}
		}
		if len(queues) > 0 {
			if err := c.notify(run, db, queues); err != nil {
				return res, err
			}
		}
		if o.Progress != nil {
			o.Progress(res)
		}
	}
	return res, nil
}

// maxReplayBatch bounds one replay statement.
const maxReplayBatch = 1000

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Purge deletes the dead jobs that died before cutoff, in batches of
// 10,000, and returns how many it deleted.
func (h DeadLetters) Purge(ctx context.Context, db DB, cutoff time.Time) (int64, error) {
	c := h.c
	var total int64
	for {
		var n int64
		if err := db.QueryRow(ctx, sqlPurgeDead.For(c.schema), cutoff, 10_000).Scan(&n); err != nil {
			return total, c.wrapErr(err)
		}
		total += n
		if n < 10_000 {
			break
		}
	}
	_, err := db.Exec(ctx, sqlPruneRemoved.For(c.schema))
	return total, c.wrapErr(err)
}

// ErrJobRunning is returned when a command cannot act on a running job.
var ErrJobRunning = errors.New("docket: job is running")

// Cancel cancels a job that has not finished, with the given note as its
// error, and reports whether the job was running.
//
// A scheduled, ready or waiting job moves to the dead-letter table at once
// with reason "cancelled" (running false). A running job is marked for
// cancellation and its worker told with a NOTIFY (running true): the
// worker cancels the handler's context, with cause handlers.ErrCancelled,
// within about a second (at the next heartbeat when the notification is
// lost), and the job ends in the dead-letter table with reason "cancelled"
// whatever the handler returns. From the moment Cancel commits, the run
// cannot complete, retry, snooze or be released: a handler that ignores
// its context still ends cancelled, and a transactional handler's writes
// are rolled back. If the worker is gone, the reaper dead-letters the job
// as cancelled once its lease expires. A run that finished before Cancel
// committed keeps its outcome: the job is then no longer live, and Cancel
// returns nil for a dead job and ErrJobNotFound for a completed one.
//
// A job that is already dead is left as it is (no error); a second Cancel
// of a running job changes nothing; an unknown id is ErrJobNotFound. In a
// caller's transaction the worker hears of the request when it commits.
func (h Jobs) Cancel(ctx context.Context, db DB, id int64, note string) (running bool, err error) {
	c := h.c
	// A claim or a release that commits while the statement runs makes it
	// match nothing: the job is live in another state now; try again.
	for try := 1; ; try++ {
		var n int
		err = pgsql.Run(ctx, db, pgsql.IndexSettings, sqlCancelJob.For(c.schema),
			[]any{id, note, pgsql.NotifyChannel(c.schema), pgsql.CancelPayload}, func(rows pgx.Rows) error {
				for rows.Next() {
					var got int64
					if err := rows.Scan(&got, &running); err != nil {
						return err
					}
					n++
				}
				return rows.Err()
			})
		if err != nil || n == 1 {
			return running, c.wrapErr(err)
		}
		switch state, err := c.jobState(ctx, db, id); {
		case err != nil:
			return false, err
		case state == StateDead:
			return false, nil
		case try == 3 || pgsql.IsTx(db):
			return false, fmt.Errorf("docket: job %d is %s: cancel raced with its claim; try again", id, state)
		}
	}
}

// Delete deletes a scheduled, ready, waiting or dead job for good: it
// never runs and leaves no dead letter. A running job cannot be deleted
// under its worker (ErrJobRunning); an unknown id is ErrJobNotFound.
//
// A live workflow job that is deleted never completes, so its dependents
// take it as a failure, as if it had been cancelled: those that do not run
// anyway are cancelled with their descendants (error "parent job N
// deleted"), the RunAnyway ones run. The deleted job itself leaves no
// trace in the workflow's counts; cancel it (Jobs.Cancel) instead to keep
// one. See docs/workflows.md.
func (h Jobs) Delete(ctx context.Context, db DB, id int64) error {
	c := h.c
	got, err := c.ids(ctx, db, sqlDeleteJob.For(c.schema), id)
	if err != nil || len(got) > 0 {
		return err
	}
	switch state, err := c.jobState(ctx, db, id); {
	case err != nil:
		return err
	case state == StateRunning:
		return fmt.Errorf("%w: job %d: wait for it to finish or fail", ErrJobRunning, id)
	default:
		return fmt.Errorf("docket: job %d is %s: delete raced with its claim; try again", id, state)
	}
}

// Retry runs a job again now: a dead job is replayed (as DeadLetters.Replay
// does), a scheduled one (waiting for its backoff or run_at) becomes due now.
// A ready or waiting job is left as it is (a waiting one runs when its
// serial key's line or its workflow parents let it); a running one is
// ErrJobRunning; an unknown id is ErrJobNotFound.
func (h Jobs) Retry(ctx context.Context, db DB, id int64) error {
	c := h.c
	var queue string
	err := db.QueryRow(ctx, sqlRetryNow.For(c.schema), id).Scan(&queue)
	if err == nil {
		return c.notify(ctx, db, []string{queue})
	}
	if !isNoRows(err) {
		return c.wrapErr(err)
	}
	state, err := c.jobState(ctx, db, id)
	if err != nil {
		return err
	}
	switch state {
	case StateDead:
		res, err := c.replayIDs(ctx, db, []int64{id}, ReplayOptions{Rate: -1})
		if err != nil {
			return err
		}
		if len(res.Replayed) == 0 {
			return fmt.Errorf("docket: dead job %d not replayed: its unique key is held by a live job", id)
		}
		return nil
	case StateRunning:
		return fmt.Errorf("%w: job %d", ErrJobRunning, id)
	}
	return nil // ready or waiting: nothing to hurry
}

func (c *Client) jobState(ctx context.Context, db DB, id int64) (string, error) {
	var state string
	err := db.QueryRow(ctx, sqlJobState.For(c.schema), id).Scan(&state)
	if isNoRows(err) {
		return "", fmt.Errorf("%w: no live or dead job %d", ErrJobNotFound, id)
	}
	return state, c.wrapErr(err)
}

func timeOrNil(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// Dead-letter reasons recorded in docket_jobs_dead.reason.
const (
	ReasonExhausted    = core.ReasonExhausted    // every attempt failed
	ReasonCancelled    = core.ReasonCancelled    // the handler cancelled the job
	ReasonUndecodable  = core.ReasonUndecodable  // the payload does not decode into the args type
	ReasonLeaseExpired = core.ReasonLeaseExpired // the last attempt's worker stopped heartbeating
	ReasonTimedOut     = core.ReasonTimedOut     // a workflow step's signal did not come before its WaitTimeout
	ReasonChildFailed  = core.ReasonChildFailed  // the child workflow the job waited for failed or was cancelled
)

// deadArgs are the arguments of sqlDeadCount and sqlDiscardDead for f,
// with limit as $6.
func deadArgs(f DeadFilter, limit int64) []any {
	var ids any
	if f.IDs != nil {
		ids = f.IDs
	}
	return []any{f.Kind, f.Queue, f.ErrorLike, timeOrNil(f.Since), ids, limit, timeOrNil(f.Before)}
}

// Count returns how many dead jobs match f (f.Limit and f.WithPayload are
// ignored): the preview of a purge or of a group's discard or replay.
func (h DeadLetters) Count(ctx context.Context, db DB, f DeadFilter) (int64, error) {
	c := h.c
	var n int64
	err := db.QueryRow(ctx, sqlDeadCount.For(c.schema), deadArgs(f, math.MaxInt64)...).Scan(&n)
	return n, c.wrapErr(err)
}

// Discard deletes the dead jobs that match f for good, oldest death first,
// in batches of BulkBatch (one statement each), at most f.Limit of them
// (zero means 100; -1 means all), and returns how many it deleted. They
// are counted as removed, and the removal log is pruned, as Purge does. When ctx ends it stops
// between batches and returns what it did with ctx's error.
func (h DeadLetters) Discard(ctx context.Context, db DB, f DeadFilter) (int64, error) {
	c := h.c
	left := int64(f.Limit)
	switch {
	case f.Limit == 0:
		left = 100
	case f.Limit < 0:
		left = math.MaxInt64
	}
	var total int64
	for left > 0 {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		var n int64
		batch := min(left, BulkBatch)
		if err := db.QueryRow(ctx, sqlDiscardDead.For(c.schema), deadArgs(f, batch)...).Scan(&n); err != nil {
			return total, c.wrapErr(err)
		}
		total, left = total+n, left-n
		if n < batch {
			break
		}
	}
	// Keep the removal log as short as Purge keeps it.
	_, err := db.Exec(ctx, sqlPruneRemoved.For(c.schema))
	return total, c.wrapErr(err)
}
