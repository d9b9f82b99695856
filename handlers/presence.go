package handlers

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/docketq/docket/internal/queue"
)

// A worker process makes itself known in docket_workers — which kinds and
// queues it serves, and its recent claim latency — at start and on every
// heartbeat interval, and removes its row on Stop. `docket status` reads
// the table to find kinds no live process serves and to show claim p50/p95/
// p99, which only the processes themselves can measure. A row counts as live
// for registerTTL heartbeat intervals.
const registerTTL = 3

// present keeps this process's row fresh, every heartbeat interval, apart
// from the heartbeat itself so that a slow registration never delays a
// lease's renewal.
func (w *Worker) present(stop <-chan struct{}) {
	defer w.wg.Done()
	t := time.NewTicker(w.hbInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			w.register()
		}
	}
}

// register upserts this process's row; failures are logged once per streak.
func (w *Worker) register() {
	ctx, cancel := context.WithTimeout(w.bgCtx, max(w.hbInterval, time.Second))
	defer cancel()
	samples := w.claimLat.recent(nil)
	queues := make([]string, 0, len(w.byQueue))
	for q := range w.byQueue {
		queues = append(queues, q)
	}
	slices.Sort(queues)
	err := w.q.RegisterWorker(ctx, w.db, queue.WorkerInfo{
		ID: w.id, Host: w.host, PID: w.pid, Kinds: w.names, Queues: queues,
		TTL:      registerTTL*w.hbInterval + time.Second,
		Claims:   w.claimLat.count(),
		ClaimP50: percentile(samples, 0.5), ClaimP95: percentile(samples, 0.95), ClaimP99: percentile(samples, 0.99),
	})
	if err != nil {
		if w.bgCtx.Err() == nil {
			w.registerErrs.fail(w.log, "registering the worker in docket_workers failed", err)
		}
		return
	}
	w.registerErrs.ok(w.log, "registering the worker in docket_workers recovered")
}

// deregister removes this process's row at the end of Stop.
func (w *Worker) deregister(ctx context.Context) {
	if err := w.q.DeregisterWorker(ctx, w.db, w.id); err != nil {
		w.log.Warn("removing the worker from docket_workers failed; it expires by itself", slog.String("error", err.Error()))
	}
}

// refreshPaused re-reads the paused queues and wakes the pools of queues
// that were resumed.
func (w *Worker) refreshPaused() {
	ctx, cancel := context.WithTimeout(w.bgCtx, max(w.poll, time.Second))
	defer cancel()
	names, err := w.ob.PausedQueues(ctx, w.db)
	if err != nil {
		if w.bgCtx.Err() == nil {
			w.pausedErrs.fail(w.log, "reading paused queues failed; keeping the last known set", err)
		}
		return
	}
	w.pausedErrs.ok(w.log, "reading paused queues recovered")
	now := make(map[string]bool, len(names))
	for _, q := range names {
		now[q] = true
	}
	old := w.paused.Swap(&now)
	var resumed []string
	for q := range *old {
		if !now[q] {
			resumed = append(resumed, q)
		}
	}
	for _, q := range names {
		if !(*old)[q] {
			w.log.Info("queue paused: not claiming from it", slog.String("queue", q))
		}
	}
	for _, q := range resumed {
		w.log.Info("queue resumed", slog.String("queue", q))
	}
	w.wakeQueues(resumed)
}

// activeQueues returns the pool's queues that are not paused, in order.
func (p *pool) activeQueues() []string {
	paused := *p.w.paused.Load()
	if len(paused) == 0 {
		return p.cfg.Queues
	}
	out := make([]string, 0, len(p.cfg.Queues))
	for _, q := range p.cfg.Queues {
		if !paused[q] {
			out = append(out, q)
		}
	}
	return out
}
