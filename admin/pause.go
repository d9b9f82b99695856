package admin

import (
	"context"
	"errors"
	"fmt"

	"github.com/docketq/docket/internal/engine/pgsql"
)

// The statements of pausing and resuming queues; {{schema}} is the quoted
// schema.
var (
	sqlPausedQueues = pgsql.SQL(`SELECT name FROM {{schema}}.docket_queues WHERE paused ORDER BY name`)

	// sqlQueueKnown is true when queue $1 is in use: it has a row in
	// docket_queues (it was paused or resumed before), a live worker serves
	// it, or it holds jobs, live, dead or in history. The checks run in
	// that order and stop at the first hit; only a name that matches none
	// reads the whole dead-letter table and history, which have no index by
	// queue.
	sqlQueueKnown = `EXISTS (SELECT 1 FROM {{schema}}.docket_queues WHERE name = $1)
	OR EXISTS (SELECT 1 FROM {{schema}}.docket_workers WHERE expires_at > now() AND $1 = ANY (queues))
	OR EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE state = 'ready' AND queue = $1)
	OR EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE queue = $1)
	OR EXISTS (SELECT 1 FROM {{schema}}.docket_jobs_dead WHERE queue = $1)
	OR EXISTS (SELECT 1 FROM {{schema}}.docket_jobs_done WHERE queue = $1)`

	// sqlPauseQueue pauses queue $1 if it is known or $2 (create) is true,
	// keeping the time of an earlier pause; it returns a row only then.
	sqlPauseQueue = pgsql.SQL(`INSERT INTO {{schema}}.docket_queues AS q (name, paused, paused_at, updated_at)
SELECT $1, true, now(), now()
WHERE $2 OR ` + sqlQueueKnown + `
ON CONFLICT (name) DO UPDATE SET paused = true, updated_at = now(),
	paused_at = CASE WHEN q.paused THEN q.paused_at ELSE now() END
RETURNING name`)

	// sqlResumeQueue resumes queue $1 where it has a row and never writes
	// one; it says whether the queue is known.
	sqlResumeQueue = pgsql.SQL(`WITH resumed AS (
	UPDATE {{schema}}.docket_queues SET paused = false, paused_at = NULL, updated_at = now()
	WHERE name = $1
	RETURNING name
)
SELECT EXISTS (SELECT 1 FROM resumed) OR ` + sqlQueueKnown)
)

// ErrUnknownQueue is returned by Queues.Pause and Queues.Resume for a queue
// that is not in use: no job (live, dead or in history) is in it, no live
// worker serves it and it was never paused. Usually the name is mistyped.
// Nothing is written.
var ErrUnknownQueue = errors.New("docket: unknown queue")

// PauseOptions are the options of Queues.Pause. The zero value refuses a
// queue that is not in use.
type PauseOptions struct {
	// Create pauses a queue that is not in use yet (see ErrUnknownQueue),
	// for example before the first deploy that sends jobs to it. It then
	// shows up in Status and Queues.Paused like any paused queue.
	Create bool
}

// Pause pauses a queue: no worker process claims from it once it has
// re-read the paused set (within one poll interval). Jobs keep arriving,
// and jobs already claimed run to the end. Pausing a paused queue is a
// no-op.
//
// A queue that is not in use (no job live, dead or in history, no live
// worker serving it, never paused before) is refused with ErrUnknownQueue
// unless opts holds PauseOptions{Create: true}, so that a mistyped name
// does not pause a queue nobody uses. opts is optional; when several are
// given, the last one counts. An invalid name is refused with
// ErrInvalidName. Neither refusal writes anything.
func (h Queues) Pause(ctx context.Context, db DB, queue string, opts ...PauseOptions) error {
	c := h.c
	var o PauseOptions
	if len(opts) > 0 {
		o = opts[len(opts)-1]
	}
	if err := checkName("queue", queue, false); err != nil {
		return err
	}
	var name string
	err := db.QueryRow(ctx, sqlPauseQueue.For(c.schema), queue, o.Create).Scan(&name)
	if isNoRows(err) {
		return unknownQueue(queue)
	}
	return c.wrapErr(err)
}

// Resume lets workers claim from a paused queue again. Resuming a
// queue in use that is not paused is a no-op; a queue that is not in use
// (see Queues.Pause) is refused with ErrUnknownQueue. It never creates a
// queue.
func (h Queues) Resume(ctx context.Context, db DB, queue string) error {
	c := h.c
	if err := checkName("queue", queue, false); err != nil {
		return err
	}
	var known bool
	if err := db.QueryRow(ctx, sqlResumeQueue.For(c.schema), queue).Scan(&known); err != nil {
		return c.wrapErr(err)
	}
	if !known {
		return unknownQueue(queue)
	}
	return nil
}

func unknownQueue(queue string) error {
	return fmt.Errorf("%w %q: no job (live, dead or in history) is in it, no live worker serves it and it was never paused", ErrUnknownQueue, queue)
}

// Paused returns the names of the paused queues, sorted.
func (h Queues) Paused(ctx context.Context, db DB) ([]string, error) {
	c := h.c
	var out []string
	err := c.each(ctx, db, sqlPausedQueues.For(c.schema), nil, func(scan func(...any) error) error {
		var q string
		if err := scan(&q); err != nil {
			return err
		}
		out = append(out, q)
		return nil
	})
	return out, err
}
