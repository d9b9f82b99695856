package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/docketq/docket/internal/engine/pgsql"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/jackc/pgx/v5"
)

const (
	// promoteGrace is added to a local due time, so the database's clock has
	// passed run_at when the promotion runs.
	promoteGrace = time.Millisecond
	// minPromoteGap keeps a due time in the past (clock skew between this
	// host and the database) from turning the promoter into a busy loop.
	minPromoteGap = 5 * time.Millisecond
)

// promoter makes scheduled jobs (future run_at, retries with backoff,
// snoozes) ready once due, and wakes the pools of their queues, here and,
// through NOTIFY, in other processes. It promotes at start, every poll
// interval, and when the earliest known scheduled job becomes due: the
// earliest run_at in the database (the queue's NextScheduled) or one this
// process just set (noteDue).
type promoter struct {
	loop
	up        upkeep
	schema    string        // whose channel announces promoted jobs
	debounce  time.Duration // the enqueuers' NOTIFY window; -1: no NOTIFY
	errs      errStreak
	sweepErrs errStreak
	flowErrs  errStreak
	// deadlineErrs: the sweep of workflow steps past their signal's deadline.
	deadlineErrs errStreak
	// childErrs: the sweep of jobs waiting for their child workflows.
	childErrs errStreak
	// resultErrs: removing the kept results of finished workflows.
	resultErrs errStreak

	// localDue is the earliest run_at this process set since the last
	// promotion; a note earlier than it kicks the loop.
	dueMu    sync.Mutex
	localDue time.Time
	dueKick  chan struct{}
}

func newPromoter(up upkeep, schema string, debounce time.Duration) *promoter {
	return &promoter{up: up, schema: schema, debounce: debounce, dueKick: make(chan struct{}, 1)}
}

func (p *promoter) start(ctx context.Context) { p.run(ctx, p.rounds) }

// noteDue tells the promoter that this process just scheduled a job to run
// after d (a retry's backoff, a snooze), so that it is promoted when due
// rather than at the next poll.
func (p *promoter) noteDue(d time.Duration) {
	t := time.Now().Add(d + promoteGrace)
	p.dueMu.Lock()
	earlier := p.localDue.IsZero() || t.Before(p.localDue)
	if earlier {
		p.localDue = t
	}
	p.dueMu.Unlock()
	if earlier {
		select {
		case p.dueKick <- struct{}{}:
		default:
		}
	}
}

func (p *promoter) rounds(ctx context.Context) {
	poll := p.up.poll
	var dbDue time.Time
	nextPoll := time.Now()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-timer.C:
		case <-p.dueKick:
		}
		now := time.Now()
		promote := false
		p.dueMu.Lock()
		if !p.localDue.IsZero() && !now.Before(p.localDue) {
			p.localDue = time.Time{} // notes made from here on are kept
			promote = true
		}
		p.dueMu.Unlock()
		if !dbDue.IsZero() && !now.Before(dbDue) {
			promote = true
		}
		sweep := false
		if !now.Before(nextPoll) {
			promote, sweep = true, true
			nextPoll = now.Add(poll)
		}
		if promote {
			dbDue = p.promote(ctx, sweep)
			if !dbDue.IsZero() && !dbDue.After(time.Now()) {
				// Due by the database but not promoted: another process holds
				// it, or the clocks disagree. Look again shortly.
				dbDue = time.Now().Add(min(poll, 100*time.Millisecond))
			}
		}
		next := nextPoll
		if !dbDue.IsZero() && dbDue.Before(next) {
			next = dbDue
		}
		p.dueMu.Lock()
		if !p.localDue.IsZero() && p.localDue.Before(next) {
			next = p.localDue
		}
		p.dueMu.Unlock()
		timer.Reset(max(time.Until(next), minPromoteGap))
	}
}

// promote makes due scheduled jobs ready and, with sweep, the heads of
// serial-key lines left without a holder, the workflow jobs whose
// parents are gone and the workflow steps past their signal's deadline
// (and removes the kept results of finished workflows); wakes the pools
// of their queues; and returns the next run_at still scheduled (zero if none or unknown).
func (p *promoter) promote(bg context.Context, sweep bool) time.Time {
	up := p.up
	seen := map[string]bool{}
	var queues []string
	for range 100 {
		ctx, cancel := context.WithTimeout(bg, up.lease)
		got, err := up.q.Promote(ctx, up.db, maintenanceBatch)
		cancel()
		if err != nil {
			if bg.Err() == nil {
				p.errs.fail(up.log, "promoting scheduled jobs failed", err)
			}
			return time.Time{}
		}
		p.errs.ok(up.log, "promoting scheduled jobs recovered")
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
	if sweep && p.sweepsDue(bg) {
		for _, q := range p.sweepAll(bg, []sweepOf{
			{"serial-key lines", &p.sweepErrs, up.q.SweepSerial},
			{"workflow jobs", &p.flowErrs, up.q.SweepWorkflows},
			{"workflow deadlines", &p.deadlineErrs, up.q.SweepDeadlines},
			{"steps waiting for child workflows", &p.childErrs, up.q.SweepChildWorkflows},
			{"workflow results", &p.resultErrs, up.q.SweepWorkflowResults},
		}) {
			if !seen[q] {
				seen[q] = true
				queues = append(queues, q)
			}
		}
	}
	up.wakeQueues(queues)
	ctx, cancel := context.WithTimeout(bg, up.lease)
	defer cancel()
	if len(queues) > 0 && p.debounce >= 0 {
		// Other processes serving these queues learn of them now rather
		// than at their next poll.
		if err := up.q.NotifyQueues(ctx, up.db, pgsql.NotifyChannel(p.schema), queues); err != nil && ctx.Err() == nil {
			up.log.Warn("announcing promoted jobs failed", slog.String("error", err.Error()))
		}
	}
	next, ok, err := up.q.NextScheduled(ctx, up.db)
	if err != nil || !ok {
		return time.Time{}
	}
	return next
}

// sweepsDue reports whether any sweep may find work (queue.SweepsDue): a
// worker whose jobs never wait (no serial keys, no workflows) skips the
// sweeps' transaction. When the probe fails the sweeps run anyway, and
// report their own errors.
func (p *promoter) sweepsDue(bg context.Context) bool {
	ctx, cancel := context.WithTimeout(bg, p.up.lease)
	defer cancel()
	due, err := p.up.q.SweepsDue(ctx, p.up.db)
	return err != nil || due
}

// sweepOf is one of the sweeps that move waiting jobs on: what names it in
// logs, errs is its error streak, run runs it and returns the queues of
// the jobs it made ready.
type sweepOf struct {
	what string
	errs *errStreak
	run  func(ctx context.Context, db queue.DB, limit int) ([]string, error)
}

// sweepAll runs the sweeps in one transaction at READ COMMITTED, whatever
// the server's default isolation: a poll round costs one BEGIN and one
// COMMIT, not one of each per sweep (with five sweeps and a short poll
// interval those round trips were most of an idle worker's statements).
// If one fails, the transaction is rolled back and each sweep runs again
// in a transaction of its own, so that one failing sweep stops no other.
// It returns the queues of the jobs the sweeps made ready.
func (p *promoter) sweepAll(bg context.Context, sweeps []sweepOf) []string {
	ctx, cancel := context.WithTimeout(bg, p.up.lease)
	defer cancel()
	var queues []string
	err := pgx.BeginTxFunc(ctx, p.up.db, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		queues = nil
		for _, s := range sweeps {
			got, err := s.run(ctx, tx, maintenanceBatch)
			if err != nil {
				return err
			}
			queues = append(queues, got...)
		}
		return nil
	})
	if err == nil {
		for _, s := range sweeps {
			s.errs.ok(p.up.log, "sweeping "+s.what+" recovered")
		}
		return queues
	}
	if bg.Err() != nil {
		return nil
	}
	queues = nil
	for _, s := range sweeps {
		queues = append(queues, p.sweep(bg, s.what, s.errs, s.run)...)
	}
	return queues
}

// sweep runs one sweep alone (what names it in logs) at READ COMMITTED and
// returns the queues of the jobs it made ready.
func (p *promoter) sweep(bg context.Context, what string, errs *errStreak,
	run func(ctx context.Context, db queue.DB, limit int) ([]string, error)) []string {
	up := p.up
	ctx, cancel := context.WithTimeout(bg, up.lease)
	defer cancel()
	var got []string
	err := pgx.BeginTxFunc(ctx, up.db, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		var err error
		got, err = run(ctx, tx, maintenanceBatch)
		return err
	})
	if err != nil {
		if bg.Err() == nil {
			errs.fail(up.log, "sweeping "+what+" failed", err)
		}
		return nil
	}
	errs.ok(up.log, "sweeping "+what+" recovered")
	return got
}
