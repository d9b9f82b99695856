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
	up   upkeep
	what string // in logs: "reading <what> failed"
	read func(ctx context.Context) (*T, error)
	// changed is called after each good read with the reading it replaced.
	changed func(old, now *T)
	cur     atomic.Pointer[T]
	errs    errStreak
}

func newPolled[T any](up upkeep, what string, empty *T, read func(context.Context) (*T, error), changed func(old, now *T)) *polled[T] {
	p := &polled[T]{up: up, what: what, read: read, changed: changed}
	p.cur.Store(empty)
	return p
}

func (p *polled[T]) start(ctx context.Context) {
	p.refresh(ctx)
	p.run(ctx, func(ctx context.Context) { every(ctx, p.up.poll, p.refresh) })
}

// refresh reads again; on failure it keeps the last good reading.
func (p *polled[T]) refresh(bg context.Context) {
	up := p.up
	ctx, cancel := context.WithTimeout(bg, max(up.poll, time.Second))
	defer cancel()
	now, err := p.read(ctx)
	if err != nil {
		if bg.Err() == nil {
			p.errs.fail(up.log, "reading "+p.what+" failed; keeping the last known set", err)
		}
		return
	}
	p.errs.ok(up.log, "reading "+p.what+" recovered")
	p.changed(p.cur.Swap(now), now)
}

// load returns the last good reading.
func (p *polled[T]) load() *T { return p.cur.Load() }
