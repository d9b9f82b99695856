package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// cancelRun is what a test handler saw of its run: that it started, and
// the cause its context was cancelled with.
type cancelRun struct {
	started chan struct{}
	cause   chan error
	release chan struct{} // closed by the test: a handler that ignores ctx returns
}

func newCancelRun() *cancelRun {
	return &cancelRun{started: make(chan struct{}), cause: make(chan error, 1), release: make(chan struct{})}
}

func (r *cancelRun) waitStarted(t *testing.T) {
	t.Helper()
	select {
	case <-r.started:
	case <-time.After(10 * time.Second):
		t.Fatal("handler did not start")
	}
}

// cancel asks for job id's cancellation and checks that it was running.
func (e *env) cancel(id int64, note string) {
	e.t.Helper()
	running, err := e.ops.Jobs().Cancel(e.t.Context(), e.pool, id, note)
	if err != nil || !running {
		e.t.Fatalf("cancel running job %d: running %v, %v", id, running, err)
	}
}

// requireCancelled checks that job id ended in the dead-letter table with
// reason cancelled and note as its error, and never completed.
func (e *env) requireCancelled(id int64, note string) {
	e.t.Helper()
	e.waitWhere(id, "dead", 10*time.Second)
	if d := e.dead(id); d.reason != core.ReasonCancelled || d.lastError != note {
		e.t.Errorf("dead job %d: reason %q error %q, want cancelled with %q", id, d.reason, d.lastError, note)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE id = $1`, id); n != 0 {
		e.t.Errorf("cancelled job %d also completed", id)
	}
}

// A running job cancelled by an operator: its handler's context is
// cancelled with ErrCancelled through the notification (the heartbeat is 10
// s away), and the job is dead-lettered with the operator's note, keeping
// the progress it reported.
func TestCancelRunningJob(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	run := newCancelRun()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		if err := handlers.SetProgress(ctx, map[string]int{"done": 3}, "3 of 10"); err != nil {
			return err
		}
		close(run.started)
		<-ctx.Done()
		run.cause <- context.Cause(ctx)
		return ctx.Err()
	}, handlers.KindOpts{})
	e.worker(reg, Config{Lease: 30 * time.Second})
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	run.waitStarted(t)
	// The progress is written first, so that the dead letter can keep it.
	waitFor(t, 5*time.Second, "progress written", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = $1 AND progress IS NOT NULL`, id) == 1
	})
	start := time.Now()
	e.cancel(id, "no longer needed")
	select {
	case cause := <-run.cause:
		if !errors.Is(cause, handlers.ErrCancelled) {
			t.Errorf("handler's context cancelled with %v, want ErrCancelled", cause)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("handler cancelled %s after the request, want within 1s", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler's context not cancelled")
	}
	e.requireCancelled(id, "no longer needed")
	j, err := e.ops.Jobs().Get(t.Context(), e.pool, id, false)
	if err != nil || j.Progress == nil || string(j.Progress.Value) != `{"done": 3}` || j.Progress.Message != "3 of 10" {
		t.Errorf("dead job's progress: %+v %v", j.Progress, err)
	}
	// Cancelling it again changes nothing.
	if running, err := e.ops.Jobs().Cancel(t.Context(), e.pool, id, "again"); err != nil || running {
		t.Errorf("cancel of the dead job: running %v, %v", running, err)
	}
}

// A cancel request fences the run: with notifications off and the next
// heartbeat 10 s away, the worker does not hear of it before the handler
// returns, yet whatever the handler returns (nil, a failure with attempts
// left, a snooze) the job ends cancelled, never completed or back in line.
func TestCancelRefusesOutcome(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	results := map[string]error{
		"complete": nil,
		"fail":     errors.New("boom"),
		"snooze":   handlers.Snooze(0),
	}
	runs := map[string]*cancelRun{}
	for name := range results {
		runs[name] = newCancelRun()
	}
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[namedArgs]) error {
		r := runs[j.Args.Name]
		close(r.started)
		<-r.release // ignores ctx
		if err := context.Cause(ctx); err != nil {
			t.Errorf("%s: handler's context cancelled (%v) though the worker was not told", j.Args.Name, err)
		}
		return results[j.Args.Name]
	}, handlers.KindOpts{})
	e.worker(reg, Config{Lease: 30 * time.Second, DisableNotify: true})
	for name, r := range runs {
		id := e.enqueue(namedArgs{Name: name}, enqueue.Opts{})
		r.waitStarted(t)
		e.cancel(id, "stop "+name)
		close(r.release)
		e.requireCancelled(id, "stop "+name)
	}
}

type namedArgs struct{ Name string }

func (namedArgs) Kind() string { return "named" }

// A transactional handler that ignores the cancel request cannot commit its
// writes: told by the notification (its context is cancelled, it returns
// nil anyway) or not told at all (notifications off: its completion, in its
// transaction, is refused), its writes roll back and the job ends cancelled.
func TestCancelTxHandlerRollsBack(t *testing.T) {
	t.Parallel()
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprintf("notify=%v", notify), func(t *testing.T) {
			t.Parallel()
			e := setup(t, 10)
			e.exec(`CREATE TABLE {{schema}}.tx_effects (job_id bigint)`)
			run := newCancelRun()
			reg := handlers.NewRegistry()
			handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[testArgs]) error {
				if _, err := tx.Exec(ctx, e.sql(`INSERT INTO {{schema}}.tx_effects VALUES ($1)`), j.ID); err != nil {
					return err
				}
				close(run.started)
				<-run.release
				return nil
			}, handlers.KindOpts{})
			w := e.worker(reg, Config{Lease: 30 * time.Second, DisableNotify: !notify})
			id := e.enqueue(testArgs{}, enqueue.Opts{})
			run.waitStarted(t)
			e.cancel(id, "stop")
			if notify {
				waitFor(t, 5*time.Second, "the handler's context cancelled", func() bool {
					t := w.inflight.get(id)
					return t != nil && cancelled(t)
				})
			}
			close(run.release)
			e.requireCancelled(id, "stop")
			if n := e.count(`SELECT count(*) FROM {{schema}}.tx_effects`); n != 0 {
				t.Errorf("the cancelled transactional handler's writes committed (%d rows)", n)
			}
		})
	}
}

// Without notifications the worker learns of a cancel request from its
// next heartbeat.
func TestCancelByHeartbeat(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	run := newCancelRun()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		close(run.started)
		<-ctx.Done()
		run.cause <- context.Cause(ctx)
		return nil // ignored: the job is cancelled
	}, handlers.KindOpts{})
	e.worker(reg, Config{Lease: 3 * time.Second, DisableNotify: true})
	id := e.enqueue(testArgs{}, enqueue.Opts{})
	run.waitStarted(t)
	start := time.Now()
	e.cancel(id, "stop")
	select {
	case cause := <-run.cause:
		if !errors.Is(cause, handlers.ErrCancelled) {
			t.Errorf("cause %v, want ErrCancelled", cause)
		}
		// One heartbeat interval (a third of the lease) and its statement.
		if took := time.Since(start); took > 1500*time.Millisecond {
			t.Errorf("cancelled after %s, want within a heartbeat interval", took)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler's context not cancelled by the heartbeat")
	}
	e.requireCancelled(id, "stop")
}

// A job whose worker is gone (crashed: no heartbeat) and that an operator
// cancelled is dead-lettered as cancelled by the reaper once its lease
// expires, not retried, though it has attempts left. A job without a
// request is retried as before.
func TestReaperDeadLettersCancelledJob(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	cancelled := e.enqueue(testArgs{}, enqueue.Opts{})
	plain := e.enqueue(testArgs{}, enqueue.Opts{})
	gone := uuid.New()
	jobs, err := e.q.Claim(t.Context(), e.pool, queue.ClaimParams{Worker: gone, Queues: []string{"default"}, Kinds: []string{"test"}, Limit: 2, Lease: 100 * time.Millisecond})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("claim: %d jobs, %v", len(jobs), err)
	}
	e.cancel(cancelled, "operator gave up")
	time.Sleep(200 * time.Millisecond)
	res, err := e.q.Reap(t.Context(), e.pool, 100)
	if err != nil || res.Dead != 1 || res.Requeued != 1 {
		t.Fatalf("reap: %+v %v, want 1 dead and 1 requeued", res, err)
	}
	if d := e.dead(cancelled); d.reason != core.ReasonCancelled || d.lastError != "operator gave up" || d.attempts != 1 {
		t.Errorf("reaped cancelled job: %+v", d)
	}
	if got := e.where(plain); got != "ready" {
		t.Errorf("reaped job without a request is %s, want ready", got)
	}
}

// A worker told to cancel a job it does not run (any more) does nothing.
func TestCancelRequestForJobNotHeld(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error { return nil }, handlers.KindOpts{})
	w := e.worker(reg, Config{})
	w.cancelRequested(12345) // nothing in flight: no panic, nothing logged
	w.notified("cancel 12345")
	w.notified("cancel not-a-number")
	if e.logs.contains("cancelled by an operator") {
		t.Error("worker acted on a cancel request for a job it does not hold")
	}
}

// procCancelArgs is the kind of the cross-process cancel test: its handler
// waits for its context (or ignores it and returns nil after a while),
// recording in cancel_effects when it started and stopped, by this host's
// clock, and why it stopped.
type procCancelArgs struct{ IgnoreCtx bool }

func (procCancelArgs) Kind() string { return "proc_cancel" }

func registerCancelKinds(reg *handlers.Registry, pool *pgxpool.Pool, schema string) {
	insert := fmt.Sprintf(`INSERT INTO %s.cancel_effects (job_id, what, at_ns) VALUES ($1, $2, $3)`, schema)
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[procCancelArgs]) error {
		record := func(what string) error {
			_, err := pool.Exec(context.WithoutCancel(ctx), insert, j.ID, what, time.Now().UnixNano())
			return err
		}
		if err := record("started"); err != nil {
			return err
		}
		if j.Args.IgnoreCtx {
			time.Sleep(500 * time.Millisecond)
			return record("returned")
		}
		<-ctx.Done()
		at := time.Now()
		_, err := pool.Exec(context.WithoutCancel(ctx), insert, j.ID, "stopped: "+context.Cause(ctx).Error(), at.UnixNano())
		return errors.Join(err, ctx.Err())
	}, handlers.KindOpts{})
}

// An operator in this process cancels jobs running in a worker process:
// each handler's context is cancelled within a second (p99 of 100 tries;
// the process's heartbeat is 10 s away, so the notification does it), and
// a handler that ignores its context and returns nil still ends cancelled.
func TestCancelAcrossProcesses(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	e.exec(`CREATE TABLE {{schema}}.cancel_effects (job_id bigint NOT NULL, what text NOT NULL, at_ns bigint NOT NULL)`)
	startProcess(t, pgtest.URL(t), e.schema, envLease+"=30000")
	effect := func(id int64, prefix string) (what string, at time.Time, ok bool) {
		ctx, cancel := queryCtx()
		defer cancel()
		var ns int64
		err := e.pool.QueryRow(ctx, e.sql(`SELECT what, at_ns FROM {{schema}}.cancel_effects
			WHERE job_id = $1 AND starts_with(what, $2)`), id, prefix).Scan(&what, &ns)
		if err != nil {
			return "", time.Time{}, false
		}
		return what, time.Unix(0, ns), true
	}
	waitEffect := func(id int64, prefix string) (string, time.Time) {
		t.Helper()
		var what string
		var at time.Time
		waitFor(t, 10*time.Second, fmt.Sprintf("job %d: %s", id, prefix), func() bool {
			var ok bool
			what, at, ok = effect(id, prefix)
			return ok
		})
		return what, at
	}
	const tries = 100
	lat := make([]time.Duration, 0, tries)
	for range tries {
		id := e.enqueue(procCancelArgs{}, enqueue.Opts{})
		waitEffect(id, "started")
		start := time.Now()
		e.cancel(id, "stop")
		what, at := waitEffect(id, "stopped")
		if what != "stopped: "+handlers.ErrCancelled.Error() {
			t.Fatalf("job %d: handler %s, want stopped by ErrCancelled", id, what)
		}
		lat = append(lat, at.Sub(start))
		e.requireCancelled(id, "stop")
	}
	slices.Sort(lat)
	p := func(q float64) time.Duration { return lat[int(q*float64(len(lat)-1))] }
	t.Logf("cancel to handler's context cancelled, %d tries across processes: min %s p50 %s p90 %s p99 %s max %s",
		len(lat), lat[0], p(0.5), p(0.9), p(0.99), lat[len(lat)-1])
	if p(0.99) > time.Second {
		t.Errorf("p99 %s, want within 1s", p(0.99))
	}

	id := e.enqueue(procCancelArgs{IgnoreCtx: true}, enqueue.Opts{})
	waitEffect(id, "started")
	e.cancel(id, "stop anyway")
	waitEffect(id, "returned")
	e.requireCancelled(id, "stop anyway")
}

// A running workflow job cancelled by an operator cancels its dependents,
// as any failed parent does; a RunAnyway dependent runs.
func TestCancelRunningWorkflowParent(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	run := newCancelRun()
	ran := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[namedArgs]) error {
		if j.Args.Name == "parent" {
			close(run.started)
			<-ctx.Done()
			return nil
		}
		ran.add(j.ID)
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{Lease: 30 * time.Second})
	res, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "cancelled mid-run", Jobs: []enqueue.WorkflowJob{
		{Ref: "parent", Args: namedArgs{Name: "parent"}},
		{Ref: "child", Args: namedArgs{Name: "child"}, After: enqueue.After("parent")},
		{Ref: "report", Args: namedArgs{Name: "report"}, After: []enqueue.Dependency{{Ref: "parent", RunAnyway: true}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	run.waitStarted(t)
	e.cancel(res.Jobs["parent"], "stop")
	e.requireCancelled(res.Jobs["parent"], "stop")
	e.waitWhere(res.Jobs["child"], "dead", 10*time.Second)
	if d := e.dead(res.Jobs["child"]); d.reason != core.ReasonCancelled {
		t.Errorf("child dead as %+v, want cancelled", d)
	}
	e.waitWhere(res.Jobs["report"], "done", 10*time.Second)
	if n := ran.get(res.Jobs["child"]); n != 0 {
		t.Errorf("child ran %d times", n)
	}
}

// A job of a kind with an outcome hook that an operator cancels while it
// runs reaches the hook as dead, in the transaction that dead-letters it,
// whether the worker was told (notify) or its completion was refused.
func TestCancelRunningHookedJob(t *testing.T) {
	t.Parallel()
	for _, notify := range []bool{true, false} {
		t.Run(fmt.Sprintf("notify=%v", notify), func(t *testing.T) {
			t.Parallel()
			e := setup(t, 10)
			e.exec(`CREATE TABLE {{schema}}.hook_log (job_id bigint, outcome text)`)
			run := newCancelRun()
			reg := handlers.NewRegistry()
			handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
				close(run.started)
				<-run.release // ignores ctx
				return nil
			}, handlers.KindOpts{})
			hook := func(ctx context.Context, tx pgx.Tx, done, dead []*core.Job) error {
				for _, j := range done {
					if _, err := tx.Exec(ctx, e.sql(`INSERT INTO {{schema}}.hook_log VALUES ($1, 'done')`), j.ID); err != nil {
						return err
					}
				}
				for _, j := range dead {
					if _, err := tx.Exec(ctx, e.sql(`INSERT INTO {{schema}}.hook_log VALUES ($1, 'dead')`), j.ID); err != nil {
						return err
					}
				}
				return nil
			}
			w := e.worker(reg, Config{Lease: 30 * time.Second, DisableNotify: !notify, Hooks: map[string]OutcomeHook{"test": hook}})
			id := e.enqueue(testArgs{}, enqueue.Opts{})
			run.waitStarted(t)
			e.cancel(id, "stop")
			if notify {
				waitFor(t, 5*time.Second, "the worker told", func() bool {
					t := w.inflight.get(id)
					return t != nil && cancelled(t)
				})
			}
			close(run.release)
			e.requireCancelled(id, "stop")
			if n := e.count(`SELECT count(*) FROM {{schema}}.hook_log WHERE job_id = $1 AND outcome = 'dead'`, id); n != 1 {
				t.Errorf("hook saw the cancelled job dead %d times, want 1", n)
			}
			if n := e.count(`SELECT count(*) FROM {{schema}}.hook_log`); n != 1 {
				t.Errorf("%d hook rows, want 1", n)
			}
		})
	}
}
