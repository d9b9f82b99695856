package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// payment is a signal's payload.
type payment struct {
	Amount int `json:"amount"`
}

// waitFor is a workflow job of kind noop after refs that waits for signal.
func waitFor(ref, signal string, after ...string) enqueue.WorkflowJob {
	j := wfJob(ref, after...)
	j.WaitFor = signal
	return j
}

// waitUntil returns job id's wait_until: nil while it waits for its
// parents, its deadline while it waits for its signal.
func (b *bundle) waitUntil(t *testing.T, id int64) *time.Time {
	t.Helper()
	var at *time.Time
	if err := b.Pool.QueryRow(b.Ctx, `SELECT wait_until FROM `+b.Table("docket_jobs")+` WHERE id = $1`, id).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

// claimOne claims the ready noop jobs and wants exactly job id among them.
func (b *bundle) claimOne(t *testing.T, id int64) (*core.Job, uuid.UUID) {
	t.Helper()
	w := uuid.New()
	jobs := b.Claim(t, w, 10, time.Minute)
	if len(jobs) != 1 || jobs[0].ID != id {
		t.Fatalf("claimed %d jobs (%v), want job %d alone", len(jobs), jobs, id)
	}
	return jobs[0], w
}

func TestSignalReleasesWaitingStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "order", Jobs: []enqueue.WorkflowJob{
		wfJob("reserve"), waitFor("ship", "payment_captured", "reserve"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	ship := res.Jobs["ship"]
	if b.waitUntil(t, ship) != nil {
		t.Fatal("ship waits for its signal before its parent completed")
	}
	b.finish(t, nil) // reserve
	if got := b.where(t, ship); got != "waiting" {
		t.Fatalf("ship is %s after its parent completed, without its signal", got)
	}
	if at := b.waitUntil(t, ship); at == nil || at.Year() != 9999 {
		t.Fatalf("ship's deadline without a timeout is %v, want 9999-12-31", at)
	}
	if q, err := b.Q.SweepWorkflows(b.Ctx, b.Pool, 100); err != nil || len(q) != 0 || b.where(t, ship) != "waiting" {
		t.Fatalf("the workflow sweep released a step held for its signal: %v %v", q, err)
	}
	if q, err := b.Q.SweepDeadlines(b.Ctx, b.Pool, 100); err != nil || len(q) != 0 {
		t.Fatalf("the deadline sweep took a step without deadline: %v %v", q, err)
	}
	tx, err := b.Pool.Begin(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	sent, err := b.Jobs.Signal(b.Ctx, tx, res.ID, "payment_captured", payment{Amount: 42})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sent.Waiting, []int64{ship}) || !slices.Equal(sent.Released, []int64{ship}) {
		t.Fatalf("Signal reported %+v, want ship %d waiting and released", sent, ship)
	}
	if got := b.where(t, ship); got != "waiting" {
		t.Fatalf("ship is %s before the signal's transaction committed", got)
	}
	if err := tx.Commit(b.Ctx); err != nil {
		t.Fatal(err)
	}
	job, _ := b.claimOne(t, ship)
	var p payment
	if err := job.Signal(&p); err != nil || p.Amount != 42 || job.WaitedFor != "payment_captured" || job.SignalTimedOut {
		t.Fatalf("the step read its signal as %+v, %v (job %+v)", p, err, job)
	}
}

func TestSignalRolledBackSendsNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "order", Jobs: []enqueue.WorkflowJob{
		waitFor("ship", "paid"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := b.Pool.Begin(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Jobs.Signal(b.Ctx, tx, res.ID, "paid", nil); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(b.Ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.where(t, res.Jobs["ship"]); got != "waiting" {
		t.Fatalf("ship is %s after a rolled-back signal", got)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_workflow_signals")); n != 0 {
		t.Fatalf("%d signals stored after a rollback", n)
	}
}

// TestSignalBeforeWaitIsKept sends the signal while the step's parent still
// runs: the step takes it when its parent completes.
func TestSignalBeforeWaitIsKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "early", Jobs: []enqueue.WorkflowJob{
		wfJob("reserve"), waitFor("ship", "paid", "reserve"), waitFor("mail", "paid", "reserve"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	sent, err := b.Jobs.Signal(b.Ctx, b.Pool, res.ID, "paid", map[string]int{"amount": 7})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{res.Jobs["ship"], res.Jobs["mail"]}
	slices.Sort(want)
	if !slices.Equal(sent.Waiting, want) || len(sent.Released) != 0 {
		t.Fatalf("Signal reported %+v, want %v waiting and none released", sent, want)
	}
	b.finish(t, nil) // reserve
	for _, ref := range []string{"ship", "mail"} {
		if got := b.where(t, res.Jobs[ref]); got != "ready" {
			t.Fatalf("%s is %s after its parent completed, its signal sent before", ref, got)
		}
	}
	jobs := b.Claim(t, uuid.New(), 10, time.Minute)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d jobs, want ship and mail", len(jobs))
	}
	for _, j := range jobs {
		var p payment
		if err := j.Signal(&p); err != nil || p.Amount != 7 {
			t.Errorf("job %d read its signal as %+v %v", j.ID, p, err)
		}
	}
}

// TestSignalStepWithoutParents waits for its signal from the enqueue on.
func TestSignalStepWithoutParents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "gate", Jobs: []enqueue.WorkflowJob{
		waitFor("approve", "approved"), wfJob("after", "approve"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.where(t, res.Jobs["approve"]); got != "waiting" {
		t.Fatalf("a step waiting for a signal without parents is %s after enqueue", got)
	}
	if b.Claim(t, uuid.New(), 10, time.Minute) != nil {
		t.Fatal("claimed a job before the signal")
	}
	sent, err := b.Jobs.Signal(b.Ctx, b.Pool, res.ID, "approved", nil)
	if err != nil || !slices.Equal(sent.Released, []int64{res.Jobs["approve"]}) {
		t.Fatalf("Signal: %+v %v", sent, err)
	}
	job, _ := b.claimOne(t, res.Jobs["approve"])
	var p payment
	if err := job.Signal(&p); err != nil || p != (payment{}) {
		t.Fatalf("a signal without payload read as %+v %v", p, err)
	}
}

func TestSignalErrors(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "order", Jobs: []enqueue.WorkflowJob{
		wfJob("reserve"), waitFor("ship", "paid", "reserve"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	done, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "done", Jobs: []enqueue.WorkflowJob{
		{Ref: "only", Args: other{}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pool.Exec(b.Ctx, `DELETE FROM `+b.Table("docket_jobs")+` WHERE workflow_id = $1`, done.ID); err != nil {
		t.Fatal(err)
	}
	cancelled, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "cancelled", Jobs: []enqueue.WorkflowJob{
		waitFor("ship", "paid"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ops.Workflows().Cancel(b.Ctx, b.Pool, cancelled.ID); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		id       int64
		signal   string
		payload  any
		want     error
		sameErrs []error
	}{
		{"unknown workflow", res.ID + 1000, "paid", nil, core.ErrWorkflowNotFound, []error{admin.ErrWorkflowNotFound}},
		{"finished workflow", done.ID, "paid", nil, core.ErrWorkflowFinished, []error{admin.ErrWorkflowFinished}},
		{"cancelled workflow", cancelled.ID, "paid", nil, core.ErrWorkflowFinished, nil},
		{"name no step waits for", res.ID, "refunded", nil, enqueue.ErrSignalNotAwaited, nil},
		{"empty name", res.ID, "", nil, enqueue.ErrInvalidSignal, nil},
		{"name with NUL", res.ID, "pa\x00id", nil, enqueue.ErrInvalidSignal, nil},
		{"payload not JSON", res.ID, "paid", json.RawMessage(`{"a":`), enqueue.ErrInvalidSignal, nil},
		{"payload jsonb cannot hold", res.ID, "paid", json.RawMessage(`{"a":"\u0000"}`), enqueue.ErrInvalidSignal, nil},
		{"payload that does not encode", res.ID, "paid", func() {}, enqueue.ErrInvalidSignal, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			// In a caller's transaction, which stays usable.
			tx, err := b.Pool.Begin(b.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(context.Background())
			_, err = b.Jobs.Signal(b.Ctx, tx, c.id, c.signal, c.payload)
			if !errors.Is(err, c.want) {
				t.Fatalf("Signal returned %v, want %v", err, c.want)
			}
			for _, e := range c.sameErrs {
				if !errors.Is(err, e) {
					t.Errorf("%v is not %v", err, e)
				}
			}
			var one int
			if err := tx.QueryRow(b.Ctx, `SELECT 1`).Scan(&one); err != nil {
				t.Fatalf("the caller's transaction is not usable after the refusal: %v", err)
			}
		})
	}
	if _, err := b.Jobs.Signal(b.Ctx, b.Pool, res.ID, "paid", payment{Amount: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Jobs.Signal(b.Ctx, b.Pool, res.ID, "paid", payment{Amount: 2}); !errors.Is(err, enqueue.ErrSignalSent) {
		t.Fatalf("a second signal of the same name returned %v, want ErrSignalSent", err)
	}
	var stored string
	if err := b.Pool.QueryRow(b.Ctx, `SELECT payload::text FROM `+b.Table("docket_workflow_signals")+` WHERE workflow_id = $1`, res.ID).Scan(&stored); err != nil || stored != `{"amount": 1}` {
		t.Fatalf("stored signals: %q %v, want only the first", stored, err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_workflow_signals")); n != 1 {
		t.Fatalf("%d signals stored, want the one accepted", n)
	}
}

// TestSignalDeadlineFails lets a step's deadline pass (policy fail): one
// sweep of several at once dead-letters it with reason timed_out, and its
// dependent is cancelled.
func TestSignalDeadlineFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	step := waitFor("ship", "paid")
	step.WaitTimeout = 200 * time.Millisecond
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "late", Jobs: []enqueue.WorkflowJob{
		step, wfJob("notify", "ship"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if q, err := b.Q.SweepDeadlines(b.Ctx, b.Pool, 100); err != nil || len(q) != 0 || b.where(t, res.Jobs["ship"]) != "waiting" {
		t.Fatalf("the sweep acted before the deadline: %v %v", q, err)
	}
	time.Sleep(300 * time.Millisecond)
	sweepAtOnce(t, b, 4)
	ship, notify := res.Jobs["ship"], res.Jobs["notify"]
	var reason, lastErr string
	if err := b.Pool.QueryRow(b.Ctx, `SELECT reason, last_error FROM `+b.Table("docket_jobs_dead")+` WHERE id = $1`, ship).Scan(&reason, &lastErr); err != nil {
		t.Fatal(err)
	}
	if reason != admin.ReasonTimedOut {
		t.Errorf("timed-out step dead with reason %q (%s), want timed_out", reason, lastErr)
	}
	if err := b.Pool.QueryRow(b.Ctx, `SELECT reason, last_error FROM `+b.Table("docket_jobs_dead")+` WHERE id = $1`, notify).Scan(&reason, &lastErr); err != nil {
		t.Fatal(err)
	}
	if reason != admin.ReasonCancelled || lastErr != fmt.Sprintf("parent job %d failed", ship) {
		t.Errorf("dependent dead with %q %q", reason, lastErr)
	}
	if _, err := b.Jobs.Signal(b.Ctx, b.Pool, res.ID, "paid", nil); !errors.Is(err, core.ErrWorkflowFinished) {
		t.Errorf("a signal after the workflow failed returned %v", err)
	}
	// Retried from the dead-letter table, the step runs knowing its
	// signal never came.
	if err := b.ops.Jobs().Retry(b.Ctx, b.Pool, ship); err != nil {
		t.Fatal(err)
	}
	job, _ := b.claimOne(t, ship)
	if err := job.Signal(new(payment)); !errors.Is(err, core.ErrSignalTimedOut) {
		t.Errorf("a timed-out step retried from the dead-letter table read its signal as %v", err)
	}
}

// sweepAtOnce runs n deadline sweeps in n transactions at once and wants
// exactly one step handled in all.
func sweepAtOnce(t *testing.T, b *bundle, n int) []string {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var all []string
	start := make(chan struct{})
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			err := pgx.BeginFunc(b.Ctx, b.Pool, func(tx pgx.Tx) error {
				q, err := b.Q.SweepDeadlines(b.Ctx, tx, 100)
				mu.Lock()
				all = append(all, q...)
				mu.Unlock()
				return err
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	return all
}

// TestSignalDeadlineRuns lets a step's deadline pass (policy run): it is
// released once, however many sweeps run, and its handler sees it timed out.
func TestSignalDeadlineRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	step := waitFor("ship", "paid", "reserve")
	step.WaitTimeout, step.OnTimeout = 200*time.Millisecond, enqueue.TimeoutRun
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "late", Jobs: []enqueue.WorkflowJob{
		wfJob("reserve"), step,
	}})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if q, err := b.Q.SweepDeadlines(b.Ctx, b.Pool, 100); err != nil || len(q) != 0 {
		t.Fatalf("the timeout counted before the step's parents completed: %v %v", q, err)
	}
	b.finish(t, nil) // reserve
	at := b.waitUntil(t, res.Jobs["ship"])
	if at == nil || at.Before(time.Now()) || at.After(time.Now().Add(300*time.Millisecond)) {
		t.Fatalf("deadline %v, want 200ms after the parent completed", at)
	}
	time.Sleep(time.Until(*at) + 50*time.Millisecond)
	if got := sweepAtOnce(t, b, 4); !slices.Equal(got, []string{"default"}) {
		t.Fatalf("the sweeps released %v, want the one step once", got)
	}
	job, _ := b.claimOne(t, res.Jobs["ship"])
	var p payment
	if err := job.Signal(&p); !errors.Is(err, core.ErrSignalTimedOut) || !job.SignalTimedOut {
		t.Fatalf("a step released by its timeout read its signal as %v (timed out %v)", err, job.SignalTimedOut)
	}
	if _, err := b.Jobs.Signal(b.Ctx, b.Pool, res.ID, "paid", nil); !errors.Is(err, enqueue.ErrSignalNotAwaited) {
		t.Errorf("a signal after the timeout returned %v, want ErrSignalNotAwaited", err)
	}
}

// TestSignalRacesLastParent sends the signal while the transaction that
// completes the step's last parent is open, in both orders: the step is
// released either way, when the second transaction commits.
func TestSignalRacesLastParent(t *testing.T) {
	t.Parallel()
	for _, signalFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("signal first %v", signalFirst), func(t *testing.T) {
			b := setup(t)
			res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "race", Jobs: []enqueue.WorkflowJob{
				wfJob("reserve"), waitFor("ship", "paid", "reserve"),
			}})
			if err != nil {
				t.Fatal(err)
			}
			w := uuid.New()
			parent := b.Claim(t, w, 10, time.Minute)
			complete := func(tx pgx.Tx) error {
				_, err := b.Q.Complete(b.Ctx, tx, w, []queue.Run{queue.RunOf(parent[0])}, time.Time{})
				return err
			}
			signal := func(tx pgx.Tx) error {
				_, err := b.Jobs.Signal(b.Ctx, tx, res.ID, "paid", nil)
				return err
			}
			first, second := complete, signal
			if signalFirst {
				first, second = signal, complete
			}
			tx1, err := b.Pool.Begin(b.Ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx1.Rollback(context.Background())
			if err := first(tx1); err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() {
				errc <- pgx.BeginFunc(b.Ctx, b.Pool, second)
			}()
			select {
			case err := <-errc:
				t.Fatalf("the second transaction did not wait for the first: %v", err)
			case <-time.After(300 * time.Millisecond):
			}
			if err := tx1.Commit(b.Ctx); err != nil {
				t.Fatal(err)
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			if got := b.where(t, res.Jobs["ship"]); got != "ready" {
				t.Fatalf("ship is %s after its parent and its signal both committed", got)
			}
		})
	}
}

// TestWorkflowDelayAfterParents: a step with Delay is scheduled that long
// after its parent completed, or after its signal came.
func TestWorkflowDelayAfterParents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	remind := wfJob("remind", "ship")
	remind.Delay = time.Hour
	paid := waitFor("receipt", "paid", "ship")
	paid.Delay = 2 * time.Hour
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "timers", Jobs: []enqueue.WorkflowJob{
		wfJob("ship"), remind, paid,
	}})
	if err != nil {
		t.Fatal(err)
	}
	b.finish(t, nil) // ship
	runAt := func(id int64) time.Duration {
		var at time.Time
		if err := b.Pool.QueryRow(b.Ctx, `SELECT run_at FROM `+b.Table("docket_jobs")+` WHERE id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return time.Until(at)
	}
	if got, in := b.where(t, res.Jobs["remind"]), runAt(res.Jobs["remind"]); got != "scheduled" || in < 59*time.Minute || in > time.Hour {
		t.Fatalf("remind is %s, due in %s; want scheduled an hour after its parent", got, in)
	}
	if got := b.where(t, res.Jobs["receipt"]); got != "waiting" {
		t.Fatalf("receipt is %s before its signal", got)
	}
	if _, err := b.Jobs.Signal(b.Ctx, b.Pool, res.ID, "paid", nil); err != nil {
		t.Fatal(err)
	}
	if got, in := b.where(t, res.Jobs["receipt"]), runAt(res.Jobs["receipt"]); got != "scheduled" || in < 119*time.Minute || in > 2*time.Hour {
		t.Fatalf("receipt is %s, due in %s; want scheduled two hours after its signal", got, in)
	}
}

// TestWorkflowRunAtHoldsReleasedStep: RunAt is "until a time" for a step:
// released before it, the step is scheduled for it; after it, ready.
func TestWorkflowRunAtHoldsReleasedStep(t *testing.T) {
	t.Parallel()
	b := setup(t)
	later := time.Now().Add(time.Hour).Truncate(time.Microsecond)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "until", Jobs: []enqueue.WorkflowJob{
		wfJob("a"),
		{Ref: "later", Args: noop{}, Opts: enqueue.Opts{RunAt: later}, After: enqueue.After("a")},
		{Ref: "past", Args: noop{}, Opts: enqueue.Opts{RunAt: time.Now().Add(-time.Hour)}, After: enqueue.After("a")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	b.finish(t, nil) // a
	var at time.Time
	if err := b.Pool.QueryRow(b.Ctx, `SELECT run_at FROM `+b.Table("docket_jobs")+` WHERE id = $1`, res.Jobs["later"]).Scan(&at); err != nil {
		t.Fatal(err)
	}
	if got := b.where(t, res.Jobs["later"]); got != "scheduled" || !at.Equal(later) {
		t.Fatalf("later is %s at %s, want scheduled at its RunAt %s", got, at, later)
	}
	if got := b.where(t, res.Jobs["past"]); got != "ready" {
		t.Fatalf("past is %s, want ready", got)
	}
}

func TestWorkflowWaitValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, j := range map[string]enqueue.WorkflowJob{
		"timeout without signal":  {Ref: "a", Args: noop{}, WaitTimeout: time.Minute},
		"policy without signal":   {Ref: "a", Args: noop{}, OnTimeout: enqueue.TimeoutRun},
		"negative timeout":        {Ref: "a", Args: noop{}, WaitFor: "x", WaitTimeout: -time.Second},
		"negative delay":          {Ref: "a", Args: noop{}, Delay: -time.Second},
		"sub-millisecond timeout": {Ref: "a", Args: noop{}, WaitFor: "x", WaitTimeout: time.Microsecond},
		"signal name with NUL":    {Ref: "a", Args: noop{}, WaitFor: "x\x00"},
		"unknown policy":          {Ref: "a", Args: noop{}, WaitFor: "x", OnTimeout: 7},
	} {
		if _, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "bad", Jobs: []enqueue.WorkflowJob{j}}); !errors.Is(err, enqueue.ErrInvalidWorkflow) {
			t.Errorf("%s: %v, want ErrInvalidWorkflow", name, err)
		}
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_workflows")); n != 0 {
		t.Errorf("%d workflows written by refused enqueues", n)
	}
}

// TestSignalSQL sends signals through database/sql: in a caller's *sql.Tx
// (a refusal leaves it usable), and through a *sql.DB in a transaction of
// its own.
func TestSignalSQL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "sql", Jobs: []enqueue.WorkflowJob{
		waitFor("a", "one"), waitFor("b", "two"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDBFromPool(b.Pool)
	defer db.Close()
	tx, err := db.BeginTx(b.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if sent, err := b.Jobs.SignalSQL(b.Ctx, tx, res.ID, "one", payment{Amount: 3}); err != nil || !slices.Equal(sent.Released, []int64{res.Jobs["a"]}) {
		t.Fatalf("SignalSQL in a transaction: %+v %v", sent, err)
	}
	if _, err := b.Jobs.SignalSQL(b.Ctx, tx, res.ID, "one", nil); !errors.Is(err, enqueue.ErrSignalSent) {
		t.Fatalf("second SignalSQL: %v, want ErrSignalSent", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("the transaction is not usable after the refusal: %v", err)
	}
	if _, err := b.Jobs.SignalSQL(b.Ctx, db, res.ID, "two", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Jobs.SignalSQL(b.Ctx, db, res.ID+1000, "two", nil); !errors.Is(err, core.ErrWorkflowNotFound) {
		t.Fatalf("SignalSQL to an unknown workflow: %v", err)
	}
	jobs := b.Claim(t, uuid.New(), 10, time.Minute)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d jobs after both signals, want 2", len(jobs))
	}
	for _, j := range jobs {
		var p payment
		if err := j.Signal(&p); err != nil || (j.ID == res.Jobs["a"]) != (p.Amount == 3) {
			t.Errorf("job %d read %+v %v", j.ID, p, err)
		}
	}
}
