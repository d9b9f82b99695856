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
// ever waited for a claim: slots / mean handler time, the time the handlers
// measured around their sleeps (a sleep overshoots what it asked for, by
// more on a busy machine, and a slot is busy for what it really took).
func (r *Runner) handlers(ctx context.Context, db *pgxpool.Pool) (Result, error) {
	e, err := r.setup(ctx, db, ScenarioHandlers)
	defer e.drop()
	if err != nil {
		return Result{}, err
	}
	n, slots := r.cfg.Jobs, r.handlerSlots
	lo, hi := r.cfg.HandlerMin, r.cfg.HandlerMax
	randomPriority := func() docket.Item { return docket.Item{Args: noop{}, Opts: docket.Opts{Priority: rand.IntN(11)}} }
	if err := e.backlog(ctx, n, ScenarioHandlers, randomPriority); err != nil {
		return Result{}, err
	}

	var ran, slept, first, last atomic.Int64
	prog := r.progress("handlers", int64(n))
	handler := func(ctx context.Context, j *handlers.Job[noop]) error {
		start := time.Now()
		first.CompareAndSwap(0, start.UnixNano())
		time.Sleep(lo + rand.N(hi-lo+1))
		end := time.Now()
		slept.Add(int64(end.Sub(start)))
		for l := last.Load(); end.UnixNano() > l && !last.CompareAndSwap(l, end.UnixNano()); l = last.Load() {
		}
		ran.Add(1)
		prog.add(1)
		return nil
	}
	var claims, claimed atomic.Int64
	e.onClaim = func(_ time.Duration, jobs int) {
		claims.Add(1)
		claimed.Add(int64(jobs))
	}
	began := time.Now()
	elapsed, timed, err := e.timedDrain(ctx, db, ScenarioHandlers, prog, n, ran.Load, func() (func(), error) {
		return e.workerWith(ctx, handler, slots)
	})
	if err != nil {
		return Result{}, err
	}
	mean := time.Duration(slept.Load() / ran.Load())
	between := time.Duration(last.Load() - first.Load())
	// Where the slots' time went: the start, the claims, the end.
	r.logf("handlers: first handler %s after the start, last one ended %s before the end; slots busy %.3f of the time between; %d claims of %.1f jobs",
		time.Duration(first.Load()-began.UnixNano()), began.Add(elapsed).Sub(time.Unix(0, last.Load())),
		float64(slept.Load())/float64(slots)/float64(between), claims.Load(), float64(claimed.Load())/float64(max(1, claims.Load())))
	bound := float64(slots) / mean.Seconds()
	rate := float64(n) / elapsed.Seconds()
	return Result{Jobs: n, Workers: slots, Seconds: elapsed.Seconds(), JobsPerSec: rate,
		HandlerMin: lo, HandlerMax: hi, HandlerMean: mean, Bound: bound, CPU: timed.cpu(n)}, nil
}
