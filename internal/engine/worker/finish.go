package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// What a finished run asks for.
type outcomeKind uint8

const (
	oComplete outcomeKind = iota
	oFail
	oSnooze
	oDead
	oRelease
	oCancelled // an operator cancelled the job while it ran
)

// outcome is one job's result waiting to be written.
type outcome struct {
	task   *task
	what   outcomeKind
	delay  time.Duration // oFail, oSnooze
	reason string        // oDead
	err    string        // oFail, oDead
}

const (
	// flushEarly is the buffer size at which a flush starts without waiting
	// out the flush interval.
	flushEarly = 512
	// flushers is how many batches may be written at once. While they are
	// busy, outcomes pile up and the next batch is bigger: the batch size
	// adapts to load without a tuning knob.
	flushers = 2
)

// finisher is the one place that writes finished runs. Plain handlers'
// outcomes are buffered briefly and written in batches: one statement per
// kind of outcome per flush. Final outcomes of kinds with an outcome hook
// are written in a transaction of their own per flush, with the hooks'
// writes (commitFinals), and a transactional handler's completion is
// written in the handler's transaction, with its kind's hook, the same way
// (completeInTx). Every statement is fenced by the claim of the run it
// speaks for, so a run this process lost changes nothing, even when this
// process has claimed the job again since.
type finisher struct {
	w        *Worker
	interval time.Duration
	// now is the clock of finish times; nil means the database's clock.
	// Tests set it together with the partitions' clock.
	now func() time.Time

	mu  sync.Mutex
	buf []outcome
	// urgent says buf holds an outcome that a job waits for: a serial
	// job's (the next job of its key waits for it to commit) or a limited
	// one's (the next job of its limit waits for the place), so it is
	// written without waiting out the interval.
	urgent bool

	kick chan struct{} // a flusher should look at buf
	done chan struct{} // closed by close: drain and exit
	// stopCtx bounds the final drain's retries; set before done is closed.
	stopCtx context.Context
	wg      sync.WaitGroup
}

func newFinisher(w *Worker, interval time.Duration) *finisher {
	return &finisher{w: w, interval: interval, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

// finishTime is the finish time recorded with a completion: zero, meaning
// the database's clock, unless a test set the clock.
func (c *finisher) finishTime() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Time{}
}

func (c *finisher) start() {
	c.wg.Add(flushers)
	for range flushers {
		go c.loop()
	}
}

// add queues an outcome. The task's state must already be stFinishing or
// stReleased.
func (c *finisher) add(o outcome) {
	waitedFor := o.task.job.SerialKey != "" || o.task.limit != ""
	c.mu.Lock()
	c.buf = append(c.buf, o)
	n := len(c.buf)
	first := waitedFor && !c.urgent
	c.urgent = c.urgent || waitedFor
	c.mu.Unlock()
	if n == 1 || n == flushEarly || first {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// close writes everything pending, retrying failed writes until ctx ends,
// and returns when the flushers have exited.
func (c *finisher) close(ctx context.Context) {
	c.stopCtx = ctx
	close(c.done)
	c.wg.Wait()
}

func (c *finisher) loop() {
	defer c.wg.Done()
	var spare []outcome
	f := &flushScratch{}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-c.kick:
		case <-c.done:
			for {
				batch := c.take(spare)
				spare = batch
				if len(batch) == 0 {
					return
				}
				c.flush(c.stopCtx, f, batch)
			}
		}
		if c.interval > 0 && !c.due() {
			timer.Reset(c.interval)
			select {
			case <-timer.C:
			case <-c.done:
				timer.Stop()
			}
		}
		batch := c.take(spare)
		spare = batch
		if len(batch) == 0 {
			continue
		}
		c.flush(c.ctx(), f, batch)
		if c.pending() > 0 {
			select {
			case c.kick <- struct{}{}:
			default:
			}
		}
	}
}

// ctx is what bounds a flush's retries: nothing while running (write gives
// up when the leases expire), the stop deadline once closing.
func (c *finisher) ctx() context.Context {
	select {
	case <-c.done:
		return c.stopCtx
	default:
		return context.Background()
	}
}

// due reports whether buf is to be written now: it is full enough, or
// holds an urgent outcome.
func (c *finisher) due() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.urgent || len(c.buf) >= flushEarly
}

func (c *finisher) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf)
}

// take swaps the buffer with spare, the caller's previous batch, and
// returns what was buffered. The caller owns the returned slice until it
// passes it back as spare; when nothing is buffered, nothing is swapped.
func (c *finisher) take(spare []outcome) []outcome {
	clear(spare)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.buf) == 0 {
		return spare[:0]
	}
	b := c.buf
	c.buf = spare[:0]
	c.urgent = false
	return b
}

// flushScratch holds one flusher's reusable slices.
type flushScratch struct {
	completeRuns []queue.Run
	complete     []*task
	fails        []queue.Failure
	failed       []*task
	snoozes      []queue.Snoozed
	snoozed      []*task
	deads        []queue.Dead
	dead         []*task
	releaseRuns  []queue.Run
	released     []*task
	cancelRuns   []queue.Run
	cancelled    []*task
	dropped      []*task
	wake         []*pool
	limited      []*task   // runs a limit granted: their places are free once written
	hooked       []outcome // final outcomes of kinds with an OutcomeHook
	handing      []handing // serial completions that may claim the next of their keys
	// granted and others split a batch into the outcomes of runs a limit
	// granted and the others (see flush).
	granted, others []outcome
}

// handing is the serial completions of one pool that hand their keys on
// into it (see handoff.go).
type handing struct {
	p     *pool
	on    queue.HandOn
	runs  []queue.Run
	tasks []*task
}

func (f *flushScratch) reset() {
	clear(f.complete)
	clear(f.failed)
	clear(f.snoozed)
	clear(f.dead)
	clear(f.released)
	clear(f.cancelled)
	clear(f.dropped)
	clear(f.wake)
	clear(f.limited)
	clear(f.hooked)
	clear(f.handing)
	f.wake, f.limited, f.hooked, f.handing = f.wake[:0], f.limited[:0], f.hooked[:0], f.handing[:0]
	f.completeRuns, f.complete = f.completeRuns[:0], f.complete[:0]
	f.fails, f.failed = f.fails[:0], f.failed[:0]
	f.snoozes, f.snoozed = f.snoozes[:0], f.snoozed[:0]
	f.deads, f.dead = f.deads[:0], f.dead[:0]
	f.releaseRuns, f.released = f.releaseRuns[:0], f.released[:0]
	f.cancelRuns, f.cancelled = f.cancelRuns[:0], f.cancelled[:0]
	f.dropped = f.dropped[:0]
}

// flush writes one batch. stop is the final drain's deadline, or
// Background while running (retries then end when the jobs' leases would
// have expired anyway). The outcomes of runs a limit granted are written
// first, in statements of their own, and their places handed on as soon
// as those commit: the next jobs of their limits wait for them, and
// beside a drain the batch's other outcomes are hundreds of rows
// (measured under load: 15 ms from a limited handler's return to its
// place's release with them, most of a place's cycle).
func (c *finisher) flush(stop context.Context, f *flushScratch, batch []outcome) {
	limited := func(o outcome) bool { return o.task.limit != "" }
	if !slices.ContainsFunc(batch, limited) || !slices.ContainsFunc(batch, func(o outcome) bool { return !limited(o) }) {
		c.writeOutcomes(stop, f, batch)
		return
	}
	f.granted, f.others = f.granted[:0], f.others[:0]
	for _, o := range batch {
		if limited(o) {
			f.granted = append(f.granted, o)
		} else {
			f.others = append(f.others, o)
		}
	}
	c.writeOutcomes(stop, f, f.granted)
	c.writeOutcomes(stop, f, f.others)
	clear(f.granted)
	clear(f.others)
}

// writeOutcomes writes the outcomes of batch, one statement per kind of
// outcome, and hands on the places of the limited runs among them.
func (c *finisher) writeOutcomes(stop context.Context, f *flushScratch, batch []outcome) {
	w := c.w
	f.reset()
	var due time.Duration = -1
	for i := range batch {
		o := &batch[i]
		run := queue.RunOf(o.task.job)
		if st := o.task.state.Load(); st != stFinishing && st != stReleased {
			f.dropped = append(f.dropped, o.task) // lost while waiting here
			continue
		}
		if o.task.limit != "" {
			f.limited = append(f.limited, o.task)
		}
		if hooked(o) {
			f.hooked = append(f.hooked, *o) // written by writeHooked
			continue
		}
		if o.what == oComplete && o.task.job.SerialKey != "" && f.handOn(o.task, run) {
			continue
		}
		switch o.what {
		case oComplete:
			f.completeRuns, f.complete = append(f.completeRuns, run), append(f.complete, o.task)
		case oFail:
			f.fails, f.failed = append(f.fails, queue.Failure{Run: run, Error: o.err, Delay: o.delay}), append(f.failed, o.task)
		case oSnooze:
			f.snoozes, f.snoozed = append(f.snoozes, queue.Snoozed{Run: run, Delay: o.delay}), append(f.snoozed, o.task)
		case oDead:
			f.deads, f.dead = append(f.deads, queue.Dead{Run: run, Reason: o.reason, Error: o.err}), append(f.dead, o.task)
		case oRelease:
			f.releaseRuns, f.released = append(f.releaseRuns, run), append(f.released, o.task)
		case oCancelled:
			f.cancelRuns, f.cancelled = append(f.cancelRuns, run), append(f.cancelled, o.task)
		}
		if o.task.job.SerialKey != "" && (o.what == oComplete || o.what == oDead || o.what == oCancelled) {
			// The next job of its key becomes ready as this one leaves,
			// most often in the same queue: claim it without waiting for
			// the NOTIFY to come back.
			f.wake = append(f.wake, o.task.pool)
		}
		if o.what == oFail || o.what == oSnooze {
			if o.delay <= 0 {
				// Ready at once: nobody announces it, so wake its pool.
				f.wake = append(f.wake, o.task.pool)
			} else if due < 0 || o.delay < due {
				due = o.delay
			}
		}
	}
	if len(f.dropped) > 0 {
		w.inflight.remove(f.dropped...)
	}
	// Hand-offs first: the next jobs of their keys wait for them.
	for i := range f.handing {
		c.writeHandingOn(stop, &f.handing[i])
	}
	q, db, me := w.q, w.db, w.id
	if len(f.complete) > 0 {
		c.write(stop, "complete", f.complete, func(ctx context.Context) ([]int64, error) {
			return q.Complete(ctx, db, me, f.completeRuns, c.finishTime())
		})
	}
	if len(f.failed) > 0 {
		c.write(stop, "fail", f.failed, func(ctx context.Context) ([]int64, error) {
			res, err := q.Fail(ctx, db, me, f.fails)
			if err != nil {
				return nil, err
			}
			if len(res.Dead) > 0 {
				c.logDead(f.failed, res.Dead)
			}
			return append(res.Retried, res.Dead...), nil
		})
	}
	if len(f.snoozed) > 0 {
		c.write(stop, "snooze", f.snoozed, func(ctx context.Context) ([]int64, error) {
			return q.Snooze(ctx, db, me, f.snoozes)
		})
	}
	if len(f.dead) > 0 {
		c.write(stop, "dead-letter", f.dead, func(ctx context.Context) ([]int64, error) {
			return q.DeadLetter(ctx, db, me, f.deads)
		})
	}
	if len(f.released) > 0 {
		c.write(stop, "release", f.released, func(ctx context.Context) ([]int64, error) {
			return q.Release(ctx, db, me, f.releaseRuns)
		})
	}
	if len(f.cancelled) > 0 {
		c.write(stop, "cancelled", f.cancelled, func(ctx context.Context) ([]int64, error) {
			return q.Cancelled(ctx, db, me, f.cancelRuns)
		})
	}
	if len(f.hooked) > 0 {
		c.writeHooked(stop, f.hooked)
	}
	if due >= 0 {
		w.promoter.noteDue(due)
	}
	freePlaces(f.limited)
	for _, p := range f.wake {
		p.signal()
	}
}

// handOn adds a serial job's completion to the hand-offs of its pool, if
// the pool may take the next job of its key now.
func (f *flushScratch) handOn(t *task, run queue.Run) bool {
	for i := range f.handing {
		if h := &f.handing[i]; h.p == t.pool {
			h.runs, h.tasks = append(h.runs, run), append(h.tasks, t)
			return true
		}
	}
	on, ok := t.pool.handOnFor()
	if !ok {
		return false
	}
	f.handing = append(f.handing, handing{p: t.pool, on: on, runs: []queue.Run{run}, tasks: []*task{t}})
	return true
}

// writeHandingOn writes one pool's serial completions, claiming for it the
// next jobs of their keys, and hands those to its slots. The pool claims
// at once for the keys it did not get.
func (c *finisher) writeHandingOn(stop context.Context, h *handing) {
	w := c.w
	var handed []*core.Job
	start := time.Now()
	c.write(stop, "complete", h.tasks, func(ctx context.Context) ([]int64, error) {
		start = time.Now()
		done, jobs, err := w.q.CompleteHandOn(ctx, w.db, w.id, h.runs, c.finishTime(), h.on)
		handed = jobs
		return done, err
	})
	h.p.handOn(start, handed)
	if len(handed) < len(h.runs) {
		h.p.signal()
	}
}

// freePlaces hands the places of runs a limit granted, which left the
// running state with the writes just made, to the next jobs of their
// limits: the pools of limits that waited for a place claim now, instead
// of when limitRecheck runs out.
func freePlaces(tasks []*task) {
	for _, t := range tasks {
		if t.pool.limitTimes.released(t.limit) {
			t.pool.wakeLimits()
		}
	}
}

// write runs one outcome statement, retrying failures with backoff until it
// succeeds or there is no point in going on: every run of tasks is known
// lost (the heartbeat learned that its job was reaped, or this process
// claimed it again), their leases ran out by the local clock (the heartbeat
// keeps extending them while the database answers; once they run out the
// jobs may be reaped and run again: at-least-once), writes kept failing for
// maxWriteLeases leases, or the final drain's deadline passed. A late write
// is harmless: the statement is fenced by each run's claim. Runs missing
// from the result were lost; their outcome is dropped.
func (c *finisher) write(stop context.Context, what string, tasks []*task, op func(context.Context) ([]int64, error)) {
	w := c.w
	wait := 20 * time.Millisecond
	bound := time.Now().Add(maxWriteLeases * w.lease)
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(stop, w.lease)
		ids, err := op(ctx)
		cancel()
		if err == nil {
			if len(ids) < len(tasks) && what != "cancelled" {
				ids = c.cancelMissing(stop, tasks, ids)
			}
			if len(ids) < len(tasks) {
				c.logLost(what, tasks, ids)
			}
			w.inflight.remove(tasks...)
			return
		}
		now := time.Now()
		current, leased := stillPending(tasks, now)
		if !current {
			w.log.Warn("dropping job outcomes that could not be written: their runs were lost meanwhile",
				slog.String("outcome", what), slog.Int("jobs", len(tasks)), slog.String("error", err.Error()))
			w.inflight.remove(tasks...)
			return
		}
		if stop.Err() != nil || !leased || now.After(bound) {
			w.log.Error("giving up writing job outcomes; the jobs will be reaped and run again",
				slog.String("outcome", what), slog.Int("jobs", len(tasks)), slog.Int("attempts", attempt),
				slog.String("error", err.Error()))
			w.inflight.remove(tasks...)
			return
		}
		if attempt == 1 {
			w.log.Warn("writing job outcomes failed; retrying", slog.String("outcome", what),
				slog.Int("jobs", len(tasks)), slog.String("error", err.Error()))
		}
		select {
		case <-time.After(wait):
		case <-stop.Done():
		}
		wait = min(2*wait, time.Second)
	}
}

// cancelMissing writes the cancellation of the runs of tasks missing from
// ids, the runs an outcome statement refused, and returns ids with the
// runs it cancelled. An outcome is refused for a run that was lost or
// whose job an operator asked to cancel; only the latter are cancelled
// (the statement is fenced like every outcome). This costs a statement
// only when an outcome was refused. When it fails, the jobs are left to
// the reaper, which dead-letters them as cancelled once their lease ends.
func (c *finisher) cancelMissing(stop context.Context, tasks []*task, ids []int64) []int64 {
	w := c.w
	missing := missingRuns(tasks, ids)
	ctx, cancel := context.WithTimeout(stop, w.lease)
	defer cancel()
	got, err := w.q.Cancelled(ctx, w.db, w.id, missing)
	if err != nil {
		w.log.Warn("writing the cancellation of jobs an operator cancelled failed; the reaper dead-letters them when their lease ends",
			slog.Int("jobs", len(missing)), slog.String("error", err.Error()))
		return ids
	}
	if len(got) > 0 {
		c.logCancelled(tasks, got)
	}
	return append(ids, got...)
}

// missingRuns returns the runs of tasks whose job is not in ids.
func missingRuns(tasks []*task, ids []int64) []queue.Run {
	got := make(map[int64]bool, len(ids))
	for _, id := range ids {
		got[id] = true
	}
	var out []queue.Run
	for _, t := range tasks {
		if !got[t.job.ID] {
			out = append(out, queue.RunOf(t.job))
		}
	}
	return out
}

func (c *finisher) logCancelled(tasks []*task, ids []int64) {
	byID := make(map[int64]*task, len(tasks))
	for _, t := range tasks {
		byID[t.job.ID] = t
	}
	for _, id := range ids {
		if t := byID[id]; t != nil {
			c.w.met.outcome(t.job.Kind, "cancelled")
			c.w.log.Warn("job dead-lettered: an operator cancelled it while it ran; its handler's outcome is dropped",
				core.JobAttrs(t.job)...)
		}
	}
}

// maxWriteLeases bounds, in leases, how long one outcome write is retried
// while the database answers but refuses it.
const maxWriteLeases = 3

// stillPending reports whether some run of tasks still waits for its
// outcome (not lost meanwhile), and whether one of those still holds its
// lease by the local clock.
func stillPending(tasks []*task, now time.Time) (current, leased bool) {
	for _, t := range tasks {
		if st := t.state.Load(); st == stFinishing || st == stReleased {
			current = true
			if !t.leaseExpired(now) {
				leased = true
			}
		}
	}
	return current, leased
}

func (c *finisher) logLost(what string, tasks []*task, ids []int64) {
	got := make(map[int64]bool, len(ids))
	for _, id := range ids {
		got[id] = true
	}
	for _, t := range tasks {
		if !got[t.job.ID] {
			t.state.Store(stLost)
			c.w.log.Warn("outcome dropped: the job's lease was lost to another worker",
				append(core.JobAttrs(t.job), slog.String("outcome", what))...)
		}
	}
}

func (c *finisher) logDead(tasks []*task, dead []int64) {
	byID := make(map[int64]*task, len(tasks))
	for _, t := range tasks {
		byID[t.job.ID] = t
	}
	for _, id := range dead {
		if t := byID[id]; t != nil {
			c.w.log.Error("job dead-lettered: attempts exhausted",
				append(core.JobAttrs(t.job), slog.Int("max_attempts", t.job.MaxAttempts))...)
		}
	}
}

// finals are final outcomes written in one transaction together with what
// the outcome hooks of their kinds write (and, for a transactional handler,
// with the handler's own writes).
type finals struct {
	tasks    []*task
	complete []queue.Run
	// park is a transactional run that waits for the child workflow its
	// handler enqueued (child), instead of completing.
	park    *queue.Run
	child   int64
	fails   []queue.Failure
	failed  []*task // the tasks of fails, in order
	deads   []queue.Dead
	cancels []queue.Run
	// handlerTx is set when the transaction holds a transactional
	// handler's writes: a run refused there (lost, or cancelled by an
	// operator) must roll them back, so its cancellation is not written
	// in it.
	handlerTx bool
}

// finalsWritten is what commitFinals wrote, or learnt when it failed.
type finalsWritten struct {
	ids     []int64 // runs whose outcome was written
	retried []int64 // of ids, failed attempts to be retried
	// partitionMissing reports that the history partition for the
	// completions was missing; partitionCreated that it was created since.
	partitionMissing, partitionCreated bool
}

// hookError is an error an outcome hook returned.
type hookError struct {
	kind string
	err  error
}

func (e *hookError) Error() string { return "outcome hook of kind " + e.kind + ": " + e.err.Error() }
func (e *hookError) Unwrap() error { return e.err }

// commitFinals writes fin in tx, calls the outcome hook of each kind with
// its jobs whose outcome was written, and commits. It rolls tx back instead
// when nothing was written (every run was lost: a transactional handler's
// writes must not outlive its run) or when anything failed. A failure for
// a missing history partition creates the partition through the pool: this
// is the worker's only repair of history partitions (outside a transaction
// the queue's Complete makes its own).
func (c *finisher) commitFinals(ctx context.Context, tx pgx.Tx, fin *finals) (res finalsWritten, err error) {
	w := c.w
	rollback := func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(rctx) // a broken connection is discarded by the pool
	}
	defer func() {
		if err == nil {
			return
		}
		rollback()
		// The failed statement aborted tx: create the partition apart from it.
		missing, perr := w.parts.Repair(ctx, w.db, err, c.finishTime())
		res.partitionMissing, res.partitionCreated = missing, missing && perr == nil
	}()
	byID := make(map[int64]*task, len(fin.tasks))
	for _, t := range fin.tasks {
		byID[t.job.ID] = t
	}
	var parked []int64
	if fin.park != nil {
		if parked, err = w.q.Park(ctx, tx, w.id, *fin.park, fin.child); err != nil {
			return res, err
		}
	}
	done, err := w.q.Complete(ctx, tx, w.id, fin.complete, c.finishTime())
	if err != nil {
		return res, err
	}
	failed, err := w.q.Fail(ctx, tx, w.id, fin.fails)
	if err != nil {
		return res, err
	}
	dead, err := w.q.DeadLetter(ctx, tx, w.id, fin.deads)
	if err != nil {
		return res, err
	}
	cancelled, err := w.q.Cancelled(ctx, tx, w.id, fin.cancels)
	if err != nil {
		return res, err
	}
	if len(failed.Dead) > 0 {
		c.logDead(fin.failed, failed.Dead)
	}
	dead = append(append(dead, failed.Dead...), cancelled...)
	if n := len(done) + len(dead) + len(failed.Retried); n < len(fin.tasks) && !fin.handlerTx {
		// Refused runs: cancel those an operator cancelled, here, so that
		// their kinds' hooks see them dead.
		got, err := w.q.Cancelled(ctx, tx, w.id, missingRuns(fin.tasks, append(append(done, dead...), failed.Retried...)))
		if err != nil {
			return res, err
		}
		if len(got) > 0 {
			c.logCancelled(fin.tasks, got)
		}
		dead = append(dead, got...)
	}
	// One hook call per kind, with that kind's jobs.
	type pair struct{ done, dead []*core.Job }
	perKind := map[*kindRun]*pair{}
	var order []*kindRun
	get := func(id int64) *pair {
		t := byID[id]
		p := perKind[t.kind]
		if p == nil {
			p = &pair{}
			perKind[t.kind] = p
			order = append(order, t.kind)
		}
		return p
	}
	for _, id := range done {
		p := get(id)
		p.done = append(p.done, byID[id].job)
	}
	for _, id := range dead {
		p := get(id)
		p.dead = append(p.dead, byID[id].job)
	}
	for _, k := range order {
		if k.hook == nil {
			continue
		}
		p := perKind[k]
		if err := k.hook(ctx, tx, p.done, p.dead); err != nil {
			return res, &hookError{kind: k.name, err: err}
		}
	}
	written := append(append(append(done, dead...), failed.Retried...), parked...)
	if len(written) == 0 {
		rollback()
		return res, nil
	}
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("commit: %w", err)
	}
	res.ids, res.retried = written, failed.Retried
	return res, nil
}

// writeHooked writes the outcomes of hooked kinds in one transaction
// together with what their hooks write, retrying like every outcome write.
func (c *finisher) writeHooked(stop context.Context, batch []outcome) {
	w := c.w
	fin := &finals{tasks: make([]*task, len(batch))}
	for i := range batch {
		o := &batch[i]
		fin.tasks[i] = o.task
		run := queue.RunOf(o.task.job)
		switch o.what {
		case oComplete:
			fin.complete = append(fin.complete, run)
		case oFail:
			fin.fails = append(fin.fails, queue.Failure{Run: run, Error: o.err, Delay: o.delay})
			fin.failed = append(fin.failed, o.task)
		case oDead:
			fin.deads = append(fin.deads, queue.Dead{Run: run, Reason: o.reason, Error: o.err})
		case oCancelled:
			fin.cancels = append(fin.cancels, run)
		}
	}
	var due time.Duration = -1
	readyNow := map[int64]*task{}
	for i, f := range fin.fails {
		if f.Delay <= 0 {
			readyNow[f.ID] = fin.failed[i]
		} else if due < 0 || f.Delay < due {
			due = f.Delay
		}
	}
	c.write(stop, "hooked outcomes", fin.tasks, func(ctx context.Context) ([]int64, error) {
		tx, err := w.db.Begin(ctx)
		if err != nil {
			return nil, err
		}
		res, err := c.commitFinals(ctx, tx, fin)
		if err != nil {
			return nil, err
		}
		for _, id := range res.retried {
			if t := readyNow[id]; t != nil {
				// Ready at once: nobody announces it, so wake its pool.
				t.pool.signal()
			}
		}
		return res.ids, nil
	})
	if due >= 0 {
		w.promoter.noteDue(due)
	}
}

// completeInTx completes the run of a transactional handler that succeeded,
// in the handler's transaction tx and with its kind's outcome hook, and
// commits: the handler's writes and the completion commit together, or
// neither does. When the handler enqueued a child workflow (child > 0), the
// run parks instead: the job waits for the child, and the outcome hook is
// not called (the job has not completed). The task's state must already be
// stFinishing; tx is committed or rolled back when it returns.
func (c *finisher) completeInTx(ctx context.Context, tx pgx.Tx, t *task, child int64) {
	w := c.w
	fin := &finals{tasks: []*task{t}, handlerTx: true}
	if child > 0 {
		run := queue.RunOf(t.job)
		fin.park, fin.child = &run, child
	} else {
		fin.complete = []queue.Run{queue.RunOf(t.job)}
	}
	res, err := c.commitFinals(ctx, tx, fin)
	var he *hookError
	switch {
	case errors.As(err, &he):
		w.log.Warn("the outcome hook of a transactional job failed; its writes are rolled back",
			append(core.JobAttrs(t.job), slog.String("error", he.err.Error()))...)
		c.add(w.failure(t, fmt.Errorf("outcome hook: %w", he.err)))
	case err != nil:
		c.completionFailed(t, err, res)
	case len(res.ids) == 0:
		// Refused: the run was lost, or an operator cancelled the job
		// meanwhile. The handler's writes are rolled back; the
		// cancellation, if that is what it was, is written apart (a lost
		// run's is refused too, and the outcome dropped).
		c.add(outcome{task: t, what: oCancelled})
	case child > 0:
		w.met.outcome(t.job.Kind, "parked")
		w.inflight.remove(t)
		freePlaces([]*task{t})
	default:
		w.met.outcome(t.job.Kind, "completed")
		w.inflight.remove(t)
		freePlaces([]*task{t})
	}
}

// completionFailed handles a transactional job whose handler succeeded but
// whose completion, written in its transaction, failed: its writes are
// rolled back, so it must run again. When the cause was not the job's — a
// missing history partition (created by commitFinals; the job runs again at
// once) or a connection that broke (it runs again after a poll interval, so
// that a database that is away is not hammered) — the attempt is given
// back. An error the server raised for the transaction itself (a
// serialization failure at commit, a permission) counts as a failed
// attempt, so that a completion that can never succeed ends in the
// dead-letter table instead of looping.
func (c *finisher) completionFailed(t *task, err error, res finalsWritten) {
	w := c.w
	_, serverErr := errors.AsType[*pgconn.PgError](err)
	if res.partitionMissing || !serverErr {
		w.log.Warn("completing a transactional job failed; its writes are rolled back and it runs again without spending an attempt",
			append(core.JobAttrs(t.job), slog.Bool("history_partition_created", res.partitionCreated), slog.String("error", err.Error()))...)
		delay := w.poll
		if res.partitionCreated {
			delay = 0
		}
		c.add(outcome{task: t, what: oSnooze, delay: delay})
		return
	}
	w.log.Warn("completing a transactional job failed; its writes are rolled back",
		append(core.JobAttrs(t.job), slog.String("error", err.Error()))...)
	c.add(w.failure(t, fmt.Errorf("complete in transaction: %w", err)))
}
