package outbox

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// ReapResult counts what one Reap did.
type ReapResult struct {
	Requeued int64 // expired leases put back to ready
	Dead     int64 // expired on their last attempt: dead-lettered
}

// leaseExpiredError is recorded on jobs whose worker stopped heartbeating.
const leaseExpiredError = "lease expired: the worker stopped heartbeating (crashed, frozen or cut off)"

// Reap returns up to limit running jobs whose lease expired to ready, or to
// the dead-letter table when that was their last attempt. It is cheap and
// idempotent, and safe to run from every process at once.
func (c *Client) Reap(ctx context.Context, db Pgx, limit int) (ReapResult, error) {
	var r ReapResult
	err := c.run(ctx, db, sqlIndexSettings, c.q.reap, []any{limit, leaseExpiredError}, func(rows pgx.Rows) error {
		return scanOne(rows, &r.Requeued, &r.Dead)
	})
	return r, err
}

// Promote makes up to limit scheduled jobs whose run_at has come ready, and
// returns the queues they are in (one entry per job).
func (c *Client) Promote(ctx context.Context, db Pgx, limit int) ([]string, error) {
	return column[string](ctx, c, db, c.q.promote, limit)
}

// NextScheduled returns the earliest run_at of the scheduled jobs, and
// false when there are none.
func (c *Client) NextScheduled(ctx context.Context, db Pgx) (time.Time, bool, error) {
	var t *time.Time
	err := c.run(ctx, db, sqlIndexSettings, c.q.nextScheduled, nil, func(rows pgx.Rows) error {
		return scanOne(rows, &t)
	})
	if err != nil {
		return time.Time{}, false, err
	}
	if t == nil {
		return time.Time{}, false, nil
	}
	return *t, true, nil
}
