package handlers

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// pauses is the set of queues an operator paused (docket_queues), read
// before Start returns and then every poll interval; pools leave paused
// queues out of their claims, and a resumed queue's pools claim at once.
type pauses struct {
	loop
	w *Worker
	// paused is the set of paused queues as last read.
	paused atomic.Pointer[map[string]bool]
	errs   errStreak
}

func newPauses(w *Worker) *pauses {
	p := &pauses{w: w}
	p.paused.Store(&map[string]bool{})
	return p
}

func (p *pauses) start(ctx context.Context) {
	p.refresh(ctx)
	p.run(ctx, func(ctx context.Context) { every(ctx, p.w.poll, p.refresh) })
}

// refresh re-reads the paused queues and wakes the pools of queues that
// were resumed. On failure it keeps the last known set.
func (p *pauses) refresh(bg context.Context) {
	w := p.w
	ctx, cancel := context.WithTimeout(bg, max(w.poll, time.Second))
	defer cancel()
	names, err := w.ob.PausedQueues(ctx, w.db)
	if err != nil {
		if bg.Err() == nil {
			p.errs.fail(w.log, "reading paused queues failed; keeping the last known set", err)
		}
		return
	}
	p.errs.ok(w.log, "reading paused queues recovered")
	now := make(map[string]bool, len(names))
	for _, q := range names {
		now[q] = true
	}
	old := p.paused.Swap(&now)
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

// active returns the queues that are not paused, in order.
func (p *pauses) active(queues []string) []string {
	paused := *p.paused.Load()
	if len(paused) == 0 {
		return queues
	}
	out := make([]string, 0, len(queues))
	for _, q := range queues {
		if !paused[q] {
			out = append(out, q)
		}
	}
	return out
}
