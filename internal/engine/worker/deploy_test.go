package worker

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
)

type deployExtractArgs struct{}

func (deployExtractArgs) Kind() string { return "wf_deploy_extract" }

type deployLoadArgs struct{}

func (deployLoadArgs) Kind() string { return "wf_deploy_load" }

type rowCount struct {
	Rows int `json:"rows"`
}

// TestWorkflowSurvivesDeploy: a workflow's steps are jobs and its state is
// rows, so nothing replays code: a deploy that changes the handlers (here
// the first version runs the first step, and the next version, which no
// longer has the first step's kind at all, runs the rest) leaves the
// workflow in flight to finish under the new code, reading the results the
// old code recorded.
func TestWorkflowSurvivesDeploy(t *testing.T) {
	t.Parallel()
	e := setup(t, 12)
	e.logJobsOnFailure()
	v1 := handlers.NewRegistry()
	handlers.MustRegister(v1, func(ctx context.Context, j *handlers.Job[deployExtractArgs]) error {
		return j.SetResult(rowCount{Rows: 3})
	}, handlers.KindOpts{})
	res, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "deploy", Jobs: []enqueue.WorkflowJob{
		{Ref: "extract", Args: deployExtractArgs{}},
		{Ref: "load", Args: deployLoadArgs{}, After: enqueue.After("extract")},
		{Ref: "report", Args: deployLoadArgs{}, After: enqueue.After("load")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.worker(v1, Config{})
	e.waitWhere(res.Jobs["extract"], "done", 10*time.Second)
	if got := e.where(res.Jobs["load"]); got != "ready" {
		t.Fatalf("load is %s while only the first version runs, want ready", got)
	}

	// The next version: a new handler for the later steps, which reads
	// its parent's result by ref, and no handler for the first step.
	seen := make(chan int, 2)
	v2 := handlers.NewRegistry()
	handlers.MustRegister(v2, func(ctx context.Context, j *handlers.Job[deployLoadArgs]) error {
		parent := "extract"
		if j.ID == res.Jobs["report"] {
			parent = "load"
		}
		var in rowCount
		if err := j.ParentResult(parent, &in); err != nil {
			return handlers.Cancel(err)
		}
		seen <- in.Rows
		return j.SetResult(rowCount{Rows: in.Rows + 1})
	}, handlers.KindOpts{})
	e.worker(v2, Config{})
	if st := e.waitWorkflow(res.ID, 10*time.Second); st.State != admin.WorkflowSucceeded {
		t.Fatalf("workflow ended %s, want succeeded", st.State)
	}
	if a, b := <-seen, <-seen; a != 3 || b != 4 {
		t.Errorf("the new version read %d and %d of its parents, want 3 (recorded by the old version) and 4", a, b)
	}
}
