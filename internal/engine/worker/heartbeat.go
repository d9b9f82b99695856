package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/queue"
)

// heartbeat extends the leases of all of this process's in-flight runs with
// one statement per interval, each matched by its claim. Runs missing from
// the result were reaped (this process was too slow or cut off) and may run
// again elsewhere or here: their handlers are cancelled and their outcomes
// dropped. When the database cannot be reached, the leaseWatch gives up the
// runs whose lease runs out.
type heartbeat struct {
	loop
	w *Worker
}

func (h *heartbeat) start(ctx context.Context) { h.run(ctx, h.beats) }

func (h *heartbeat) beats(bg context.Context) {
	w := h.w
	t := time.NewTicker(w.hbInterval)
	defer t.Stop()
	var (
		execs  []*task
		runs   []queue.Run
		owned  = map[int64]struct{}{}
		failed bool
	)
	for {
		select {
		case <-bg.Done():
			return
		case <-t.C:
		}
		execs = w.inflight.snapshot(execs[:0])
		if len(execs) == 0 {
			continue
		}
		runs = runs[:0]
		for _, e := range execs {
			runs = append(runs, queue.RunOf(e.job))
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(bg, w.hbInterval)
		got, err := w.q.Heartbeat(ctx, w.db, w.id, runs, w.lease)
		cancel()
		if err != nil {
			if !failed {
				w.log.Warn("heartbeat failed; will retry", slog.Int("jobs", len(execs)), slog.String("error", err.Error()))
			}
			failed = true
			clear(execs)
			continue
		}
		if failed {
			w.log.Info("heartbeat recovered", slog.Int("jobs", len(execs)))
			failed = false
		}
		clear(owned)
		for _, id := range got {
			owned[id] = struct{}{}
		}
		until := start.Add(w.lease).UnixNano()
		for _, e := range execs {
			if _, ok := owned[e.job.ID]; ok {
				e.leaseUntil.Store(until)
				continue
			}
			// Missing: finished meanwhile (its outcome was just written) or
			// lost. A finished run is no longer in the in-flight set.
			if w.inflight.has(e) {
				w.lose(e, "lease lost: the job was reaped")
			}
		}
		clear(execs)
	}
}

// leaseWatch is the lease's watchdog. A run whose lease is about to run
// out by the local clock (the heartbeats that should have renewed it failed
// or were slow: the database is unreachable, or this process was frozen)
// may be reaped by another process at any moment, so its handler is
// cancelled without waiting for the database. The local lease is counted
// from before the statement that set it, so it ends no later than the
// database's; the watchdog acts leaseMargin of a lease before that, which
// a healthy heartbeat, renewing every third of a lease, never lets come. A
// run whose handler has already returned keeps its pending outcome: if
// nobody reaped the job, that outcome still lands, fenced by its claim.
type leaseWatch struct {
	loop
	w *Worker
}

func (l *leaseWatch) start(ctx context.Context) { l.run(ctx, l.watch) }

func (l *leaseWatch) watch(ctx context.Context) {
	w := l.w
	margin := time.Duration(float64(w.lease) * leaseMargin)
	t := time.NewTicker(max(w.lease/20, 5*time.Millisecond))
	defer t.Stop()
	var execs []*task
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := time.Now().Add(margin)
		execs = w.inflight.snapshot(execs[:0])
		for _, e := range execs {
			if e.state.Load() == stRunning && e.leaseExpired(now) {
				w.lose(e, "lease about to run out before the database confirmed it")
			}
		}
		clear(execs)
	}
}

// leaseMargin is how long, as a fraction of the lease, before its local end
// the watchdog gives a run up.
const leaseMargin = 0.1

// lose marks a run as lost: a running handler is cancelled and whatever it
// returns is dropped; a buffered outcome is skipped. Only runs that were
// still running are logged.
func (w *Worker) lose(e *task, why string) {
	if e.state.CompareAndSwap(stRunning, stLost) {
		e.cancel(core.ErrLeaseLost)
		w.met.leaseLost()
		w.log.Warn("job lost; cancelling its handler and dropping its outcome",
			append(core.JobAttrs(e.job), slog.String("why", why))...)
		w.inflight.remove(e)
		return
	}
	if e.state.CompareAndSwap(stFinishing, stLost) {
		w.inflight.remove(e)
	}
}
