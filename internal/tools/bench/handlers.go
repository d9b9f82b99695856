package bench

import (
	"context"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/handlers"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Defaults of the handlers scenario: the "Postgres as a job queue"
// harness, 32 slots whose handlers sleep a random 2-5 ms.
const (
	DefaultHandlerSlots = 32
	DefaultHandlerMin   = 2 * time.Millisecond
	DefaultHandlerMax   = 5 * time.Millisecond
)

// handlers fills the queue with cfg.Jobs jobs of random priority 0..10
// (not timed), then times a worker whose handlers each sleep a random
// duration between cfg.HandlerMin and cfg.HandlerMax, from its start until
// the jobs table is empty. The bound is what the slots could do if no slot
// ever waited for a claim: slots / mean handler time.
func (r *Runner) handlers(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	e, err := r.setup(ctx, db, ScenarioHandlers)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	n, slots := r.cfg.Jobs, r.cfg.Workers
	lo, hi := r.cfg.HandlerMin, r.cfg.HandlerMax
	randomPriority := func() docket.Item { return docket.Item{Args: noop{}, Opts: docket.Opts{Priority: rand.IntN(11)}} }
	if err := e.backlog(ctx, n, ScenarioHandlers, randomPriority); err != nil {
		return Result{}, err
	}

	var ran atomic.Int64
	prog := r.progress("handlers", int64(n))
	handler := func(ctx context.Context, j *handlers.Job[noop]) error {
		time.Sleep(lo + rand.N(hi-lo+1))
		ran.Add(1)
		prog.add(1)
		return nil
	}
	elapsed, timed, err := e.timedDrain(ctx, db, ScenarioHandlers, prog, n, ran.Load, func() (func(), error) {
		return e.workerWith(ctx, handler, slots)
	})
	if err != nil {
		return Result{}, err
	}
	mean := (lo + hi) / 2
	bound := float64(slots) / mean.Seconds()
	rate := float64(n) / elapsed.Seconds()
	return Result{Jobs: n, Workers: slots, Seconds: elapsed.Seconds(), JobsPerSec: rate,
		HandlerMin: lo, HandlerMax: hi, Bound: bound, CPU: timed.cpu(n)}, nil
}
