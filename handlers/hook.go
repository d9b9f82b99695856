package handlers

import (
	"context"
	"errors"
	"fmt"
	"time"

	docket "github.com/docketq/docket/internal/core"
	"github.com/docketq/docket/internal/queue"
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
// back tx. Package schedule uses it to insert a schedule's next run.
//
// Jobs that the reaper dead-letters (lease expired on their last attempt)
// do not pass through a hook: no worker writes their outcome.
type OutcomeHook func(ctx context.Context, tx pgx.Tx, done, dead []*docket.Job) error

// ErrHookSet is returned by SetOutcomeHook for a kind that has a hook already.
var ErrHookSet = errors.New("docket: outcome hook already set")

// SetOutcomeHook sets the outcome hook of a registered kind. Outcomes of
// kinds with a hook are written in a transaction of their own per flush
// (one round trip more than the plain path); kinds without one keep the
// plain path. Set hooks before passing the registry to NewWorker, which
// takes a snapshot. It returns an error for an unregistered kind, a nil
// hook, or a kind whose hook is set (wrapping ErrHookSet).
func SetOutcomeHook(r *Registry, kind string, h OutcomeHook) error {
	if h == nil {
		return fmt.Errorf("%w: nil outcome hook for %s", ErrInvalidKind, kind)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	k, ok := r.kinds[kind]
	if !ok {
		return fmt.Errorf("%w: outcome hook for unregistered kind %s", ErrInvalidKind, kind)
	}
	if k.hook != nil {
		return fmt.Errorf("%w: %s", ErrHookSet, kind)
	}
	// A copy, so that a worker created earlier keeps its snapshot.
	nk := *k
	nk.hook = h
	r.kinds[kind] = &nk
	return nil
}

// hooked reports whether o is a final outcome of a kind with a hook.
func hooked(o *outcome) bool {
	if o.ex.kind == nil || o.ex.kind.hook == nil {
		return false
	}
	return o.what == oComplete || o.what == oDead || o.what == oFail
}

// writeHooked writes the outcomes of hooked kinds in one transaction
// together with what their hooks write, retrying like every outcome write.
func (c *completer) writeHooked(stop context.Context, batch []outcome) {
	w := c.w
	execs := make([]*task, len(batch))
	var completeRuns []queue.Run
	var fails []queue.Failure
	var failed []*task
	var deads []queue.Dead
	for i := range batch {
		o := &batch[i]
		execs[i] = o.ex
		run := queue.RunOf(o.ex.job)
		switch o.what {
		case oComplete:
			completeRuns = append(completeRuns, run)
		case oFail:
			fails = append(fails, queue.Failure{Run: run, Error: o.err, Delay: o.delay})
			failed = append(failed, o.ex)
		case oDead:
			deads = append(deads, queue.Dead{Run: run, Reason: o.reason, Error: o.err})
		}
	}
	byID := make(map[int64]*task, len(execs))
	for _, e := range execs {
		byID[e.job.ID] = e
	}
	var due time.Duration = -1
	readyNow := map[int64]bool{}
	for _, f := range fails {
		if f.Delay <= 0 {
			readyNow[f.ID] = true
		} else if due < 0 || f.Delay < due {
			due = f.Delay
		}
	}
	c.write(stop, "hooked outcomes", execs, func(ctx context.Context) ([]int64, error) {
		var written []int64
		var retried []int64
		err := pgx.BeginFunc(ctx, w.db, func(tx pgx.Tx) error {
			done, err := w.q.Complete(ctx, tx, w.id, completeRuns, w.finishTime())
			if err != nil {
				return err
			}
			res, err := w.q.Fail(ctx, tx, w.id, fails)
			if err != nil {
				return err
			}
			dead, err := w.q.DeadLetter(ctx, tx, w.id, deads)
			if err != nil {
				return err
			}
			dead = append(dead, res.Dead...)
			// One hook call per kind, with that kind's jobs.
			type pair struct{ done, dead []*docket.Job }
			perKind := map[*kindRun]*pair{}
			var order []*kindRun
			get := func(id int64) *pair {
				e := byID[id]
				p := perKind[e.kind]
				if p == nil {
					p = &pair{}
					perKind[e.kind] = p
					order = append(order, e.kind)
				}
				return p
			}
			for _, id := range done {
				p := get(id)
				p.done = append(p.done, byID[id].job)
			}
			for _, id := range dead {
				p := get(id)
				p.dead = append(p.dead, byID[id].job)
			}
			for _, k := range order {
				p := perKind[k]
				if err := k.hook(ctx, tx, p.done, p.dead); err != nil {
					return fmt.Errorf("outcome hook of kind %s: %w", k.name, err)
				}
			}
			written = append(append(done, dead...), res.Retried...)
			retried = res.Retried
			if len(res.Dead) > 0 {
				c.logDead(failed, res.Dead)
			}
			return nil
		})
		if err != nil {
			// A missing history partition aborted the transaction: create
			// it through the pool before the retry.
			_, _ = w.q.RepairHistory(ctx, w.db, err, w.finishTime())
			return nil, err
		}
		for _, id := range retried {
			if readyNow[id] {
				// Ready at once: nobody announces it, so wake its pool.
				byID[id].pool.signal()
			}
		}
		return written, nil
	})
	if due >= 0 {
		w.noteDue(due)
	}
}
