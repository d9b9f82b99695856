package queue

import (
	"context"

	"github.com/docketq/docket/internal/engine/pgsql"
)

// Serial keys are lines in the database (migration 009): a serial job joins
// its key's line when it first becomes ready, the head alone is ready or
// running, and the key passes to the next in line, in the same
// transaction, when the head leaves the table. Triggers do all of that on
// every path a job takes, so the claim and the outcomes here know nothing
// of serial keys. What is left for workers is the sweep.

// sqlSweepSerial moves on lines that have no holder (see
// docket_serial_sweep) and returns the queues of the jobs it made ready.
var sqlSweepSerial = pgsql.SQL(`SELECT q FROM {{schema}}.docket_serial_sweep($1) AS q`)

// SweepSerial makes the head of up to limit serial-key lines ready where the
// line has no holder: lines left waiting by an enqueue outside READ
// COMMITTED, or by a race the triggers leave to it (see migration 009). It
// returns the queues of the jobs it made ready, one entry per job. db must
// run it at READ COMMITTED, where each of its statements sees every holder
// committed before it; cheap when no line needs it.
func (q *Queue) SweepSerial(ctx context.Context, db DB, limit int) ([]string, error) {
	return column[string](ctx, q, db, sqlSweepSerial.For(q.schema), limit)
}
