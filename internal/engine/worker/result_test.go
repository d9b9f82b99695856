package worker

import (
	"context"
	"encoding/json"
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

// resultArgs is a job whose handler records a result as Mode says.
type resultArgs struct {
	Mode string `json:"mode"`
	N    int    `json:"n"`
}

func (resultArgs) Kind() string { return "result" }

type resultTxArgs struct{ N int }

func (resultTxArgs) Kind() string { return "result_tx" }

func registerResults(reg *handlers.Registry, tries *counter) {
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[resultArgs]) error {
		try := tries.add(j.ID)
		switch j.Args.Mode {
		case "value":
			if err := j.SetResult(map[string]any{"n": 0}); err != nil {
				return err
			}
			return j.SetResult(map[string]any{"n": j.Args.N, "html": "<b>&"}) // the last call wins
		case "cancel":
			if err := j.SetResult(map[string]any{"partial": j.Args.N}); err != nil {
				return err
			}
			return handlers.Cancel(errors.New("no point going on"))
		case "exhaust":
			if err := j.SetResult(map[string]any{"attempt": try}); err != nil {
				return err
			}
			return errors.New("failed")
		case "retry-then-none":
			if try == 1 {
				if err := j.SetResult("first attempt"); err != nil {
					return err
				}
				return errors.New("first attempt fails")
			}
			return nil
		case "too-big":
			return j.SetResult(strings.Repeat("x", handlers.MaxResultBytes))
		}
		return nil
	}, handlers.KindOpts{Backoff: func(int) time.Duration { return 0 }})
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[resultTxArgs]) error {
		return j.SetResult(j.Args.N * 2)
	}, handlers.KindOpts{})
}

// storedResult returns the result stored with job id in table (history or
// dead letters), "" when NULL.
func (e *env) storedResult(table string, id int64) string {
	e.t.Helper()
	var s *string
	ctx, cancel := queryCtx()
	defer cancel()
	if err := e.pool.QueryRow(ctx, e.sql(`SELECT result::text FROM {{schema}}.`+table+` WHERE id = $1`), id).Scan(&s); err != nil {
		e.t.Fatalf("job %d in %s: %v", id, table, err)
	}
	if s == nil {
		return ""
	}
	return *s
}

func TestResultsStoredWithOutcome(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	tries := newCounter()
	reg := handlers.NewRegistry()
	registerResults(reg, tries)
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 4}}})
	value := e.enqueue(resultArgs{Mode: "value", N: 7}, enqueue.Opts{})
	tx := e.enqueue(resultTxArgs{N: 21}, enqueue.Opts{})
	cancelled := e.enqueue(resultArgs{Mode: "cancel", N: 3}, enqueue.Opts{})
	exhausted := e.enqueue(resultArgs{Mode: "exhaust"}, enqueue.Opts{MaxAttempts: 2})
	retried := e.enqueue(resultArgs{Mode: "retry-then-none"}, enqueue.Opts{MaxAttempts: 3})
	tooBig := e.enqueue(resultArgs{Mode: "too-big"}, enqueue.Opts{MaxAttempts: 1})
	plain := e.enqueue(resultArgs{Mode: "none"}, enqueue.Opts{})
	for id, where := range map[int64]string{value: "done", tx: "done", cancelled: "dead", exhausted: "dead",
		retried: "done", tooBig: "dead", plain: "done"} {
		e.waitWhere(id, where, 20*time.Second)
	}
	for _, c := range []struct {
		name, table string
		id          int64
		want        string
	}{
		{"last SetResult wins", "docket_jobs_done", value, `{"n": 7, "html": "<b>&"}`},
		{"transactional handler", "docket_jobs_done", tx, `42`},
		{"cancelled keeps its result", "docket_jobs_dead", cancelled, `{"partial": 3}`},
		{"exhausted keeps its last attempt's", "docket_jobs_dead", exhausted, `{"attempt": 2}`},
		{"a retried attempt's result is dropped", "docket_jobs_done", retried, ``},
		{"refused result", "docket_jobs_dead", tooBig, ``},
		{"no result", "docket_jobs_done", plain, ``},
	} {
		if got := e.storedResult(c.table, c.id); got != c.want {
			t.Errorf("%s: stored %q, want %q", c.name, got, c.want)
		}
	}
	if d := e.dead(tooBig); !strings.Contains(d.lastError, "over the cap of 65536 bytes") {
		t.Errorf("refused result: last error %q does not name the cap", d.lastError)
	}
	// The operator's view reads it back.
	info, err := e.ops.Jobs().Get(t.Context(), e.pool, value, true)
	if err != nil {
		t.Fatal(err)
	}
	if string(info.Result) != `{"n": 7, "html": "<b>&"}` {
		t.Errorf("Jobs().Get: result %s", info.Result)
	}
	type shape struct {
		N    int    `json:"n"`
		HTML string `json:"html"`
	}
	got, err := admin.JobResult[shape](t.Context(), e.ops, e.pool, value)
	if err != nil || got != (shape{7, "<b>&"}) {
		t.Errorf("JobResult = %+v, %v", got, err)
	}
	if _, err := admin.JobResult[shape](t.Context(), e.ops, e.pool, plain); !errors.Is(err, admin.ErrNoResult) {
		t.Errorf("JobResult of a job without result: %v, want ErrNoResult", err)
	}
	dead, err := e.ops.Jobs().Get(t.Context(), e.pool, cancelled, true)
	if err != nil || string(dead.Result) != `{"partial": 3}` {
		t.Errorf("Jobs().Get of a dead job: result %s, %v", dead.Result, err)
	}
}

// wfResultArgs is a workflow step that reads the results of Parents (and
// of NotParents, which it does not have) and records Value plus the sum
// of its parents' results, unless Value is nil.
type wfResultArgs struct {
	Ref        string   `json:"ref"`
	Parents    []string `json:"parents"`
	NotParents []string `json:"not_parents"`
	Value      *int     `json:"value"`
}

func (wfResultArgs) Kind() string { return "wf_result" }

// seen records, per step, what its last run read of its parents.
type seen struct {
	mu sync.Mutex
	m  map[string][]string
}

func registerWFResults(reg *handlers.Registry, s *seen) {
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[wfResultArgs]) error {
		var got []string
		sum := 0
		for _, ref := range append(append([]string(nil), j.Args.Parents...), j.Args.NotParents...) {
			var v int
			err := j.ParentResult(ref, &v)
			switch {
			case err == nil:
				sum += v
				got = append(got, fmt.Sprintf("%s=%d", ref, v))
			case errors.Is(err, handlers.ErrNoResult):
				got = append(got, ref+": no result")
			case errors.Is(err, handlers.ErrNotParent):
				got = append(got, ref+": not a parent")
			default:
				return err
			}
		}
		s.mu.Lock()
		s.m[j.Args.Ref] = got
		s.mu.Unlock()
		if j.Args.Value == nil {
			return nil
		}
		return j.SetResult(*j.Args.Value + sum)
	}, handlers.KindOpts{})
}

func wfStep(ref string, value *int, parents ...string) enqueue.WorkflowJob {
	return enqueue.WorkflowJob{Ref: ref, Args: wfResultArgs{Ref: ref, Parents: parents, Value: value}, After: enqueue.After(parents...)}
}

func intp(n int) *int { return &n }

func TestWorkflowParentResults(t *testing.T) {
	t.Parallel()
	for _, history := range []bool{true, false} {
		t.Run(fmt.Sprintf("history=%v", history), func(t *testing.T) {
			e := setup(t, 8)
			e.logJobsOnFailure()
			s := &seen{m: map[string][]string{}}
			reg := handlers.NewRegistry()
			registerWFResults(reg, s)
			e.worker(reg, Config{DisableHistory: !history, Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 4}}})
			join := wfStep("join", intp(0), "p1", "p2", "p3")
			join.Args = wfResultArgs{Ref: "join", Parents: []string{"p1", "p2", "p3"}, NotParents: []string{"a", "nope"}, Value: intp(0)}
			res, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "results", Jobs: []enqueue.WorkflowJob{
				// A three-step chain: each step adds its value to its parent's result.
				wfStep("a", intp(1)), wfStep("b", intp(2), "a"), wfStep("c", intp(3), "b"),
				// A fan-in of three parents, one of which records no result.
				wfStep("p1", intp(10)), wfStep("p2", intp(20)), wfStep("p3", nil),
				join,
			}})
			if err != nil {
				t.Fatal(err)
			}
			if st := e.waitWorkflow(res.ID, 20*time.Second); st.State != admin.WorkflowSucceeded {
				t.Fatalf("workflow ended %+v", st)
			}
			want := map[string]string{
				"a":    "",
				"b":    "a=1",
				"c":    "b=3",
				"join": "p1=10 p2=20 p3: no result a: not a parent nope: not a parent",
			}
			s.mu.Lock()
			for ref, w := range want {
				if got := strings.Join(s.m[ref], " "); got != w {
					t.Errorf("%s read %q of its parents, want %q", ref, got, w)
				}
			}
			s.mu.Unlock()
			if history {
				if got := e.storedResult("docket_jobs_done", res.Jobs["c"]); got != "6" {
					t.Errorf("c's result in history: %q, want 6", got)
				}
			}
			// The workflow finished: the results its steps kept for their
			// dependents are gone, with history on or off.
			waitFor(t, 5*time.Second, "the workflow's kept results to be removed", func() bool {
				return e.count(`SELECT count(*) FROM {{schema}}.docket_workflow_results WHERE workflow_id = $1`, res.ID) == 0
			})
		})
	}
}

// TestWorkflowResultsKeptWhileNeeded: a parent's result is kept while its
// workflow runs (history off: nowhere else holds it), and only for parents
// with dependents.
func TestWorkflowResultsKeptWhileNeeded(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	s := &seen{m: map[string][]string{}}
	reg := handlers.NewRegistry()
	registerWFResults(reg, s)
	w := e.worker(reg, Config{DisableHistory: true, Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 2}}})
	later := time.Now().Add(time.Hour)
	gate := wfStep("gate", intp(5))
	gate.Opts.RunAt = later // holds the workflow open
	res, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "kept", Jobs: []enqueue.WorkflowJob{
		wfStep("a", intp(1)), wfStep("leaf", intp(9)), wfStep("b", intp(2), "a", "gate"), gate,
	}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a and leaf to complete", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = ANY($1)`, []int64{res.Jobs["a"], res.Jobs["leaf"]}) == 0
	})
	var kept []int64
	ctx, cancel := queryCtx()
	defer cancel()
	rows, _ := e.pool.Query(ctx, e.sql(`SELECT job_id FROM {{schema}}.docket_workflow_results WHERE workflow_id = $1`), res.ID)
	for rows.Next() {
		var id int64
		_ = rows.Scan(&id)
		kept = append(kept, id)
	}
	if rows.Err() != nil || len(kept) != 1 || kept[0] != res.Jobs["a"] {
		t.Fatalf("kept results of jobs %v (%v), want only a's (%d): leaf has no dependent", kept, rows.Err(), res.Jobs["a"])
	}
	e.exec(`UPDATE {{schema}}.docket_jobs SET run_at = now() WHERE id = $1`, res.Jobs["gate"])
	_ = w
	if st := e.waitWorkflow(res.ID, 20*time.Second); st.State != admin.WorkflowSucceeded {
		t.Fatalf("workflow ended %+v", st)
	}
	s.mu.Lock()
	if got := strings.Join(s.m["b"], " "); got != "a=1 gate=5" {
		t.Errorf("b read %q", got)
	}
	s.mu.Unlock()
	waitFor(t, 5*time.Second, "the kept results to be removed", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_workflow_results`) == 0
	})
}

// TestSweepRemovesResultsOfFinishedWorkflows: results left behind when a
// workflow's last two jobs left at once are removed by the sweep; those of
// running workflows stay.
func TestSweepRemovesResultsOfFinishedWorkflows(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	done, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "done", Jobs: []enqueue.WorkflowJob{step("x")}})
	if err != nil {
		t.Fatal(err)
	}
	running, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "running", Jobs: []enqueue.WorkflowJob{step("y")}})
	if err != nil {
		t.Fatal(err)
	}
	// The finished workflow: its job is gone, its result was left behind.
	e.exec(`DELETE FROM {{schema}}.docket_jobs WHERE id = $1`, done.Jobs["x"])
	e.exec(`INSERT INTO {{schema}}.docket_workflow_results (job_id, workflow_id, result) VALUES ($1, $2, '1'), ($3, $4, '2')`,
		done.Jobs["x"], done.ID, running.Jobs["y"], running.ID)
	for range 2 { // the second call starts over from the first workflow
		if _, err := e.q.SweepWorkflowResults(t.Context(), e.pool, 1); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_workflow_results WHERE workflow_id = $1`, done.ID); n != 0 {
		t.Errorf("the finished workflow keeps %d results", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_workflow_results WHERE workflow_id = $1`, running.ID); n != 1 {
		t.Errorf("the running workflow keeps %d results, want 1", n)
	}
}

var _ = json.Marshal
var _ = core.ErrNoResult
