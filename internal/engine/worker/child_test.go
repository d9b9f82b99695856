package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5"
)

// parentArgs is a step whose transactional handler enqueues a child
// workflow of Children wf_step jobs, a chain in that order.
type parentArgs struct {
	Children []string `json:"children"`
	// FailFirst makes the first attempt fail after enqueueing its child.
	FailFirst bool `json:"fail_first"`
	// Queue is the child jobs' queue; "held" is one no worker serves.
	Queue string `json:"queue"`
}

func (parentArgs) Kind() string { return "child_parent" }

// childRig is a worker running wf_step jobs and child_parent steps; it
// records the child workflow each child_parent run enqueued.
type childRig struct {
	*env
	s *steps

	mu       sync.Mutex
	children map[int64]int64 // parent job id -> child workflow id, of committed-or-not runs
	tries    map[int64]int
	errs     []error // what a handler saw refused
}

func (r *childRig) child(job int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.children[job]
}

func childWorker(t *testing.T, sleep time.Duration, extra func(*handlers.Registry)) *childRig {
	t.Helper()
	e := setup(t, 12)
	e.logJobsOnFailure()
	r := &childRig{env: e, s: newSteps(), children: map[int64]int64{}, tries: map[int64]int{}}
	reg := handlers.NewRegistry()
	r.s.register(reg, sleep)
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[parentArgs]) error {
		var jobs []enqueue.WorkflowJob
		for i, c := range j.Args.Children {
			wj := step(c)
			wj.Opts.Queue = j.Args.Queue
			if i > 0 {
				wj.After = enqueue.After(j.Args.Children[i-1])
			}
			if strings.HasPrefix(c, "doomed") {
				wj.Args = stepArgs{Name: c, FailTimes: 100}
				wj.Opts.MaxAttempts = 1
			}
			jobs = append(jobs, wj)
		}
		res, err := e.jobs.EnqueueChildWorkflow(ctx, tx, j.Job, enqueue.Workflow{Name: fmt.Sprint("child of ", j.ID), Jobs: jobs})
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.children[j.ID] = res.ID
		r.tries[j.ID]++
		try := r.tries[j.ID]
		r.mu.Unlock()
		if j.Args.FailFirst && try == 1 {
			return errors.New("fails after enqueueing its child")
		}
		return nil
	}, handlers.KindOpts{Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	if extra != nil {
		extra(reg)
	}
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 4}}, PollInterval: 100 * time.Millisecond})
	return r
}

// TestChildWorkflowCompletesStep: a step that enqueued a child workflow
// waits while the child runs, completes when it succeeded, and only then
// releases its own dependent.
func TestChildWorkflowCompletesStep(t *testing.T) {
	t.Parallel()
	r := childWorker(t, 150*time.Millisecond, nil)
	res, err := r.jobs.EnqueueWorkflow(t.Context(), r.pool, enqueue.Workflow{Name: "outer", Jobs: []enqueue.WorkflowJob{
		{Ref: "parent", Args: parentArgs{Children: []string{"c1", "c2"}}},
		step("dep", "parent"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	parent := res.Jobs["parent"]
	r.waitWhere(parent, "waiting", 20*time.Second)
	child := r.child(parent)
	if n := r.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = $1 AND child_workflow_id = $2 AND locked_by IS NULL`, parent, child); n != 1 {
		t.Fatalf("parent step does not wait for its child workflow %d", child)
	}
	r.waitWhere(parent, "done", 20*time.Second)
	if st := r.waitWorkflow(res.ID, 20*time.Second); st.State != admin.WorkflowSucceeded {
		t.Fatalf("outer workflow ended %+v", st)
	}
	if st := r.waitWorkflow(child, time.Second); st.State != admin.WorkflowSucceeded || st.ParentJobID != parent ||
		st.ParentWorkflowID != res.ID || st.Depth != 1 {
		t.Fatalf("child workflow %+v", st)
	}
	r.s.after(t, "dep", "c1", "c2")
	if n := r.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE id = $1 AND started_at IS NOT NULL AND workflow_id = $2`, parent, res.ID); n != 1 {
		t.Errorf("parent step is not in history with its start and workflow")
	}
	jobs, err := r.ops.Workflows().Jobs(t.Context(), r.pool, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		t.Errorf("outer workflow still lists job %+v; completed jobs are in history", j)
	}
}

// TestChildWorkflowFailureFailsStep: a child job that dead-letters fails
// the step waiting for it (child_failed, naming the child workflow and the
// job), which cancels the step's dependent.
func TestChildWorkflowFailureFailsStep(t *testing.T) {
	t.Parallel()
	r := childWorker(t, 0, nil)
	res, err := r.jobs.EnqueueWorkflow(t.Context(), r.pool, enqueue.Workflow{Name: "outer", Jobs: []enqueue.WorkflowJob{
		{Ref: "parent", Args: parentArgs{Children: []string{"c1", "doomed", "c3"}}},
		step("dep", "parent"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	parent, dep := res.Jobs["parent"], res.Jobs["dep"]
	r.waitWhere(parent, "dead", 20*time.Second)
	child := r.child(parent)
	var doomed int64
	ctx, cancel := queryCtx()
	defer cancel()
	if err := r.pool.QueryRow(ctx, r.sql(`SELECT id FROM {{schema}}.docket_jobs_dead WHERE workflow_id = $1 AND reason = 'exhausted'`), child).Scan(&doomed); err != nil {
		t.Fatal(err)
	}
	d := r.dead(parent)
	want := fmt.Sprintf("child workflow %d failed: job %d (wf_step) dead-lettered: exhausted", child, doomed)
	if d.reason != core.ReasonChildFailed || d.lastError != want {
		t.Errorf("parent dead with %q %q, want %q %q", d.reason, d.lastError, core.ReasonChildFailed, want)
	}
	r.waitWhere(dep, "dead", 5*time.Second)
	if d := r.dead(dep); d.reason != core.ReasonCancelled || d.lastError != fmt.Sprintf("parent job %d failed", parent) {
		t.Errorf("dependent dead with %+v", d)
	}
	if len(r.s.get("dep")) != 0 || len(r.s.get("c3")) != 0 {
		t.Error("a job after a failed one ran")
	}
	if st := r.waitWorkflow(child, time.Second); st.State != admin.WorkflowFailed {
		t.Errorf("child workflow %+v", st)
	}
}

// TestChildWorkflowCancels: cancelling the parent's workflow cancels the
// child workflow the step waits for; cancelling a child workflow fails the
// step waiting for it.
func TestChildWorkflowCancels(t *testing.T) {
	t.Parallel()
	r := childWorker(t, 0, nil)
	t.Run("parent workflow", func(t *testing.T) {
		res, err := r.jobs.EnqueueWorkflow(t.Context(), r.pool, enqueue.Workflow{Name: "outer", Jobs: []enqueue.WorkflowJob{
			{Ref: "parent", Args: parentArgs{Children: []string{"x1", "x2"}, Queue: "held"}},
			step("dep", "parent"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		parent := res.Jobs["parent"]
		r.waitWhere(parent, "waiting", 20*time.Second)
		child := r.child(parent)
		if _, err := r.ops.Workflows().Cancel(t.Context(), r.pool, res.ID); err != nil {
			t.Fatal(err)
		}
		if d := r.dead(parent); d.reason != core.ReasonCancelled {
			t.Errorf("parent step dead with %+v", d)
		}
		st := r.waitWorkflow(child, 5*time.Second)
		if st.State != admin.WorkflowCancelled || st.Remaining != 0 {
			t.Errorf("child workflow %+v, want cancelled with nothing left", st)
		}
	})
	t.Run("child workflow", func(t *testing.T) {
		res, err := r.jobs.EnqueueWorkflow(t.Context(), r.pool, enqueue.Workflow{Name: "outer", Jobs: []enqueue.WorkflowJob{
			{Ref: "parent", Args: parentArgs{Children: []string{"y1", "y2"}, Queue: "held"}},
			step("dep", "parent"),
		}})
		if err != nil {
			t.Fatal(err)
		}
		parent, dep := res.Jobs["parent"], res.Jobs["dep"]
		r.waitWhere(parent, "waiting", 20*time.Second)
		child := r.child(parent)
		if _, err := r.ops.Workflows().Cancel(t.Context(), r.pool, child); err != nil {
			t.Fatal(err)
		}
		r.waitWhere(parent, "dead", 5*time.Second)
		if d := r.dead(parent); d.reason != core.ReasonChildFailed || d.lastError != fmt.Sprintf("child workflow %d cancelled", child) {
			t.Errorf("parent step dead with %+v", d)
		}
		if r.where(dep) != "dead" {
			t.Errorf("dependent is %s, want dead", r.where(dep))
		}
	})
}

// nestArgs is a transactional job that starts a child workflow of one
// nestArgs job, one level deeper, until it is refused.
type nestArgs struct {
	Level int `json:"level"`
}

func (nestArgs) Kind() string { return "child_nest" }

// TestChildWorkflowDepthBound nests child workflows from a job outside
// workflows: depths 1 to MaxWorkflowDepth are written, the next is refused
// with ErrWorkflowTooDeep and nothing of it is written; the handler that
// was refused completes, and every waiting level above it then completes
// in turn.
func TestChildWorkflowDepthBound(t *testing.T) {
	t.Parallel()
	var refused error
	var mu sync.Mutex
	var r *childRig
	r = childWorker(t, 0, func(reg *handlers.Registry) {
		handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[nestArgs]) error {
			_, err := r.jobs.EnqueueChildWorkflow(ctx, tx, j.Job, enqueue.Workflow{Name: fmt.Sprint("level ", j.Args.Level+1),
				Jobs: []enqueue.WorkflowJob{{Ref: "next", Args: nestArgs{Level: j.Args.Level + 1}}}})
			if errors.Is(err, enqueue.ErrWorkflowTooDeep) {
				mu.Lock()
				refused = err
				mu.Unlock()
				return nil
			}
			return err
		}, handlers.KindOpts{})
	})
	root := r.enqueue(nestArgs{}, enqueue.Opts{})
	r.waitWhere(root, "done", 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if refused == nil {
		t.Fatal("no level was refused")
	}
	t.Log(refused)
	if got := r.count(`SELECT count(*) FROM {{schema}}.docket_workflows`); got != enqueue.MaxWorkflowDepth {
		t.Errorf("%d workflows, want %d", got, enqueue.MaxWorkflowDepth)
	}
	if got := r.count(`SELECT max(depth) FROM {{schema}}.docket_workflows`); got != enqueue.MaxWorkflowDepth {
		t.Errorf("deepest workflow at %d, want %d", got, enqueue.MaxWorkflowDepth)
	}
	if got := r.count(`SELECT count(*) FROM {{schema}}.docket_workflows w JOIN {{schema}}.docket_workflows p
		ON p.id = w.parent_workflow_id AND w.depth = p.depth + 1`); got != enqueue.MaxWorkflowDepth-1 {
		t.Errorf("%d workflows one deeper than their parent's, want %d", got, enqueue.MaxWorkflowDepth-1)
	}
	if got := r.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE kind = 'child_nest'`); got != enqueue.MaxWorkflowDepth+1 {
		t.Errorf("%d nest jobs completed, want %d", got, enqueue.MaxWorkflowDepth+1)
	}
	if got := r.count(`SELECT count(*) FROM {{schema}}.docket_jobs`); got != 0 {
		t.Errorf("%d jobs left", got)
	}
}

// TestChildWorkflowRolledBackWithHandler: a handler that fails after
// enqueueing its child rolls the child back with its transaction; the
// retry's child is the only one, and the step completes with it.
func TestChildWorkflowRolledBackWithHandler(t *testing.T) {
	t.Parallel()
	r := childWorker(t, 0, nil)
	parent := r.enqueue(parentArgs{Children: []string{"r1"}, FailFirst: true}, enqueue.Opts{})
	r.waitWhere(parent, "done", 20*time.Second)
	r.mu.Lock()
	tries := r.tries[parent]
	r.mu.Unlock()
	if tries != 2 {
		t.Fatalf("parent enqueued a child %d times, want 2", tries)
	}
	if got := r.count(`SELECT count(*) FROM {{schema}}.docket_workflows`); got != 1 {
		t.Errorf("%d workflows, want 1: the failed attempt's child must not exist", got)
	}
	if got := r.count(`SELECT count(*) FROM {{schema}}.docket_workflows WHERE id = $1 AND parent_job_id = $2 AND depth = 1`, r.child(parent), parent); got != 1 {
		t.Error("the retry's child is not the one left")
	}
	if got := len(r.s.get("r1")); got != 1 {
		t.Errorf("child job ran %d times, want once", got)
	}
}

// misuseArgs tries every wrong way to start a child workflow, then
// completes normally.
type misuseArgs struct{}

func (misuseArgs) Kind() string { return "child_misuse" }

type plainMisuseArgs struct{}

func (plainMisuseArgs) Kind() string { return "child_misuse_plain" }

// TestChildWorkflowRefusesMisuse: outside a transactional handler, with
// another transaction or a savepoint, for another job, twice in one run,
// EnqueueChildWorkflow returns ErrChildWorkflow and writes nothing; the
// job then completes as usual.
func TestChildWorkflowRefusesMisuse(t *testing.T) {
	t.Parallel()
	got := map[string]error{}
	var mu sync.Mutex
	note := func(what string, err error) {
		mu.Lock()
		got[what] = err
		mu.Unlock()
	}
	wf := enqueue.Workflow{Name: "child", Jobs: []enqueue.WorkflowJob{step("c")}}
	var r *childRig
	r = childWorker(t, 0, func(reg *handlers.Registry) {
		handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[plainMisuseArgs]) error {
			tx, err := r.pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
			_, err = r.jobs.EnqueueChildWorkflow(ctx, tx, j.Job, wf)
			note("plain handler", err)
			return nil
		}, handlers.KindOpts{})
		handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[misuseArgs]) error {
			_, err := r.jobs.EnqueueChildWorkflow(context.Background(), tx, j.Job, wf)
			note("other context", err)
			other, err := r.pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer func() { _ = other.Rollback(context.WithoutCancel(ctx)) }()
			_, err = r.jobs.EnqueueChildWorkflow(ctx, other, j.Job, wf)
			note("other transaction", err)
			sp, err := tx.Begin(ctx)
			if err != nil {
				return err
			}
			_, err = r.jobs.EnqueueChildWorkflow(ctx, sp, j.Job, wf)
			note("savepoint", err)
			if err := sp.Rollback(ctx); err != nil {
				return err
			}
			stranger := *j.Job
			stranger.ID++
			_, err = r.jobs.EnqueueChildWorkflow(ctx, tx, &stranger, wf)
			note("other job", err)
			stale := *j.Job
			stale.ClaimID--
			_, err = r.jobs.EnqueueChildWorkflow(ctx, tx, &stale, wf)
			note("other claim", err)
			if _, err := r.jobs.EnqueueChildWorkflow(ctx, tx, j.Job, wf); err != nil {
				return err
			}
			_, err = r.jobs.EnqueueChildWorkflow(ctx, tx, j.Job, wf)
			note("second child", err)
			return nil
		}, handlers.KindOpts{})
	})
	plain := r.enqueue(plainMisuseArgs{}, enqueue.Opts{})
	tx := r.enqueue(misuseArgs{}, enqueue.Opts{})
	r.waitWhere(plain, "done", 20*time.Second)
	r.waitWhere(tx, "done", 20*time.Second)
	mu.Lock()
	defer mu.Unlock()
	for _, what := range []string{"plain handler", "other context", "other transaction", "savepoint", "other job", "other claim", "second child"} {
		if err := got[what]; !errors.Is(err, enqueue.ErrChildWorkflow) {
			t.Errorf("%s: got %v, want ErrChildWorkflow", what, err)
		} else {
			t.Logf("%s: %v", what, err)
		}
	}
	if n := r.count(`SELECT count(*) FROM {{schema}}.docket_workflows`); n != 1 {
		t.Errorf("%d workflows, want the one child allowed", n)
	}
}

type fencedArgs struct{}

func (fencedArgs) Kind() string { return "child_fenced" }

// TestChildWorkflowParkFenced: a run that lost its claim while its handler
// ran (taken over here by moving claim_id on) neither parks nor completes:
// its transaction, and the child workflow in it, roll back.
func TestChildWorkflowParkFenced(t *testing.T) {
	enqueued, stolen := make(chan int64, 1), make(chan struct{})
	var r *childRig
	r = childWorker(t, 0, func(reg *handlers.Registry) {
		handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[fencedArgs]) error {
			res, err := r.jobs.EnqueueChildWorkflow(ctx, tx, j.Job, enqueue.Workflow{Name: "lost", Jobs: []enqueue.WorkflowJob{step("c")}})
			if err != nil {
				return err
			}
			enqueued <- res.ID
			<-stolen
			return nil
		}, handlers.KindOpts{})
	})
	id := r.enqueue(fencedArgs{}, enqueue.Opts{})
	select {
	case <-enqueued:
	case <-time.After(20 * time.Second):
		t.Fatal("handler never enqueued its child")
	}
	r.exec(`UPDATE {{schema}}.docket_jobs SET claim_id = claim_id + 1000 WHERE id = $1`, id)
	close(stolen)
	waitFor(t, 10*time.Second, "the lost run to end", func() bool {
		return r.count(`SELECT count(*) FROM pg_stat_activity WHERE state = 'idle in transaction' AND datname = current_database()`) == 0
	})
	time.Sleep(200 * time.Millisecond)
	if got := r.where(id); got != "running" {
		t.Errorf("job is %s, want still running under the claim that took it", got)
	}
	if n := r.count(`SELECT count(*) FROM {{schema}}.docket_workflows`); n != 0 {
		t.Errorf("%d workflows: the lost run's child committed", n)
	}
	if n := r.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE child_workflow_id IS NOT NULL OR parent_step_id IS NOT NULL`); n != 0 {
		t.Errorf("%d jobs of or waiting for a child workflow", n)
	}
}

// TestChildWorkflowSweepSettlesRace removes a child workflow's last two
// jobs in two transactions at once: each trigger still sees the other's
// job, and the step is left waiting. The worker's sweep settles it: it
// completes, as the child succeeded.
func TestChildWorkflowSweepSettlesRace(t *testing.T) {
	t.Parallel()
	r := childWorker(t, 0, nil)
	parent := r.enqueue(parentArgs{Children: []string{"a", "b"}, Queue: "held"}, enqueue.Opts{})
	r.waitWhere(parent, "waiting", 20*time.Second)
	child := r.child(parent)
	// Both as if claimed and running: their delete reads as a completion.
	r.exec(`UPDATE {{schema}}.docket_jobs SET state = 'running', locked_by = gen_random_uuid(), ready_seq = ready_seq
		WHERE workflow_id = $1`, child)
	ids := make([]int64, 0, 2)
	ctx, cancel := queryCtx()
	defer cancel()
	rows, err := r.pool.Query(ctx, r.sql(`SELECT id FROM {{schema}}.docket_jobs WHERE workflow_id = $1 ORDER BY id`), child)
	if err != nil {
		t.Fatal(err)
	}
	ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil || len(ids) != 2 {
		t.Fatalf("child jobs %v: %v", ids, err)
	}
	// Pause the worker's sweep while the race is set up: hold the step's
	// row lock (the sweep skips locked steps).
	hold, err := r.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(ctx, r.sql(`SELECT 1 FROM {{schema}}.docket_jobs WHERE id = $1 FOR KEY SHARE`), parent); err != nil {
		t.Fatal(err)
	}
	t1, err := r.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t2, err := r.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, tx := range []pgx.Tx{t1, t2} {
		if _, err := tx.Exec(ctx, r.sql(`DELETE FROM {{schema}}.docket_jobs WHERE id = $1`), ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	for _, tx := range []pgx.Tx{t1, t2} {
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.where(parent); got != "waiting" {
		t.Fatalf("step is %s after the race, want waiting (the race did not happen)", got)
	}
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r.waitWhere(parent, "done", 5*time.Second)
}

type killParentArgs struct{}

func (killParentArgs) Kind() string { return "child_kill_parent" }

// TestChildWorkflowSurvivesKilledWorkers: the worker that parked a step
// stops, and the worker process running the child's first job is killed
// with SIGKILL mid-run. The step holds no lease while it waits, so nothing
// is lost: another process runs the child to its end, the step completes
// and its dependent runs.
func TestChildWorkflowSurvivesKilledWorkers(t *testing.T) {
	e := setup(t, 8)
	e.logJobsOnFailure()
	createEffects(t, e.pool, e.schema)
	reg := handlers.NewRegistry()
	children := make(chan int64, 1)
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[killParentArgs]) error {
		res, err := e.jobs.EnqueueChildWorkflow(ctx, tx, j.Job, enqueue.Workflow{Name: "child", Jobs: []enqueue.WorkflowJob{
			{Ref: "k1", Args: blockArgs{}}, {Ref: "k2", Args: blockArgs{}, After: enqueue.After("k1")},
		}})
		if err == nil {
			children <- res.ID
		}
		return err
	}, handlers.KindOpts{})
	res, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "outer", Jobs: []enqueue.WorkflowJob{
		{Ref: "parent", Args: killParentArgs{}},
		{Ref: "dep", Args: blockArgs{}, After: enqueue.After("parent")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	parent, dep := res.Jobs["parent"], res.Jobs["dep"]
	w := e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 2}}})
	e.waitWhere(parent, "waiting", 20*time.Second)
	if err := w.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	child := <-children
	var first int64
	ctx, cancel := queryCtx()
	defer cancel()
	if err := e.pool.QueryRow(ctx, e.sql(`SELECT id FROM {{schema}}.docket_jobs WHERE workflow_id = $1 AND state = 'ready'`), child).Scan(&first); err != nil {
		t.Fatal(err)
	}
	p1 := startProcess(t, pgtest.URL(t), e.schema, envLease+"=2000", envConc+"=4", envSleep+"=1500")
	waitFor(t, 20*time.Second, "the child's first job to start", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.effects WHERE kind = $1 AND job_id = $2`, blockStarted, first) == 1
	})
	p1.kill()
	if got := e.where(parent); got != "waiting" {
		t.Fatalf("step is %s after the kill, want waiting", got)
	}
	startProcess(t, pgtest.URL(t), e.schema, envLease+"=1000", envConc+"=4", envSleep+"=50")
	if st := e.waitWorkflow(res.ID, 60*time.Second); st.State != admin.WorkflowSucceeded {
		t.Fatalf("outer workflow ended %+v", st)
	}
	if st := e.waitWorkflow(child, time.Second); st.State != admin.WorkflowSucceeded {
		t.Fatalf("child workflow ended %+v", st)
	}
	for _, id := range []int64{parent, dep} {
		if got := e.where(id); got != "done" {
			t.Errorf("job %d is %s, want done", id, got)
		}
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE kind = 'proc_block' AND job_id = $1 AND worker <> $2`, first, p1.id); n != 1 {
		t.Errorf("the killed child job ran to its end %d times in the second process, want once", n)
	}
}

// TestChildWorkflowSettledInSameTransaction: the transaction that removes
// a child workflow's last job completes the step waiting for it, before
// it commits: no sweep is involved.
func TestChildWorkflowSettledInSameTransaction(t *testing.T) {
	t.Parallel()
	r := childWorker(t, 0, nil)
	parent := r.enqueue(parentArgs{Children: []string{"only"}, Queue: "held"}, enqueue.Opts{})
	r.waitWhere(parent, "waiting", 20*time.Second)
	child := r.child(parent)
	r.exec(`UPDATE {{schema}}.docket_jobs SET state = 'running', locked_by = gen_random_uuid() WHERE workflow_id = $1`, child)
	ctx, cancel := queryCtx()
	defer cancel()
	tx, err := r.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, r.sql(`DELETE FROM {{schema}}.docket_jobs WHERE workflow_id = $1`), child); err != nil {
		t.Fatal(err)
	}
	var done bool
	if err := tx.QueryRow(ctx, r.sql(`SELECT EXISTS (SELECT 1 FROM {{schema}}.docket_jobs_done WHERE id = $1)
		AND NOT EXISTS (SELECT 1 FROM {{schema}}.docket_jobs WHERE id = $1)`), parent).Scan(&done); err != nil {
		t.Fatal(err)
	}
	if !done {
		t.Fatal("the step did not complete in the transaction that removed its child's last job")
	}
}

type noHistoryParentArgs struct{}

func (noHistoryParentArgs) Kind() string { return "child_no_history" }

// TestChildWorkflowHistoryOff: a step enqueued by a client without history
// is deleted when its child succeeds, as the worker deletes completions.
func TestChildWorkflowHistoryOff(t *testing.T) {
	t.Parallel()
	var r *childRig
	r = childWorker(t, 0, func(reg *handlers.Registry) {
		handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[noHistoryParentArgs]) error {
			c, err := enqueue.New(enqueue.Config{Schema: r.schema, DisableHistory: true})
			if err != nil {
				return err
			}
			res, err := c.EnqueueChildWorkflow(ctx, tx, j.Job, enqueue.Workflow{Name: "child", Jobs: []enqueue.WorkflowJob{step("h1")}})
			if err == nil {
				r.mu.Lock()
				r.children[j.ID] = res.ID
				r.mu.Unlock()
			}
			return err
		}, handlers.KindOpts{})
	})
	parent := r.enqueue(noHistoryParentArgs{}, enqueue.Opts{})
	waitFor(t, 20*time.Second, "the step to leave", func() bool { return r.child(parent) != 0 && r.where(parent) == "" })
	if st := r.waitWorkflow(r.child(parent), time.Second); st.State != admin.WorkflowSucceeded {
		t.Fatalf("child workflow %+v", st)
	}
	if len(r.s.get("h1")) != 1 {
		t.Error("the child's job did not run once")
	}
}
