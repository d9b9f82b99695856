package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Heartbeat extends the leases of the worker's runs by lease and returns the
// ids of the jobs whose run it still holds. A job missing from the result
// was lost: reaped after its lease expired and maybe claimed again, by
// another worker or by this one under a new claim. That run's handler
// should be cancelled and its outcome dropped.
func (c *Client) Heartbeat(ctx context.Context, db Pgx, worker uuid.UUID, runs []Run, lease time.Duration) ([]int64, error) {
	if len(runs) == 0 {
		return nil, nil
	}
	ids, claims := runClaims(runs)
	return c.ids(db, ctx, c.q.heartbeat, ids, worker, lease.Milliseconds(), claims)
}

// ids runs a statement that returns one id column.
func (c *Client) ids(db Pgx, ctx context.Context, sql string, args ...any) ([]int64, error) {
	return column[int64](ctx, c, db, sql, args...)
}

// column runs a statement that returns one column with sqlIndexSettings
// (see run) and collects the column.
func column[T any](ctx context.Context, c *Client, db Pgx, sql string, args ...any) ([]T, error) {
	var out []T
	err := c.run(ctx, db, sqlIndexSettings, sql, args, func(rows pgx.Rows) error {
		var err error
		out, err = pgx.CollectRows(rows, pgx.RowTo[T])
		return err
	})
	return out, err
}
