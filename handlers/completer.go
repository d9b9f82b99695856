package handlers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/docketq/docket/internal/queue"
)

// What a finished run asks for.
type outcomeKind uint8

const (
	oComplete outcomeKind = iota
	oFail
	oSnooze
	oDead
	oRelease
)

// outcome is one job's result waiting to be written.
type outcome struct {
	ex     *task
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

// completer buffers outcomes briefly and writes them in batches: one
// statement per kind of outcome per flush, each fenced by the claim of the
// run it speaks for, so a run this process lost changes nothing, even when
// this process has claimed the job again since.
type completer struct {
	w        *Worker
	interval time.Duration

	mu  sync.Mutex
	buf []outcome

	kick chan struct{} // a flusher should look at buf
	done chan struct{} // closed by close: drain and exit
	// stopCtx bounds the final drain's retries; set before done is closed.
	stopCtx context.Context
	wg      sync.WaitGroup
}

func newCompleter(w *Worker, interval time.Duration) *completer {
	return &completer{w: w, interval: interval, kick: make(chan struct{}, 1), done: make(chan struct{})}
}

func (c *completer) start() {
	c.wg.Add(flushers)
	for range flushers {
		go c.loop()
	}
}

// add queues an outcome. The task's state must already be stFinishing or
// stReleased.
func (c *completer) add(o outcome) {
	c.mu.Lock()
	c.buf = append(c.buf, o)
	n := len(c.buf)
	c.mu.Unlock()
	if n == 1 || n == flushEarly {
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
}

// close writes everything pending, retrying failed writes until ctx ends,
// and returns when the flushers have exited.
func (c *completer) close(ctx context.Context) {
	c.stopCtx = ctx
	close(c.done)
	c.wg.Wait()
}

func (c *completer) loop() {
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
		if c.interval > 0 && c.pending() < flushEarly {
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
func (c *completer) ctx() context.Context {
	select {
	case <-c.done:
		return c.stopCtx
	default:
		return context.Background()
	}
}

func (c *completer) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf)
}

// take swaps the buffer with spare, the caller's previous batch, and
// returns what was buffered. The caller owns the returned slice until it
// passes it back as spare; when nothing is buffered, nothing is swapped.
func (c *completer) take(spare []outcome) []outcome {
	clear(spare)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.buf) == 0 {
		return spare[:0]
	}
	b := c.buf
	c.buf = spare[:0]
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
	dropped      []*task
	wake         []*pool
	hooked       []outcome // final outcomes of kinds with an OutcomeHook
}

func (f *flushScratch) reset() {
	clear(f.complete)
	clear(f.failed)
	clear(f.snoozed)
	clear(f.dead)
	clear(f.released)
	clear(f.dropped)
	clear(f.wake)
	clear(f.hooked)
	f.wake, f.hooked = f.wake[:0], f.hooked[:0]
	f.completeRuns, f.complete = f.completeRuns[:0], f.complete[:0]
	f.fails, f.failed = f.fails[:0], f.failed[:0]
	f.snoozes, f.snoozed = f.snoozes[:0], f.snoozed[:0]
	f.deads, f.dead = f.deads[:0], f.dead[:0]
	f.releaseRuns, f.released = f.releaseRuns[:0], f.released[:0]
	f.dropped = f.dropped[:0]
}

// flush writes one batch. stop is the final drain's deadline, or
// Background while running (retries then end when the jobs' leases would
// have expired anyway).
func (c *completer) flush(stop context.Context, f *flushScratch, batch []outcome) {
	w := c.w
	f.reset()
	var due time.Duration = -1
	for i := range batch {
		o := &batch[i]
		run := queue.RunOf(o.ex.job)
		if st := o.ex.state.Load(); st != stFinishing && st != stReleased {
			f.dropped = append(f.dropped, o.ex) // lost while waiting here
			continue
		}
		if hooked(o) {
			f.hooked = append(f.hooked, *o) // written by writeHooked
			continue
		}
		switch o.what {
		case oComplete:
			f.completeRuns, f.complete = append(f.completeRuns, run), append(f.complete, o.ex)
		case oFail:
			f.fails, f.failed = append(f.fails, queue.Failure{Run: run, Error: o.err, Delay: o.delay}), append(f.failed, o.ex)
		case oSnooze:
			f.snoozes, f.snoozed = append(f.snoozes, queue.Snoozed{Run: run, Delay: o.delay}), append(f.snoozed, o.ex)
		case oDead:
			f.deads, f.dead = append(f.deads, queue.Dead{Run: run, Reason: o.reason, Error: o.err}), append(f.dead, o.ex)
		case oRelease:
			f.releaseRuns, f.released = append(f.releaseRuns, run), append(f.released, o.ex)
		}
		if o.what == oFail || o.what == oSnooze {
			if o.delay <= 0 {
				// Ready at once: nobody announces it, so wake its pool.
				f.wake = append(f.wake, o.ex.pool)
			} else if due < 0 || o.delay < due {
				due = o.delay
			}
		}
	}
	if len(f.dropped) > 0 {
		w.inflight.remove(f.dropped...)
	}
	qu, db, me := w.q, w.db, w.id
	if len(f.complete) > 0 {
		c.write(stop, "complete", f.complete, func(ctx context.Context) ([]int64, error) {
			return qu.Complete(ctx, db, me, f.completeRuns, w.finishTime())
		})
	}
	if len(f.failed) > 0 {
		c.write(stop, "fail", f.failed, func(ctx context.Context) ([]int64, error) {
			res, err := qu.Fail(ctx, db, me, f.fails)
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
			return qu.Snooze(ctx, db, me, f.snoozes)
		})
	}
	if len(f.dead) > 0 {
		c.write(stop, "dead-letter", f.dead, func(ctx context.Context) ([]int64, error) {
			return qu.DeadLetter(ctx, db, me, f.deads)
		})
	}
	if len(f.released) > 0 {
		c.write(stop, "release", f.released, func(ctx context.Context) ([]int64, error) {
			return qu.Release(ctx, db, me, f.releaseRuns)
		})
	}
	if len(f.hooked) > 0 {
		c.writeHooked(stop, f.hooked)
	}
	if due >= 0 {
		w.noteDue(due)
	}
	for _, p := range f.wake {
		p.signal()
	}
}

// write runs one outcome statement, retrying failures with backoff until it
// succeeds or there is no point in going on: every run of execs is known
// lost (the heartbeat learned that its job was reaped, or this process
// claimed it again), their leases ran out by the local clock (the heartbeat
// keeps extending them while the database answers; once they run out the
// jobs may be reaped and run again: at-least-once), writes kept failing for
// maxWriteLeases leases, or the final drain's deadline passed. A late write
// is harmless: the statement is fenced by each run's claim. Runs missing
// from the result were lost; their outcome is dropped.
func (c *completer) write(stop context.Context, what string, execs []*task, op func(context.Context) ([]int64, error)) {
	w := c.w
	wait := 20 * time.Millisecond
	bound := time.Now().Add(maxWriteLeases * w.lease)
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(stop, w.lease)
		ids, err := op(ctx)
		cancel()
		if err == nil {
			if len(ids) < len(execs) {
				c.logLost(what, execs, ids)
			}
			w.inflight.remove(execs...)
			return
		}
		now := time.Now()
		current, leased := stillPending(execs, now)
		if !current {
			w.log.Warn("dropping job outcomes that could not be written: their runs were lost meanwhile",
				slog.String("outcome", what), slog.Int("jobs", len(execs)), slog.String("error", err.Error()))
			w.inflight.remove(execs...)
			return
		}
		if stop.Err() != nil || !leased || now.After(bound) {
			w.log.Error("giving up writing job outcomes; the jobs will be reaped and run again",
				slog.String("outcome", what), slog.Int("jobs", len(execs)), slog.Int("attempts", attempt),
				slog.String("error", err.Error()))
			w.inflight.remove(execs...)
			return
		}
		if attempt == 1 {
			w.log.Warn("writing job outcomes failed; retrying", slog.String("outcome", what),
				slog.Int("jobs", len(execs)), slog.String("error", err.Error()))
		}
		select {
		case <-time.After(wait):
		case <-stop.Done():
		}
		wait = min(2*wait, time.Second)
	}
}

// maxWriteLeases bounds, in leases, how long one outcome write is retried
// while the database answers but refuses it.
const maxWriteLeases = 3

// stillPending reports whether some run of execs still waits for its
// outcome (not lost meanwhile), and whether one of those still holds its
// lease by the local clock.
func stillPending(execs []*task, now time.Time) (current, leased bool) {
	for _, e := range execs {
		if st := e.state.Load(); st == stFinishing || st == stReleased {
			current = true
			if !e.leaseExpired(now) {
				leased = true
			}
		}
	}
	return current, leased
}

func (c *completer) logLost(what string, execs []*task, ids []int64) {
	got := make(map[int64]bool, len(ids))
	for _, id := range ids {
		got[id] = true
	}
	for _, e := range execs {
		if !got[e.job.ID] {
			e.state.Store(stLost)
			c.w.log.Warn("outcome dropped: the job's lease was lost to another worker",
				append(JobAttrs(e.job), slog.String("outcome", what))...)
		}
	}
}

func (c *completer) logDead(execs []*task, dead []int64) {
	byID := make(map[int64]*task, len(execs))
	for _, e := range execs {
		byID[e.job.ID] = e
	}
	for _, id := range dead {
		if e := byID[id]; e != nil {
			c.w.log.Error("job dead-lettered: attempts exhausted",
				append(JobAttrs(e.job), slog.Int("max_attempts", e.job.MaxAttempts))...)
		}
	}
}
