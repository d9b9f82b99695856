package queue

import (
	"context"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/google/uuid"
)

var (
	sqlUpsertWorker = pgsql.SQL(`INSERT INTO {{schema}}.docket_workers
	(id, host, pid, kinds, queues, expires_at, claims, claim_p50_ms, claim_p95_ms, claim_p99_ms, slots, notify_error)
VALUES ($1, $2, $3, $4, $5, now() + $6::bigint * interval '1 millisecond', $7, $8, $9, $10, $11, $12)
ON CONFLICT (id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid, kinds = EXCLUDED.kinds,
	queues = EXCLUDED.queues, slots = EXCLUDED.slots, last_seen = now(), expires_at = EXCLUDED.expires_at,
	notify_error = EXCLUDED.notify_error,
	claims = EXCLUDED.claims, claim_p50_ms = EXCLUDED.claim_p50_ms,
	claim_p95_ms = EXCLUDED.claim_p95_ms, claim_p99_ms = EXCLUDED.claim_p99_ms`)

	// sqlPruneWorkers forgets processes that have not been seen for a day.
	sqlPruneWorkers = pgsql.SQL(`DELETE FROM {{schema}}.docket_workers WHERE expires_at < now() - interval '1 day'`)

	sqlDeleteWorker = pgsql.SQL(`DELETE FROM {{schema}}.docket_workers WHERE id = $1`)
)

// WorkerInfo is what a worker process publishes about itself in
// docket_workers, so that status can tell which kinds are served and how
// fast claims are.
type WorkerInfo struct {
	ID     uuid.UUID
	Host   string
	PID    int
	Kinds  []string
	Queues []string
	// Slots is how many handlers the process runs at once (its pools'
	// concurrency summed).
	Slots int
	// TTL is how long the row counts as live without another
	// RegisterWorker: a few heartbeat intervals.
	TTL time.Duration
	// Claims counts claim round trips so far; the percentiles are over
	// recent ones, zero when unknown.
	Claims                       int64
	ClaimP50, ClaimP95, ClaimP99 time.Duration
	// NotifyError says why the process's LISTEN connection does not hear
	// the NOTIFYs it sends itself; empty when it does, or is not known yet.
	NotifyError string
}

// RegisterWorker upserts the process's row in docket_workers. Worker
// processes call it at start and on every heartbeat interval.
func (q *Queue) RegisterWorker(ctx context.Context, db DB, w WorkerInfo) error {
	ms := func(d time.Duration) any {
		if d <= 0 {
			return nil
		}
		return float64(d) / float64(time.Millisecond)
	}
	_, err := db.Exec(ctx, sqlUpsertWorker.For(q.schema), w.ID, w.Host, w.PID, w.Kinds, w.Queues,
		w.TTL.Milliseconds(), w.Claims, ms(w.ClaimP50), ms(w.ClaimP95), ms(w.ClaimP99), w.Slots, pgsql.NullString(w.NotifyError))
	return q.wrapErr(err)
}

// DeregisterWorker deletes the process's row, on a clean stop, and forgets
// processes that have not been seen for a day.
func (q *Queue) DeregisterWorker(ctx context.Context, db DB, id uuid.UUID) error {
	if _, err := db.Exec(ctx, sqlDeleteWorker.For(q.schema), id); err != nil {
		return q.wrapErr(err)
	}
	_, err := db.Exec(ctx, sqlPruneWorkers.For(q.schema))
	return q.wrapErr(err)
}
