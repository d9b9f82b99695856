package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	"github.com/docketq/docket/internal/engine/core"
)

// maxErrorLen bounds the error text recorded on a job.
const maxErrorLen = 16 << 10

// errJobDone cancels a handler's context once its job's run is over.
var errJobDone = errors.New("docket: job run finished")

// run executes one claimed job in the calling slot. It reports whether
// the job got that far: false for one released at shutdown or lost before
// it started, which took the slot no time.
func (w *Worker) run(t *task) bool {
	if w.stopping.Load() {
		// Claimed but not started when shutdown began: hand it back now.
		if t.state.CompareAndSwap(stRunning, stReleased) {
			w.fin.add(outcome{task: t, what: oRelease})
		}
		return false
	}
	t.started.Store(true) // before the state: see task.started
	if t.state.Load() != stRunning {
		return false // lost or given back before it started
	}
	w.tracing.start(t)
	defer endSpan(t)
	// Whatever the handler left running with its context ends with the job.
	defer t.cancel(errJobDone)
	// An earlier run of this job that this process lost may still be in its
	// handler: the two must not overlap.
	waited, ok := w.executing.enter(t.ctx, t.job.ID)
	if waited {
		w.log.Warn("job claimed again while a lost run of it was still in its handler here; waited for that run to return",
			core.JobAttrs(t.job)...)
	}
	if !ok {
		w.finish(t, context.Cause(t.ctx), false)
		return true
	}
	defer w.executing.leave(t.job.ID)
	if t.kind == nil {
		// Cannot happen: the claim names only registered kinds.
		w.log.Error("claimed a job of an unregistered kind; releasing it", core.JobAttrs(t.job)...)
		if t.state.CompareAndSwap(stRunning, stReleased) {
			w.fin.add(outcome{task: t, what: oRelease})
		}
		return true
	}
	if t.kind.tx {
		w.runInTx(t)
		return true
	}
	timedOut, err := w.call(t, nil)
	w.finish(t, err, timedOut)
	return true
}

// call runs the kind's middleware chain and handler with the kind's timeout,
// turning panics into *core.PanicError. run is a transactional handler's
// run (its transaction), nil for others.
func (w *Worker) call(t *task, run *core.TxRun) (timedOut bool, err error) {
	ctx := withSpan(t.ctx, t)
	if d := t.kind.opts.Timeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d, core.ErrTimeout)
		defer cancel()
	}
	if run != nil {
		ctx = core.WithTxRun(ctx, run)
	}
	start := time.Now()
	defer func() {
		t.kind.met.ran(time.Since(start))
		if v := recover(); v != nil { // a middleware panicked
			err = &core.PanicError{Value: v, Stack: debug.Stack()}
		}
		timedOut = err != nil && errors.Is(context.Cause(ctx), core.ErrTimeout)
	}()
	return false, t.kind.work(ctx, t.job)
}

// runInTx runs a transactional job on a connection held for its whole
// run: a transaction that holds the handler's writes and the job's
// completion.
func (w *Worker) runInTx(t *task) {
	select {
	case w.connSem <- struct{}{}:
		defer func() { <-w.connSem }()
	case <-t.ctx.Done():
		w.finish(t, context.Cause(t.ctx), false)
		return
	}
	tx, err := w.db.Begin(t.ctx)
	if err != nil {
		w.finish(t, fmt.Errorf("begin transaction: %w", err), false)
		return
	}
	done := false
	rollback := func() {
		if done {
			return
		}
		done = true
		ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), 5*time.Second)
		defer cancel()
		_ = tx.Rollback(ctx) // a broken connection is discarded by the pool
	}
	defer rollback()
	run := &core.TxRun{Tx: tx, JobID: t.job.ID, ClaimID: t.job.ClaimID}
	timedOut, err := w.call(t, run)
	if err != nil || cancelled(t) {
		rollback() // the handler's writes, a child workflow among them
		w.finish(t, err, timedOut)
		return
	}
	// A transactional handler succeeded: complete the job in its
	// transaction, or park it there to wait for the child workflow the
	// handler enqueued in it. From here on the heartbeat leaves the job
	// alone.
	if !t.state.CompareAndSwap(stRunning, stFinishing) {
		rollback()
		w.dropped(t)
		return
	}
	// Recorded before the completion commits: should it fail, the job's
	// next run has a span of its own.
	if run.Child() > 0 {
		traceOutcome(t, "parked", nil)
	} else {
		traceOutcome(t, "completed", nil)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), w.lease)
	defer cancel()
	done = true // completeInTx commits or rolls back
	w.fin.completeInTx(ctx, tx, t, run.Child())
}

// finish turns a handler's result into an outcome and queues it, unless
// the job was lost or released meanwhile.
func (w *Worker) finish(t *task, err error, timedOut bool) {
	if t.state.Load() != stRunning {
		w.dropped(t)
		return
	}
	o := w.classify(t, err, timedOut)
	if !t.state.CompareAndSwap(stRunning, stFinishing) {
		w.dropped(t)
		return
	}
	if o.what == oComplete && t.kind != nil && t.kind.met != nil {
		t.kind.met.completed()
	} else {
		w.met.outcome(t.job.Kind, outcomeName(o))
	}
	traceOutcome(t, tracedOutcome(o), err)
	w.fin.add(o)
}

func (w *Worker) dropped(t *task) {
	traceOutcome(t, "lost", nil)
	w.log.Warn("outcome dropped: the job was lost or released while its handler ran", core.JobAttrs(t.job)...)
}

// cancelled reports whether the worker learnt that an operator cancelled
// t's job while it ran (see Worker.cancelRequested).
func cancelled(t *task) bool { return t.cancelSeen.Load() }

// classify maps a handler's result to what happens to the job.
func (w *Worker) classify(t *task, err error, timedOut bool) outcome {
	if cancelled(t) {
		// Whatever the handler returned: the job can only end cancelled.
		return outcome{task: t, what: oCancelled}
	}
	if err == nil {
		return outcome{task: t, what: oComplete}
	}
	if errors.Is(context.Cause(t.ctx), core.ErrShutdown) {
		return outcome{task: t, what: oRelease}
	}
	var (
		ce *core.CancelError
		se *core.SnoozeError
		de *core.DecodeError
		re *core.RetryAfterError
		pe *core.PanicError
	)
	switch {
	case errors.As(err, &ce):
		msg := cleanError(recorded(err, ce, ce.Err))
		w.log.Warn("job cancelled by its handler; dead-lettering it", append(core.JobAttrs(t.job), slog.String("error", msg))...)
		return outcome{task: t, what: oDead, reason: core.ReasonCancelled, err: msg}
	case errors.As(err, &se):
		return outcome{task: t, what: oSnooze, delay: max(se.Delay, 0)}
	case errors.As(err, &de):
		w.log.Error("job payload does not decode; dead-lettering it",
			append(core.JobAttrs(t.job), slog.String("error", de.Error()))...)
		return outcome{task: t, what: oDead, reason: core.ReasonUndecodable, err: cleanError(de.Error())}
	case errors.As(err, &re):
		return w.failureAfter(t, errors.New(recorded(err, re, re.Err)), max(re.Delay, 0))
	case errors.As(err, &pe):
		w.log.Error("job handler panicked",
			append(core.JobAttrs(t.job), slog.String("panic", fmt.Sprint(pe.Value)), slog.String("stack", string(pe.Stack)))...)
		// The stack is logged above; the failure's log line gets the first line.
		return w.failure(t, err)
	case timedOut:
		err = fmt.Errorf("timed out after %s: %w", t.kind.opts.Timeout, err)
	}
	return w.failure(t, err)
}

// failure records a failed attempt, retried after the kind's backoff.
func (w *Worker) failure(t *task, err error) outcome {
	return w.failureAfter(t, err, t.kind.opts.Backoff(t.job.Attempt))
}

// failureAfter records a failed attempt to be retried after delay, or a
// dead job when this was its last attempt by the job's stored limit: the
// kind's MaxAttempts was only the default written at enqueue, and the
// finishing statement and the reaper read the same stored limit.
func (w *Worker) failureAfter(t *task, err error, delay time.Duration) outcome {
	msg := cleanError(err.Error())
	logged := msg
	if _, ok := errors.AsType[*core.PanicError](err); ok {
		logged, _, _ = strings.Cut(msg, "\n")
	}
	j := t.job
	if j.Attempt >= j.MaxAttempts {
		w.log.Error("job failed on its last attempt; dead-lettering it",
			append(core.JobAttrs(j), slog.String("error", logged))...)
		return outcome{task: t, what: oDead, reason: core.ReasonExhausted, err: msg}
	}
	w.log.Warn("job failed; will retry", append(core.JobAttrs(j), slog.Duration("retry_in", delay), slog.String("error", logged))...)
	return outcome{task: t, what: oFail, delay: delay, err: msg}
}

// recorded is the error text to store for a typed error: the wrapped cause
// when the handler returned the typed error itself (its kind is recorded
// elsewhere), the whole text when the handler wrapped it in more context.
func recorded(err, typed, cause error) string {
	if err == typed {
		return cause.Error()
	}
	return err.Error()
}

// cleanError makes an error text storable in a text column (valid UTF-8, no
// NUL) and bounds its length.
func cleanError(s string) string {
	if len(s) > maxErrorLen {
		s = s[:maxErrorLen] + " …(truncated)"
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
