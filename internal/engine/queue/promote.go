package queue

import (
	"context"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

var (
	sqlPromote = pgsql.SQL(`WITH p AS (
	SELECT id FROM {{schema}}.docket_jobs
	WHERE state = 'scheduled' AND run_at <= now()
	ORDER BY run_at
	LIMIT $1
	FOR NO KEY UPDATE SKIP LOCKED
)
UPDATE {{schema}}.docket_jobs SET state = 'ready', ready_seq = ` + pgsql.NextReadySeq + `
WHERE id = ANY(ARRAY(SELECT id FROM p))
RETURNING queue`)

	sqlNextScheduled = pgsql.SQL(`SELECT min(run_at) FROM {{schema}}.docket_jobs WHERE state = 'scheduled'`)
)

// Promote makes up to limit scheduled jobs whose run_at has come ready, and
// returns the queues they are in (one entry per job).
func (q *Queue) Promote(ctx context.Context, db DB, limit int) ([]string, error) {
	return column[string](ctx, q, db, sqlPromote.For(q.schema), limit)
}

// NextScheduled returns the earliest run_at of the scheduled jobs, and
// false when there are none.
func (q *Queue) NextScheduled(ctx context.Context, db DB) (time.Time, bool, error) {
	var t *time.Time
	err := q.run(ctx, db, pgsql.IndexSettings, sqlNextScheduled.For(q.schema), nil, func(rows pgx.Rows) error {
		return pgsql.ScanOne(rows, &t)
	})
	if err != nil {
		return time.Time{}, false, err
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	return *t, true, nil
}
