package handlers

import (
	"context"
	"errors"
	"fmt"

	docket "github.com/docketq/docket/internal/engine/core"
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
