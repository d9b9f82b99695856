package worker

import (
	"context"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/jackc/pgx/v5"
)

// OutcomeHook runs inside the transaction that writes the final outcome of
// jobs of the kind it is set for: done holds the jobs whose completion was
// written, dead those moved to the dead-letter table (cancelled, undecodable
// or out of attempts). Only jobs whose outcome this worker actually wrote
// are passed: a job lost to another worker is in neither slice. Writes the
// hook makes through tx commit with those outcomes, or not at all: if the
// hook returns an error the transaction is rolled back and retried like a
// failed outcome write (until the jobs' leases would expire; then they run
// again). A hook must be safe for concurrent use and must not commit or roll
// back tx. Schedules use it to insert a schedule's next run. Outcomes of
// kinds with a hook are written in a transaction of their own per flush
// (one round trip more than the plain path); kinds without one keep the
// plain path.
//
// Jobs that the reaper dead-letters (lease expired on their last attempt)
// do not pass through a hook: no worker writes their outcome.
type OutcomeHook func(ctx context.Context, tx pgx.Tx, done, dead []*core.Job) error

// hooked reports whether o is a final outcome of a kind with a hook.
func hooked(o *outcome) bool {
	if o.task.kind == nil || o.task.kind.hook == nil {
		return false
	}
	return o.what == oComplete || o.what == oDead || o.what == oFail || o.what == oCancelled
}
