package handlers

import (
	"context"
	"log/slog"
	"time"
)

// Every worker process runs the queue's upkeep. Each statement is cheap,
// idempotent and skips rows another process is working on, so any number of
// processes may run it at once.
const (
	maintenanceBatch = 1000
	// promoteGrace is added to a local due time, so the database's clock has
	// passed run_at when the promotion runs.
	promoteGrace = time.Millisecond
	// minMaintenanceGap keeps a due time in the past (clock skew between
	// this host and the database) from turning the loop into a busy loop.
	minMaintenanceGap = 5 * time.Millisecond
	// partitionsAhead is how many days of history partitions exist ahead.
	partitionsAhead = 3
)

// noteDue tells the promoter that this process just scheduled a job to run
// after d (a retry's backoff, a snooze), so that it is promoted when due
// rather than at the next poll.
func (w *Worker) noteDue(d time.Duration) {
	t := time.Now().Add(d + promoteGrace)
	w.dueMu.Lock()
	earlier := w.localDue.IsZero() || t.Before(w.localDue)
	if earlier {
		w.localDue = t
	}
	w.dueMu.Unlock()
	if earlier {
		select {
		case w.dueKick <- struct{}{}:
		default:
		}
	}
}

// reapSpacing is how many times its own duration the reaper waits before
// its next round, at least a poll interval.
const reapSpacing = 25

// maintain reaps expired leases and promotes due scheduled jobs every poll
// interval (the reaper less often when its rounds grow slow), and promotes also when the earliest known scheduled job becomes
// due: the earliest run_at in the database (outbox.NextScheduled) or one
// this process just set.
func (w *Worker) maintain(stop <-chan struct{}) {
	defer w.wg.Done()
	var dbDue, nextReap time.Time
	nextPoll := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-stop:
			return
		case <-timer.C:
		case <-w.dueKick:
		}
		now := time.Now()
		promote := false
		w.dueMu.Lock()
		if !w.localDue.IsZero() && !now.Before(w.localDue) {
			w.localDue = time.Time{} // notes made from here on are kept
			promote = true
		}
		w.dueMu.Unlock()
		if !dbDue.IsZero() && !now.Before(dbDue) {
			promote = true
		}
		if !now.Before(nextPoll) {
			w.refreshPaused()
			if !now.Before(nextReap) {
				start := time.Now()
				w.reap()
				// The reaper walks the running-jobs index, whose dead entries
				// pile up while a long transaction holds back vacuum: space
				// the rounds out by their cost so that it stays a small share
				// of the database's work.
				nextReap = now.Add(max(w.poll, reapSpacing*time.Since(start)))
			}
			promote = true
			nextPoll = now.Add(w.poll)
		}
		if promote {
			dbDue = w.promote()
			if !dbDue.IsZero() && !dbDue.After(time.Now()) {
				// Due by the database but not promoted: another process holds
				// it, or the clocks disagree. Look again shortly.
				dbDue = time.Now().Add(min(w.poll, 100*time.Millisecond))
			}
		}
		next := nextPoll
		if !dbDue.IsZero() && dbDue.Before(next) {
			next = dbDue
		}
		w.dueMu.Lock()
		if !w.localDue.IsZero() && w.localDue.Before(next) {
			next = w.localDue
		}
		w.dueMu.Unlock()
		timer.Reset(max(time.Until(next), minMaintenanceGap))
	}
}

// reap returns jobs whose lease expired to ready (or dead on their last
// attempt) and wakes the pools if it requeued any.
func (w *Worker) reap() {
	var total int64
	for range 100 {
		ctx, cancel := context.WithTimeout(w.bgCtx, w.lease)
		res, err := w.q.Reap(ctx, w.db, maintenanceBatch)
		cancel()
		if err != nil {
			if w.bgCtx.Err() == nil {
				w.reapErrs.fail(w.log, "reaping expired leases failed", err)
			}
			break
		}
		w.reapErrs.ok(w.log, "reaping expired leases recovered")
		if res.Requeued+res.Dead > 0 {
			w.log.Info("reaped jobs whose lease expired",
				slog.Int64("requeued", res.Requeued), slog.Int64("dead", res.Dead))
		}
		total += res.Requeued
		if res.Requeued+res.Dead < maintenanceBatch {
			break
		}
	}
	if total > 0 {
		w.wakeAll()
	}
}

// promote makes due scheduled jobs ready, wakes the pools of their queues,
// and returns the next run_at still scheduled (zero if none or unknown).
func (w *Worker) promote() time.Time {
	seen := map[string]bool{}
	var queues []string
	for range 100 {
		ctx, cancel := context.WithTimeout(w.bgCtx, w.lease)
		got, err := w.q.Promote(ctx, w.db, maintenanceBatch)
		cancel()
		if err != nil {
			if w.bgCtx.Err() == nil {
				w.promoteErrs.fail(w.log, "promoting scheduled jobs failed", err)
			}
			return time.Time{}
		}
		w.promoteErrs.ok(w.log, "promoting scheduled jobs recovered")
		for _, q := range got {
			if !seen[q] {
				seen[q] = true
				queues = append(queues, q)
			}
		}
		if len(got) < maintenanceBatch {
			break
		}
	}
	w.wakeQueues(queues)
	ctx, cancel := context.WithTimeout(w.bgCtx, w.lease)
	defer cancel()
	if len(queues) > 0 && w.ob.NotifyDebounce() >= 0 {
		// Other processes serving these queues learn of them now rather
		// than at their next poll.
		if err := w.q.NotifyQueues(ctx, w.db, w.ob.NotifyChannel(), queues); err != nil && ctx.Err() == nil {
			w.log.Warn("announcing promoted jobs failed", slog.String("error", err.Error()))
		}
	}
	next, ok, err := w.q.NextScheduled(ctx, w.db)
	if err != nil || !ok {
		return time.Time{}
	}
	return next
}

// upkeep keeps history partitions for today and the next days, and drops
// those older than the retention, at start and then hourly.
func (w *Worker) upkeep(stop <-chan struct{}) {
	defer w.wg.Done()
	if !w.ob.History() {
		return
	}
	t := time.NewTicker(w.partitionEvery)
	defer t.Stop()
	for {
		w.partitions()
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// startPartitions creates the history partitions Start needs, trying a few
// times: partition DDL gives up quickly when another session holds a lock
// on the history table.
func (w *Worker) startPartitions(ctx context.Context) error {
	if !w.ob.History() {
		return nil
	}
	var err error
	for try := range 5 {
		if try > 0 {
			select {
			case <-time.After(time.Duration(try) * 100 * time.Millisecond):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err = w.q.EnsurePartitions(ctx, w.db, w.clock(), partitionsAhead); err == nil {
			return nil
		}
	}
	return err
}

func (w *Worker) partitions() {
	ctx, cancel := context.WithTimeout(w.bgCtx, time.Minute)
	defer cancel()
	now := w.clock()
	if err := w.q.EnsurePartitions(ctx, w.db, now, partitionsAhead); err != nil && ctx.Err() == nil {
		w.log.Warn("creating history partitions failed", slog.String("error", err.Error()))
	}
	dropped, err := w.q.DropPartitions(ctx, w.db, now.Add(-w.retention))
	if err != nil && ctx.Err() == nil {
		w.log.Warn("dropping old history partitions failed", slog.String("error", err.Error()))
	}
	if len(dropped) > 0 {
		w.log.Info("dropped history partitions past retention", slog.Any("partitions", dropped))
	}
}

// errStreak logs the first failure of a streak of a periodic operation and
// its recovery, instead of every failure while the database is away.
type errStreak struct{ failing bool }

func (s *errStreak) fail(log *slog.Logger, msg string, err error) {
	if !s.failing {
		log.Warn(msg+"; retrying quietly", slog.String("error", err.Error()))
		s.failing = true
	}
}

func (s *errStreak) ok(log *slog.Logger, msg string) {
	if s.failing {
		log.Info(msg)
		s.failing = false
	}
}
