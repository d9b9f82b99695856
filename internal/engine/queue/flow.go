package queue

import (
	"context"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/jackc/pgx/v5"
)

// The flow-control settings every worker re-reads each poll interval: the
// paused queues (docket_queues) and the scope of each limit
// (docket_limits); operators write them through package admin.
var (
	sqlPausedQueues = pgsql.SQL(`SELECT name FROM {{schema}}.docket_queues WHERE paused ORDER BY name`)

	sqlLimitScopes = pgsql.SQL(`SELECT name, COALESCE(queue, ''), COALESCE(kind, ''), per_tenant
FROM {{schema}}.docket_limits ORDER BY name`)
)

// PausedQueues returns the queues that are paused, by name.
func (q *Queue) PausedQueues(ctx context.Context, db DB) ([]string, error) {
	out, err := pgsql.Column[string](ctx, db, sqlPausedQueues.For(q.schema))
	return out, q.wrapErr(err)
}

// LimitScope is what a limit governs: jobs of a kind, else of a queue, else
// every job; per tenant or in all.
type LimitScope struct {
	Name, Queue, Kind string
	PerTenant         bool
}

// LimitScopes returns every limit's scope, by name.
func (q *Queue) LimitScopes(ctx context.Context, db DB) ([]LimitScope, error) {
	rows, err := db.Query(ctx, sqlLimitScopes.For(q.schema))
	if err != nil {
		return nil, q.wrapErr(err)
	}
	var out []LimitScope
	var l LimitScope
	_, err = pgx.ForEachRow(rows, []any{&l.Name, &l.Queue, &l.Kind, &l.PerTenant}, func() error {
		out = append(out, l)
		return nil
	})
	return out, q.wrapErr(err)
}
