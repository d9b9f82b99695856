package worker

import (
	"context"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/docketq/docket/internal/engine/queue"
)

// A worker process makes itself known in docket_workers — which kinds and
// queues it serves, and its recent claim latency — at start and on every
// heartbeat interval, and removes its row on Stop. `docket status` reads
// the table to find kinds no live process serves and to show claim p50/p95/
// p99, which only the processes themselves can measure. A row counts as live
// for registerTTL heartbeat intervals.
const registerTTL = 3

// presence keeps this process's row in docket_workers: registered before
// Start returns, refreshed every heartbeat interval apart from the
// heartbeat itself (a slow registration never delays a lease's renewal),
// removed by deregister at the end of Stop.
type presence struct {
	loop
	w      *Worker
	host   string
	pid    int
	queues []string // every queue of the worker's pools, sorted
	errs   errStreak
}

func newPresence(w *Worker) *presence {
	p := &presence{w: w, pid: os.Getpid()}
	p.host, _ = os.Hostname()
	for q := range w.byQueue {
		p.queues = append(p.queues, q)
	}
	slices.Sort(p.queues)
	return p
}

func (p *presence) start(ctx context.Context) {
	p.register(ctx)
	p.run(ctx, func(ctx context.Context) { every(ctx, p.w.hbInterval, p.register) })
}

// register upserts this process's row; failures are logged once per streak.
func (p *presence) register(bg context.Context) {
	w := p.w
	ctx, cancel := context.WithTimeout(bg, max(w.hbInterval, time.Second))
	defer cancel()
	samples := w.claimLat.recent(nil)
	info := queue.WorkerInfo{
		ID: w.id, Host: p.host, PID: p.pid, Kinds: w.names, Queues: p.queues, Slots: w.slots(),
		TTL:      registerTTL*w.hbInterval + time.Second,
		Claims:   w.claimLat.count(),
		ClaimP50: percentile(samples, 0.5), ClaimP95: percentile(samples, 0.95), ClaimP99: percentile(samples, 0.99),
	}
	if _, nerr := w.NotifyCheck(); nerr != nil {
		info.NotifyError = nerr.Error()
	}
	err := w.q.RegisterWorker(ctx, w.db, info)
	if err != nil {
		if bg.Err() == nil {
			p.errs.fail(w.log, "registering the worker in docket_workers failed", err)
		}
		return
	}
	p.errs.ok(w.log, "registering the worker in docket_workers recovered")
}

// deregister removes this process's row at the end of Stop, once stopped.
func (p *presence) deregister(ctx context.Context) {
	w := p.w
	if err := w.q.DeregisterWorker(ctx, w.db, w.id); err != nil {
		w.log.Warn("removing the worker from docket_workers failed; it expires by itself", slog.String("error", err.Error()))
	}
}
