package worker

import (
	"context"
	"errors"
	"fmt"
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

// stepArgs is a workflow job that records when its handler ran.
type stepArgs struct {
	Name string `json:"name"`
	// FailTimes is how many first attempts fail.
	FailTimes int `json:"fail_times"`
}

func (stepArgs) Kind() string { return "wf_step" }

type fanInArgs struct{}

func (fanInArgs) Kind() string { return "wf_fan_in" }

// span is one successful run of a step: when its handler started and ended.
type span struct{ start, end time.Time }

// steps records the runs of wf_step and wf_fan_in handlers by name.
type steps struct {
	mu    sync.Mutex
	runs  map[string][]span // successful runs
	tries map[string]int    // every attempt
}

func newSteps() *steps { return &steps{runs: map[string][]span{}, tries: map[string]int{}} }

func (s *steps) register(reg *handlers.Registry, sleep time.Duration) {
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[stepArgs]) error {
		start := time.Now()
		s.mu.Lock()
		s.tries[j.Args.Name]++
		try := s.tries[j.Args.Name]
		s.mu.Unlock()
		time.Sleep(sleep)
		if try <= j.Args.FailTimes {
			return fmt.Errorf("step %s: attempt %d fails", j.Args.Name, try)
		}
		s.mu.Lock()
		s.runs[j.Args.Name] = append(s.runs[j.Args.Name], span{start, time.Now()})
		s.mu.Unlock()
		return nil
	}, handlers.KindOpts{Backoff: func(int) time.Duration { return 200 * time.Millisecond }})
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[fanInArgs]) error {
		s.mu.Lock()
		s.runs["fan-in"] = append(s.runs["fan-in"], span{time.Now(), time.Now()})
		s.mu.Unlock()
		return nil
	}, handlers.KindOpts{})
}

func (s *steps) get(name string) []span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]span(nil), s.runs[name]...)
}

func (s *steps) attempts(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tries[name]
}

func step(ref string, after ...string) enqueue.WorkflowJob {
	return enqueue.WorkflowJob{Ref: ref, Args: stepArgs{Name: ref}, After: enqueue.After(after...)}
}

// waitWorkflow waits until workflow id exists and left running, and
// returns its state.
func (e *env) waitWorkflow(id int64, timeout time.Duration) admin.WorkflowState {
	e.t.Helper()
	var s admin.WorkflowState
	waitFor(e.t, timeout, fmt.Sprintf("workflow %d to finish", id), func() bool {
		var err error
		s, err = e.ops.Workflows().Status(context.Background(), e.pool, id)
		if errors.Is(err, admin.ErrWorkflowNotFound) {
			return false // its transaction has not committed yet
		}
		if err != nil {
			e.t.Fatal(err)
		}
		return s.State != admin.WorkflowRunning
	})
	return s
}

// after fails the test unless every run of child started after every run
// of each parent ended.
func (s *steps) after(t *testing.T, child string, parents ...string) {
	t.Helper()
	c := s.get(child)
	if len(c) != 1 {
		t.Fatalf("%s ran %d times, want once", child, len(c))
	}
	for _, p := range parents {
		runs := s.get(p)
		if len(runs) == 0 {
			t.Fatalf("%s ran before its parent %s ever did", child, p)
		}
		for _, r := range runs {
			if c[0].start.Before(r.end) {
				t.Errorf("%s started at %s, before its parent %s ended at %s", child, c[0].start.Format(time.StampMicro), p, r.end.Format(time.StampMicro))
			}
		}
	}
}

// stepsWorker starts, on a fresh schema, a worker of 4 slots that runs the
// step kinds, each run sleeping sleep.
func stepsWorker(t *testing.T, sleep time.Duration) (*env, *steps) {
	t.Helper()
	e := setup(t, 12)
	e.logJobsOnFailure()
	s := newSteps()
	reg := handlers.NewRegistry()
	s.register(reg, sleep)
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 4}}})
	return e, s
}

func TestWorkflowDiamondWithWorker(t *testing.T) {
	t.Parallel()
	e, s := stepsWorker(t, 50*time.Millisecond)
	res, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "diamond", Jobs: []enqueue.WorkflowJob{
		step("a"), step("b", "a"), step("c", "a"), step("d", "b", "c"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.waitWorkflow(res.ID, 20*time.Second); st.State != admin.WorkflowSucceeded {
		t.Fatalf("workflow ended %+v", st)
	}
	s.after(t, "b", "a")
	s.after(t, "c", "a")
	s.after(t, "d", "b", "c")
}

func TestWorkflowFanOutFanInWithWorkers(t *testing.T) {
	e := setup(t, 24)
	e.logJobsOnFailure()
	s := newSteps()
	const n = 10_000
	for range 3 {
		reg := handlers.NewRegistry()
		s.register(reg, 0)
		e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 20}}})
	}
	jobs := []enqueue.WorkflowJob{step("root")}
	var mids []string
	for i := range n {
		ref := fmt.Sprint("m", i)
		mids = append(mids, ref)
		jobs = append(jobs, step(ref, "root"))
	}
	jobs = append(jobs, enqueue.WorkflowJob{Ref: "fan-in", Args: fanInArgs{}, After: enqueue.After(mids...)})
	start := time.Now()
	res, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "fan", Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitWorkflow(res.ID, 120*time.Second)
	t.Logf("%d jobs through 3 workers in %s", n+2, time.Since(start))
	if st.State != admin.WorkflowSucceeded || st.Jobs != n+2 {
		t.Fatalf("workflow ended %+v", st)
	}
	fanIn := s.get("fan-in")
	if len(fanIn) != 1 {
		t.Fatalf("fan-in ran %d times", len(fanIn))
	}
	var last time.Time
	for _, m := range mids {
		runs := s.get(m)
		if len(runs) == 0 {
			t.Fatalf("%s never ran", m)
		}
		for _, r := range runs {
			if r.end.After(last) {
				last = r.end
			}
		}
	}
	if fanIn[0].start.Before(last) {
		t.Errorf("fan-in started at %s, before the last parallel job ended at %s", fanIn[0].start, last)
	}
	if got := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE workflow_id = $1`, res.ID); got != n+2 {
		t.Errorf("history holds %d jobs of the workflow, want %d", got, n+2)
	}
}

func TestWorkflowDeadParentCancelsDescendantsWithWorker(t *testing.T) {
	t.Parallel()
	e, s := stepsWorker(t, 0)
	res, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "doomed", Jobs: []enqueue.WorkflowJob{
		{Ref: "bad", Args: stepArgs{Name: "bad", FailTimes: 1}, Opts: enqueue.Opts{MaxAttempts: 1}},
		step("child", "bad"),
		step("grandchild", "child"),
		step("sibling"),
		step("joined", "sibling", "grandchild"),
		{Ref: "report", Args: stepArgs{Name: "report"}, After: []enqueue.Dependency{{Ref: "bad", RunAnyway: true}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := e.waitWorkflow(res.ID, 20*time.Second)
	if st.State != admin.WorkflowFailed || st.Failed != 4 {
		t.Fatalf("workflow ended %+v, want failed with 4 dead jobs", st)
	}
	if d := e.dead(res.Jobs["bad"]); d.reason != core.ReasonExhausted {
		t.Errorf("bad: %+v", d)
	}
	for _, ref := range []string{"child", "grandchild", "joined"} {
		if d := e.dead(res.Jobs[ref]); d.reason != core.ReasonCancelled {
			t.Errorf("%s dead as %+v, want cancelled", ref, d)
		}
		if n := s.attempts(ref); n != 0 {
			t.Errorf("%s ran %d times; a cancelled descendant never runs", ref, n)
		}
	}
	if len(s.get("report")) != 1 {
		t.Errorf("report, which runs anyway after bad, ran %d times", len(s.get("report")))
	}
	if len(s.get("sibling")) != 1 {
		t.Errorf("sibling ran %d times", len(s.get("sibling")))
	}
}

func TestWorkflowRetriedParentHoldsChildren(t *testing.T) {
	t.Parallel()
	e, s := stepsWorker(t, 20*time.Millisecond)
	res, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "retry", Jobs: []enqueue.WorkflowJob{
		{Ref: "flaky", Args: stepArgs{Name: "flaky", FailTimes: 2}, Opts: enqueue.Opts{MaxAttempts: 5}},
		step("next", "flaky"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if st := e.waitWorkflow(res.ID, 20*time.Second); st.State != admin.WorkflowSucceeded {
		t.Fatalf("workflow ended %+v", st)
	}
	if n := s.attempts("flaky"); n != 3 {
		t.Errorf("flaky ran %d times, want 3", n)
	}
	s.after(t, "next", "flaky")
}

// TestWorkflowStartedByTransactionalHandler shows a job (a schedule's run
// is one) starting a workflow in its handler's transaction: the workflow
// exists exactly when the job's completion commits.
func TestWorkflowStartedByTransactionalHandler(t *testing.T) {
	t.Parallel()
	e := setup(t, 12)
	e.logJobsOnFailure()
	s := newSteps()
	reg := handlers.NewRegistry()
	s.register(reg, 0)
	started := make(chan int64, 2)
	var calls sync.Map
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[starterArgs]) error {
		res, err := e.jobs.EnqueueWorkflow(ctx, tx, enqueue.Workflow{Name: "nightly", Jobs: []enqueue.WorkflowJob{
			step("extract"), step("load", "extract"),
		}})
		if err != nil {
			return err
		}
		if _, again := calls.LoadOrStore(j.Attempt, true); !again && j.Attempt == 1 {
			// The first attempt fails after enqueueing: its workflow must
			// vanish with its transaction.
			return errors.New("first attempt rolls back")
		}
		started <- res.ID
		return nil
	}, handlers.KindOpts{Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 2}}})
	e.enqueue(starterArgs{}, enqueue.Opts{})
	var id int64
	select {
	case id = <-started:
	case <-time.After(20 * time.Second):
		t.Fatal("the starter job never succeeded")
	}
	if st := e.waitWorkflow(id, 20*time.Second); st.State != admin.WorkflowSucceeded {
		t.Fatalf("workflow ended %+v", st)
	}
	if got := e.count(`SELECT count(*) FROM {{schema}}.docket_workflows`); got != 1 {
		t.Errorf("%d workflows, want 1: the rolled-back attempt's must not exist", got)
	}
	s.after(t, "load", "extract")
}

type starterArgs struct{}

func (starterArgs) Kind() string { return "wf_starter" }

// TestWorkflowSurvivesKilledWorker kills a worker process with SIGKILL
// while the middle jobs of a workflow run, then starts another: the reaper
// hands the killed runs back, the workflow ends succeeded with every job
// completed, and the fan-in runs once, after every middle job's last run.
func TestWorkflowSurvivesKilledWorker(t *testing.T) {
	e := setup(t, 8)
	e.logJobsOnFailure()
	createEffects(t, e.pool, e.schema)
	e.exec(`ALTER TABLE {{schema}}.effects ADD COLUMN at timestamptz NOT NULL DEFAULT clock_timestamp()`)
	jobs := []enqueue.WorkflowJob{{Ref: "root", Args: blockArgs{}}}
	var mids []string
	for i := range 6 {
		ref := fmt.Sprint("mid", i)
		mids = append(mids, ref)
		jobs = append(jobs, enqueue.WorkflowJob{Ref: ref, Args: blockArgs{}, After: enqueue.After("root")})
	}
	jobs = append(jobs, enqueue.WorkflowJob{Ref: "fan-in", Args: blockArgs{}, After: enqueue.After(mids...)})
	res, err := e.jobs.EnqueueWorkflow(t.Context(), e.pool, enqueue.Workflow{Name: "killed", Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	midIDs := make([]int64, len(mids))
	for i, m := range mids {
		midIDs[i] = res.Jobs[m]
	}
	// Every job sleeps 1.5s in its handler: the kill lands mid-run.
	first := startProcess(t, pgtest.URL(t), e.schema, envLease+"=2000", envConc+"=10", envSleep+"=1500")
	waitFor(t, 20*time.Second, "middle jobs to start", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.effects WHERE kind = $1 AND job_id = ANY($2)`, blockStarted, midIDs) == len(mids)
	})
	first.kill()
	if got := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE kind = 'proc_block' AND job_id = ANY($1)`, midIDs); got != 0 {
		t.Fatalf("%d middle jobs finished before the kill; the test kills too late", got)
	}
	startProcess(t, pgtest.URL(t), e.schema, envLease+"=1000", envConc+"=10", envSleep+"=100")
	if st := e.waitWorkflow(res.ID, 60*time.Second); st.State != admin.WorkflowSucceeded || st.Jobs != len(jobs) {
		t.Fatalf("workflow ended %+v", st)
	}
	for ref, id := range res.Jobs {
		if got := e.where(id); got != "done" {
			t.Errorf("%s is %q, want done", ref, got)
		}
		if n := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE kind = 'proc_block' AND job_id = $1`, id); n < 1 {
			t.Errorf("%s never ran to its end", ref)
		}
	}
	if n := e.count(`SELECT count(DISTINCT job_id) FROM {{schema}}.effects
		WHERE kind = 'proc_block' AND job_id = ANY($1) AND worker <> $2`, midIDs, first.id); n != len(mids) {
		t.Errorf("%d middle jobs ran to their end in the second worker, want all %d (the killed runs again)", n, len(mids))
	}
	fanIn := res.Jobs["fan-in"]
	if n := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE job_id = $1`, fanIn); n != 2 {
		t.Errorf("fan-in has %d effects, want one start and one end: it ran once", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.effects f, {{schema}}.effects m
		WHERE f.job_id = $1 AND f.kind = $2 AND m.job_id = ANY($3) AND m.kind = 'proc_block' AND m.at > f.at`,
		fanIn, blockStarted, midIDs); n != 0 {
		t.Errorf("%d middle runs ended after the fan-in started", n)
	}
}
