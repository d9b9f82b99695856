package handlers

import (
	"context"
	"log/slog"
	"time"
)

// heartbeat extends the leases of all of this process's in-flight jobs with
// one statement per interval. Jobs missing from the result were reaped
// (this process was too slow or cut off) and may run elsewhere: their
// handlers are cancelled and their outcomes dropped. If the database cannot
// be reached, jobs whose lease has run out by the local clock are given up
// the same way, since another process may have reaped them.
func (w *Worker) heartbeat(stop <-chan struct{}) {
	defer w.wg.Done()
	t := time.NewTicker(w.hbInterval)
	defer t.Stop()
	var (
		execs  []*task
		ids    []int64
		owned  = map[int64]struct{}{}
		failed bool
	)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		w.register()
		execs = w.inflight.snapshot(execs[:0])
		if len(execs) == 0 {
			continue
		}
		ids = ids[:0]
		for _, e := range execs {
			ids = append(ids, e.job.ID)
		}
		start := time.Now()
		ctx, cancel := context.WithTimeout(w.bgCtx, w.hbInterval)
		got, err := w.ob.Heartbeat(ctx, w.db, w.id, ids, w.lease)
		cancel()
		if err != nil {
			if !failed {
				w.log.Warn("heartbeat failed; will retry", slog.Int("jobs", len(execs)), slog.String("error", err.Error()))
			}
			failed = true
			now := time.Now()
			for _, e := range execs {
				if e.leaseExpired(now) {
					w.lose(e, "lease expired while the database could not be reached")
				}
			}
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
			// lost. A finished job is no longer in the in-flight set.
			if w.inflight.has(e) {
				w.lose(e, "lease lost: the job was reaped")
			}
		}
		clear(execs)
	}
}

// lose marks a job as lost: a running handler is cancelled and whatever it
// returns is dropped; a buffered outcome is skipped. Only runs that were
// still running are logged.
func (w *Worker) lose(e *task, why string) {
	if e.state.CompareAndSwap(stRunning, stLost) {
		e.cancel(ErrLeaseLost)
		w.met.leaseLost()
		w.log.Warn("job lost; cancelling its handler and dropping its outcome",
			append(JobAttrs(e.job), slog.String("why", why))...)
		w.inflight.remove(e)
		return
	}
	if e.state.CompareAndSwap(stFinishing, stLost) {
		w.inflight.remove(e)
	}
}
