package worker

import (
	"context"
	"log/slog"
	"time"
)

// reapSpacing is how many times its own duration the reaper waits before
// its next round, at least a poll interval.
const reapSpacing = 25

// reaper returns jobs whose lease expired to ready (or dead on their last
// attempt), at start and then every poll interval, less often when its
// rounds grow slow. Every process runs one: the statement is cheap,
// idempotent and skips rows another process is working on.
type reaper struct {
	loop
	up   upkeep
	errs errStreak
}

func (r *reaper) start(ctx context.Context) { r.run(ctx, r.rounds) }

func (r *reaper) rounds(ctx context.Context) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		start := time.Now()
		r.reap(ctx)
		// The reaper walks the running-jobs index, whose dead entries pile
		// up while a long transaction holds back vacuum: space the rounds
		// out by their cost so that it stays a small share of the
		// database's work.
		timer.Reset(max(r.up.poll, reapSpacing*time.Since(start)))
	}
}

// reap runs one round and wakes the pools if it requeued any job.
func (r *reaper) reap(bg context.Context) {
	up := r.up
	var total int64
	for range 100 {
		ctx, cancel := context.WithTimeout(bg, up.lease)
		res, err := up.q.Reap(ctx, up.db, maintenanceBatch)
		cancel()
		if err != nil {
			if bg.Err() == nil {
				r.errs.fail(up.log, "reaping expired leases failed", err)
			}
			break
		}
		r.errs.ok(up.log, "reaping expired leases recovered")
		if res.Requeued+res.Dead > 0 {
			up.log.Info("reaped jobs whose lease expired",
				slog.Int64("requeued", res.Requeued), slog.Int64("dead", res.Dead))
		}
		total += res.Requeued
		if res.Requeued+res.Dead < maintenanceBatch {
			break
		}
	}
	if total > 0 {
		up.wakeAll()
	}
}
