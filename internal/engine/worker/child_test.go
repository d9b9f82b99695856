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
