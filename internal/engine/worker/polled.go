package worker

import (
	"context"
	"sync/atomic"
	"time"
)

// polled is a reading of operator settings in the database (the paused
// queues, the limits): taken before Start returns and then every poll
// interval, held for the claims to load without a lock. A failed read keeps
// the last good one in force, and is logged once per streak.
type polled[T any] struct {
	loop
	w    *Worker
	what string // in logs: "reading <what> failed"
	read func(ctx context.Context) (*T, error)
	// changed is called after each good read with the reading it replaced.
	changed func(old, now *T)
	cur     atomic.Pointer[T]
	errs    errStreak
}

func newPolled[T any](w *Worker, what string, empty *T, read func(context.Context) (*T, error), changed func(old, now *T)) *polled[T] {
	p := &polled[T]{w: w, what: what, read: read, changed: changed}
	p.cur.Store(empty)
	return p
}

func (p *polled[T]) start(ctx context.Context) {
	p.refresh(ctx)
	p.run(ctx, func(ctx context.Context) { every(ctx, p.w.poll, p.refresh) })
}

// refresh reads again; on failure it keeps the last good reading.
func (p *polled[T]) refresh(bg context.Context) {
	w := p.w
	ctx, cancel := context.WithTimeout(bg, max(w.poll, time.Second))
	defer cancel()
	now, err := p.read(ctx)
	if err != nil {
		if bg.Err() == nil {
			p.errs.fail(w.log, "reading "+p.what+" failed; keeping the last known set", err)
		}
		return
	}
	p.errs.ok(w.log, "reading "+p.what+" recovered")
	p.changed(p.cur.Swap(now), now)
}

// load returns the last good reading.
func (p *polled[T]) load() *T { return p.cur.Load() }
