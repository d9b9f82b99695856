package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/docketq/docket/internal/testkit/jsonbig"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// wfJob is a workflow job of kind noop after refs.
func wfJob(ref string, after ...string) enqueue.WorkflowJob {
	return enqueue.WorkflowJob{Ref: ref, Args: noop{}, After: enqueue.After(after...)}
}

// raw is a job whose payload holds JSON text as given, the way a
// json.RawMessage field passes it through.
type raw struct {
	P json.RawMessage `json:"p"`
}

func (raw) Kind() string { return "raw" }

// number is a job with a json.Number field, which json.Marshal writes as
// it is.
type number struct {
	N json.Number `json:"n"`
}

func (number) Kind() string { return "number" }

// where says where job id is: its state in the jobs table, "done", "dead"
// or "".
func (b *bundle) where(t *testing.T, id int64) string {
	t.Helper()
	var s string
	err := b.Pool.QueryRow(b.Ctx, fmt.Sprintf(`SELECT COALESCE(
		(SELECT state FROM %[1]s WHERE id = $1),
		(SELECT 'done' FROM %[2]s WHERE id = $1 LIMIT 1),
		(SELECT 'dead' FROM %[3]s WHERE id = $1), '')`,
		b.Table("docket_jobs"), b.Table("docket_jobs_done"), b.Table("docket_jobs_dead")), id).Scan(&s)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// finish claims the ready noop jobs and completes those in ok, fails the
// others for good (max attempts 1 needed), and returns the ids it claimed.
func (b *bundle) finish(t *testing.T, fail map[int64]bool) []int64 {
	t.Helper()
	w := uuid.New()
	jobs := b.Claim(t, w, 1000, time.Minute)
	var done []queue.Run
	var failed []queue.Failure
	var ids []int64
	for _, j := range jobs {
		ids = append(ids, j.ID)
		if fail[j.ID] {
			failed = append(failed, queue.Failure{Run: queue.RunOf(j), Error: "boom"})
		} else {
			done = append(done, queue.RunOf(j))
		}
	}
	if _, err := b.Q.Complete(b.Ctx, b.Pool, w, done, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Q.Fail(b.Ctx, b.Pool, w, failed); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

func (b *bundle) workflowState(t *testing.T, id int64) admin.WorkflowState {
	t.Helper()
	s, err := b.ops.Workflows().Status(b.Ctx, b.Pool, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestWorkflowDiamondReleasesInOrder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "diamond", Jobs: []enqueue.WorkflowJob{
		wfJob("d", "b", "c"), wfJob("b", "a"), wfJob("c", "a"), wfJob("a"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Jobs
	for ref, want := range map[string]string{"a": "ready", "b": "waiting", "c": "waiting", "d": "waiting"} {
		if got := b.where(t, id[ref]); got != want {
			t.Errorf("%s is %s after enqueue, want %s", ref, got, want)
		}
	}
	if s := b.workflowState(t, res.ID); s.State != admin.WorkflowRunning || s.Jobs != 4 || s.Remaining != 4 || s.Name != "diamond" {
		t.Errorf("status after enqueue: %+v", s)
	}
	if got := b.finish(t, nil); !slices.Equal(got, []int64{id["a"]}) {
		t.Fatalf("first round ran %v, want only a (%d)", got, id["a"])
	}
	if got, want := b.finish(t, nil), []int64{id["b"], id["c"]}; !slices.Equal(got, want) {
		t.Fatalf("second round ran %v, want b and c %v", got, want)
	}
	if got := b.finish(t, nil); !slices.Equal(got, []int64{id["d"]}) {
		t.Fatalf("third round ran %v, want only d", got)
	}
	if s := b.workflowState(t, res.ID); s.State != admin.WorkflowSucceeded || s.Remaining != 0 || s.Failed != 0 {
		t.Errorf("status at the end: %+v", s)
	}
	var inHistory int
	if err := b.Pool.QueryRow(b.Ctx, `SELECT count(*) FROM `+b.Table("docket_jobs_done")+` WHERE workflow_id = $1`, res.ID).Scan(&inHistory); err != nil || inHistory != 4 {
		t.Errorf("history rows with the workflow id: %d %v", inHistory, err)
	}
}

func TestWorkflowFailedParentCancelsDescendants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	once := enqueue.Opts{MaxAttempts: 1}
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "cascade", Jobs: []enqueue.WorkflowJob{
		{Ref: "a", Args: noop{}, Opts: once},
		wfJob("child", "a"),
		wfJob("grandchild", "child"),
		{Ref: "cleanup", Args: noop{}, After: []enqueue.Dependency{{Ref: "a", RunAnyway: true}}},
		wfJob("after-cleanup", "cleanup"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Jobs
	b.finish(t, map[int64]bool{id["a"]: true})
	for _, ref := range []string{"child", "grandchild"} {
		if got := b.where(t, id[ref]); got != "dead" {
			t.Fatalf("%s is %s, want dead", ref, got)
		}
	}
	var reason, lastErr string
	if err := b.Pool.QueryRow(b.Ctx, `SELECT reason, last_error FROM `+b.Table("docket_jobs_dead")+` WHERE id = $1`, id["child"]).Scan(&reason, &lastErr); err != nil {
		t.Fatal(err)
	}
	if reason != admin.ReasonCancelled || lastErr != fmt.Sprintf("parent job %d failed", id["a"]) {
		t.Errorf("child dead with %q %q", reason, lastErr)
	}
	if got := b.finish(t, nil); !slices.Equal(got, []int64{id["cleanup"]}) {
		t.Fatalf("after the failure ran %v, want only the run-anyway job %d", got, id["cleanup"])
	}
	if got := b.finish(t, nil); !slices.Equal(got, []int64{id["after-cleanup"]}) {
		t.Fatalf("then ran %v, want after-cleanup", got)
	}
	if s := b.workflowState(t, res.ID); s.State != admin.WorkflowFailed || s.Failed != 3 || s.Remaining != 0 {
		t.Errorf("status: %+v", s)
	}
}

func TestWorkflowRetryDoesNotReleaseChildren(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "retry", Jobs: []enqueue.WorkflowJob{
		{Ref: "a", Args: noop{}, Opts: enqueue.Opts{MaxAttempts: 3}}, wfJob("b", "a"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	b.finish(t, map[int64]bool{res.Jobs["a"]: true})
	if got := b.where(t, res.Jobs["a"]); got != "ready" {
		t.Fatalf("a after a failed attempt is %s, want ready", got)
	}
	if got := b.where(t, res.Jobs["b"]); got != "waiting" {
		t.Fatalf("b after a's failed attempt is %s, want waiting", got)
	}
	b.finish(t, nil)
	if got := b.where(t, res.Jobs["b"]); got != "ready" {
		t.Fatalf("b after a succeeded is %s, want ready", got)
	}
}

func TestWorkflowRejectedWritesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	counts := func() string {
		var jobs, wfs, deps int
		err := b.Pool.QueryRow(b.Ctx, fmt.Sprintf(`SELECT (SELECT count(*) FROM %s), (SELECT count(*) FROM %s), (SELECT count(*) FROM %s)`,
			b.Table("docket_jobs"), b.Table("docket_workflows"), b.Table("docket_workflow_deps"))).Scan(&jobs, &wfs, &deps)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(jobs, wfs, deps)
	}
	// A job in flight holds the key "taken".
	if _, err := b.Jobs.Enqueue(b.Ctx, b.Pool, noop{}, enqueue.Opts{UniqueKey: "taken"}); err != nil {
		t.Fatal(err)
	}
	before := counts()
	cases := []struct {
		name string
		w    enqueue.Workflow
		is   error
		want string
	}{
		{"empty", enqueue.Workflow{Name: "x"}, docket.ErrInvalidWorkflow, "no jobs"},
		{"no name", enqueue.Workflow{Jobs: []enqueue.WorkflowJob{wfJob("a")}}, docket.ErrInvalidWorkflow, "name"},
		{"cycle", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{wfJob("root"), wfJob("a", "root", "c"), wfJob("b", "a"), wfJob("c", "b")}},
			docket.ErrInvalidWorkflow, "cycle"},
		{"self", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{wfJob("a", "a")}}, docket.ErrInvalidWorkflow, "cycle a -> a"},
		{"unknown ref", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{wfJob("a"), wfJob("b", "nope")}}, docket.ErrInvalidWorkflow, `"nope", which is not a job`},
		{"duplicate ref", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{wfJob("a"), wfJob("a")}}, docket.ErrInvalidWorkflow, `two jobs have ref "a"`},
		{"empty ref", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{wfJob("")}}, docket.ErrInvalidWorkflow, "ref"},
		{"twice after", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{wfJob("a"), wfJob("b", "a", "a")}}, docket.ErrInvalidWorkflow, "twice"},
		{"serial key", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{{Ref: "a", Args: noop{}, Opts: enqueue.Opts{SerialKey: "k"}}}}, docket.ErrInvalidWorkflow, "serial keys"},
		{"bad job", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{{Ref: "a", Args: noop{}, Opts: enqueue.Opts{Priority: 99}}}}, docket.ErrInvalidJob, `job "a"`},
		{"number numeric cannot hold", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{wfJob("a"), {Ref: "b", Args: number{N: "1e131072"}, After: enqueue.After("a")}}},
			docket.ErrInvalidJob, `job "b": docket: invalid job: kind number: payload holds a number outside PostgreSQL numeric's range`},
		{"payload over jsonb's limit", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{{Ref: "a", Args: raw{P: jsonbig.Over()}}}},
			docket.ErrInvalidJob, "over its limit of 268435455"},
		{"same key twice", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{
			{Ref: "a", Args: noop{}, Opts: enqueue.Opts{UniqueKey: "k"}}, {Ref: "b", Args: noop{}, Opts: enqueue.Opts{UniqueKey: "k"}}}},
			docket.ErrInvalidWorkflow, "same unique key"},
		{"key taken", enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{wfJob("a"), {Ref: "b", Args: noop{}, Opts: enqueue.Opts{UniqueKey: "taken"}, After: enqueue.After("a")}}},
			docket.ErrWorkflowKeyTaken, `job "b": unique key "taken" is held by job`},
	}
	for _, c := range cases {
		// In a caller's transaction, which stays usable after the refusal.
		tx, err := b.Pool.Begin(b.Ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Jobs.EnqueueWorkflow(b.Ctx, tx, c.w)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %v containing %q", c.name, err, c.is, c.want)
		}
		if _, err := tx.Exec(b.Ctx, `SELECT 1`); err != nil {
			t.Errorf("%s: caller's transaction unusable: %v", c.name, err)
		}
		if err := tx.Commit(b.Ctx); err != nil {
			t.Fatal(err)
		}
		if got := counts(); got != before {
			t.Errorf("%s: jobs, workflows, deps went from %s to %s", c.name, before, got)
		}
	}
	_, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{wfJob("a"), wfJob("b", "a"), wfJob("c", "b"), wfJob("b2", "c", "a")}})
	if err != nil {
		t.Fatalf("a valid workflow after the refusals: %v", err)
	}
}

func TestWorkflowCycleNamesItsJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{
		wfJob("a"), wfJob("b", "a", "d"), wfJob("c", "b"), wfJob("d", "c"), wfJob("e", "d"),
	}})
	if err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("err %v", err)
	}
	msg := err.Error()[strings.Index(err.Error(), "cycle ")+len("cycle "):]
	// Each ref runs after the one before it: c -> d -> b -> c.
	refs := strings.Split(msg, " -> ")
	if len(refs) != 4 || refs[0] != refs[3] {
		t.Fatalf("cycle reported as %q, want three refs and the first repeated", msg)
	}
	after := map[string]string{"b": "d", "c": "b", "d": "c"} // child: its parent in the cycle
	for i := 1; i < len(refs); i++ {
		if after[refs[i]] != refs[i-1] {
			t.Errorf("cycle reported as %q: %s does not run after %s", msg, refs[i], refs[i-1])
		}
	}
}

// TestWorkflowSweepReadiesChildBothParentsMissed completes a child's two
// parents in two transactions at once: each trigger still sees the other
// parent, so the child stays waiting until the sweep readies it.
func TestWorkflowSweepReadiesChildBothParentsMissed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "race", Jobs: []enqueue.WorkflowJob{
		wfJob("p1"), wfJob("p2"), wfJob("child", "p1", "p2"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	jobs := jobtest.ByID(b.Claim(t, w, 10, time.Minute))
	if len(jobs) != 2 {
		t.Fatalf("claimed %d jobs, want the two parents", len(jobs))
	}
	txs := make([]pgx.Tx, 2)
	for i, ref := range []string{"p1", "p2"} {
		if txs[i], err = b.Pool.Begin(b.Ctx); err != nil {
			t.Fatal(err)
		}
		defer txs[i].Rollback(context.Background())
		if done, err := b.Q.Complete(b.Ctx, txs[i], w, []queue.Run{jobs[res.Jobs[ref]]}, time.Time{}); err != nil || len(done) != 1 {
			t.Fatalf("complete %s: %v %v", ref, done, err)
		}
	}
	for _, tx := range txs {
		if err := tx.Commit(b.Ctx); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.where(t, res.Jobs["child"]); got != "waiting" {
		t.Fatalf("child is %s after both parents completed at once; the race this test builds did not happen", got)
	}
	queues, err := b.Q.SweepWorkflows(b.Ctx, b.Pool, 100)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(queues, []string{"default"}) || b.where(t, res.Jobs["child"]) != "ready" {
		t.Fatalf("sweep returned %v and left the child %s", queues, b.where(t, res.Jobs["child"]))
	}
	if queues, err := b.Q.SweepWorkflows(b.Ctx, b.Pool, 100); err != nil || len(queues) != 0 {
		t.Fatalf("second sweep: %v %v", queues, err)
	}
}

// TestWorkflowSweepCancelsAfterFailedParent builds the state a failure
// leaves when its trigger could not act (the child locked by the other
// parent's transaction) and checks the sweep cancels the child.
func TestWorkflowSweepCancelsAfterFailedParent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "x", Jobs: []enqueue.WorkflowJob{
		wfJob("p"), wfJob("child", "p"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The parent goes dead with triggers off for the transaction.
	tx, err := b.Pool.Begin(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.Ctx)
	if _, err := tx.Exec(b.Ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Exec(b.Ctx, fmt.Sprintf(`WITH gone AS (DELETE FROM %s WHERE id = $1 RETURNING *)
		INSERT INTO %s (id, queue, kind, priority, tenant, attempts, max_attempts, created_at, run_at, reason, payload, workflow_id)
		SELECT id, queue, kind, priority, tenant, attempts, max_attempts, created_at, run_at, 'exhausted', payload, workflow_id FROM gone`,
		b.Table("docket_jobs"), b.Table("docket_jobs_dead")), res.Jobs["p"])
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(b.Ctx); err != nil {
		t.Fatal(err)
	}
	if got := b.where(t, res.Jobs["child"]); got != "waiting" {
		t.Fatalf("child %s before the sweep", got)
	}
	if queues, err := b.Q.SweepWorkflows(b.Ctx, b.Pool, 100); err != nil || len(queues) != 0 {
		t.Fatalf("sweep: %v %v", queues, err)
	}
	if got := b.where(t, res.Jobs["child"]); got != "dead" {
		t.Fatalf("child %s after the sweep, want dead", got)
	}
}

// TestWorkflowFanOutEnqueue writes a 10,000-way fan-out with its fan-in and
// checks the shape and the time it takes.
func TestWorkflowFanOutEnqueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	jobs := []enqueue.WorkflowJob{wfJob("root")}
	var mids []string
	for i := range 10_000 {
		ref := fmt.Sprint("m", i)
		mids = append(mids, ref)
		jobs = append(jobs, wfJob(ref, "root"))
	}
	jobs = append(jobs, wfJob("fanin", mids...))
	start := time.Now()
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "fan", Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("10,002 jobs and 20,000 dependencies enqueued in %s", took)
	if took > 10*time.Second {
		t.Errorf("enqueue took %s", took)
	}
	var waiting, deps int
	if err := b.Pool.QueryRow(b.Ctx, `SELECT count(*) FILTER (WHERE state = 'waiting') FROM `+b.Table("docket_jobs")+` WHERE workflow_id = $1`, res.ID).Scan(&waiting); err != nil {
		t.Fatal(err)
	}
	if err := b.Pool.QueryRow(b.Ctx, `SELECT count(*) FROM `+b.Table("docket_workflow_deps")+` WHERE workflow_id = $1`, res.ID).Scan(&deps); err != nil {
		t.Fatal(err)
	}
	if waiting != 10_001 || deps != 20_000 || len(res.Jobs) != 10_002 {
		t.Errorf("waiting %d, deps %d, ids %d", waiting, deps, len(res.Jobs))
	}
}

// TestWorkflowParentsFinishConcurrently completes many parents of one
// fan-in from several goroutines at once, each in its own transaction; with
// the sweep's help the child becomes ready exactly once.
func TestWorkflowParentsFinishConcurrently(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var parents []string
	jobs := []enqueue.WorkflowJob{}
	for i := range 40 {
		ref := fmt.Sprint("p", i)
		parents = append(parents, ref)
		jobs = append(jobs, wfJob(ref))
	}
	jobs = append(jobs, enqueue.WorkflowJob{Ref: "child", Args: other{}, After: enqueue.After(parents...)})
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "many", Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	claimed := b.Claim(t, w, 100, time.Minute)
	if len(claimed) != 40 {
		t.Fatalf("claimed %d", len(claimed))
	}
	var wg sync.WaitGroup
	for _, j := range claimed {
		wg.Go(func() {
			if _, err := b.Q.Complete(b.Ctx, b.Pool, w, []queue.Run{queue.RunOf(j)}, time.Time{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if got := b.where(t, res.Jobs["child"]); got != "ready" {
		if _, err := b.Q.SweepWorkflows(b.Ctx, b.Pool, 100); err != nil {
			t.Fatal(err)
		}
	}
	if got := b.where(t, res.Jobs["child"]); got != string(core.StateReady) {
		t.Fatalf("child %s", got)
	}
}

// A failed head cancels a chain of 1,000 waiting jobs: the cascade is one
// statement, not a trigger call per generation (which overflowed
// PostgreSQL's stack between 100 and 400 generations, failing the head's
// own dead-letter write).
func TestWorkflowDeepChainCancels(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const depth = 1000
	jobs := []enqueue.WorkflowJob{{Ref: "j0", Args: noop{}, Opts: enqueue.Opts{MaxAttempts: 1}}}
	for i := 1; i < depth; i++ {
		jobs = append(jobs, wfJob(fmt.Sprint("j", i), fmt.Sprint("j", i-1)))
	}
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "deep", Jobs: jobs})
	if err != nil {
		t.Fatal(err)
	}
	b.finish(t, map[int64]bool{res.Jobs["j0"]: true})
	if s := b.workflowState(t, res.ID); s.State != admin.WorkflowFailed || s.Failed != depth || s.Remaining != 0 {
		t.Fatalf("status %+v, want all %d jobs dead", s, depth)
	}
	var lastErr string
	if err := b.Pool.QueryRow(b.Ctx, `SELECT last_error FROM `+b.Table("docket_jobs_dead")+` WHERE id = $1`, res.Jobs["j2"]).Scan(&lastErr); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("ancestor job %d failed", res.Jobs["j0"]); lastErr != want {
		t.Errorf("a grandchild's error %q, want %q", lastErr, want)
	}
}

// Workflows.Cancel cancels a running workflow, again without error, and
// refuses one that finished, succeeded or failed, leaving it as it is.
func TestCancelWorkflowRefusesFinished(t *testing.T) {
	t.Parallel()
	b := setup(t)
	enqueueWF := func(name string, jobs ...enqueue.WorkflowJob) enqueue.WorkflowEnqueued {
		t.Helper()
		res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: name, Jobs: jobs})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ok := enqueueWF("succeeds", wfJob("a"), wfJob("b", "a"))
	b.finish(t, nil)
	b.finish(t, nil)
	failed := enqueueWF("fails", enqueue.WorkflowJob{Ref: "a", Args: noop{}, Opts: enqueue.Opts{MaxAttempts: 1}}, wfJob("b", "a"))
	b.finish(t, map[int64]bool{failed.Jobs["a"]: true})
	for _, tc := range []struct {
		id    int64
		state string
	}{{ok.ID, admin.WorkflowSucceeded}, {failed.ID, admin.WorkflowFailed}} {
		if s := b.workflowState(t, tc.id); s.State != tc.state {
			t.Fatalf("workflow %d is %s before the cancel, want %s", tc.id, s.State, tc.state)
		}
		n, err := b.ops.Workflows().Cancel(b.Ctx, b.Pool, tc.id)
		if !errors.Is(err, admin.ErrWorkflowFinished) || n != 0 || !strings.Contains(err.Error(), tc.state) {
			t.Errorf("cancel of the %s workflow: %d, %v; want ErrWorkflowFinished naming its state", tc.state, n, err)
		}
		if s := b.workflowState(t, tc.id); s.State != tc.state || !s.CancelledAt.IsZero() {
			t.Errorf("after the refused cancel: %+v, want it %s and not cancelled", s, tc.state)
		}
	}

	running := enqueueWF("runs", wfJob("a"), wfJob("b", "a"))
	if n, err := b.ops.Workflows().Cancel(b.Ctx, b.Pool, running.ID); err != nil || n != 2 {
		t.Fatalf("cancel of a running workflow: %d, %v; want 2 jobs cancelled", n, err)
	}
	if n, err := b.ops.Workflows().Cancel(b.Ctx, b.Pool, running.ID); err != nil || n != 0 {
		t.Errorf("second cancel: %d, %v; want no error and nothing left to cancel", n, err)
	}
	if s := b.workflowState(t, running.ID); s.State != admin.WorkflowCancelled {
		t.Errorf("cancelled workflow is %s", s.State)
	}
	if _, err := b.ops.Workflows().Cancel(b.Ctx, b.Pool, running.ID+1000); !errors.Is(err, admin.ErrWorkflowNotFound) {
		t.Errorf("cancel of an unknown workflow: %v", err)
	}
}

// A workflow job deleted before it ran (Jobs.Delete, RemoveQueued) never
// completed: its dependents are cancelled as for a failed parent, and the
// RunAnyway ones run.
func TestWorkflowDeletedParentCancelsDependents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "charge, ship, notify", Jobs: []enqueue.WorkflowJob{
		wfJob("charge"),
		wfJob("ship", "charge"),
		wfJob("notify", "ship"),
		{Ref: "audit", Args: noop{}, After: []enqueue.Dependency{{Ref: "charge", RunAnyway: true}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Jobs
	if err := b.ops.Jobs().Delete(b.Ctx, b.Pool, id["charge"]); err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{"charge": "", "ship": "dead", "notify": "dead", "audit": "ready"} {
		if got := b.where(t, id[ref]); got != want {
			t.Errorf("%s is %q after its parent was deleted, want %q", ref, got, want)
		}
	}
	var lastErr string
	if err := b.Pool.QueryRow(b.Ctx, `SELECT last_error FROM `+b.Table("docket_jobs_dead")+` WHERE id = $1`, id["ship"]).Scan(&lastErr); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("parent job %d deleted", id["charge"]); lastErr != want {
		t.Errorf("ship's error %q, want %q", lastErr, want)
	}

	// RemoveQueued withdraws a job the same way.
	keyed, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "keyed", Jobs: []enqueue.WorkflowJob{
		{Ref: "a", Args: noop{}, Opts: enqueue.Opts{UniqueKey: "invoice:9"}}, wfJob("b", "a"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := b.Jobs.RemoveQueued(b.Ctx, b.Pool, "invoice:9"); err != nil || !ok || got != keyed.Jobs["a"] {
		t.Fatalf("RemoveQueued: %d %v %v", got, ok, err)
	}
	if got := b.where(t, keyed.Jobs["b"]); got != "dead" {
		t.Errorf("child of a withdrawn job is %q, want dead", got)
	}
	if s := b.workflowState(t, keyed.ID); s.State != admin.WorkflowFailed {
		t.Errorf("workflow of a withdrawn job: %+v, want failed", s)
	}
}

// A cancel that meets the workflow's last job completing in a transaction
// not yet committed waits for it and, once it committed, refuses: it
// never marks a workflow cancelled after its last job completed.
func TestCancelWorkflowWaitsForLastCompletion(t *testing.T) {
	t.Parallel()
	b := setup(t)
	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "last", Jobs: []enqueue.WorkflowJob{wfJob("only")}})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	jobs := b.Claim(t, w, 1, time.Minute)
	if len(jobs) != 1 {
		t.Fatalf("claimed %d jobs", len(jobs))
	}
	tx, err := b.Pool.Begin(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if got, err := b.Q.Complete(b.Ctx, tx, w, jobtest.RunsOf(jobs), time.Time{}); err != nil || len(got) != 1 {
		t.Fatalf("complete: %v %v", got, err)
	}
	type result struct {
		n   int64
		err error
	}
	done := make(chan result, 1)
	go func() {
		n, err := b.ops.Workflows().Cancel(b.Ctx, b.Pool, res.ID)
		done <- result{n, err}
	}()
	// The cancel waits for the completion's row lock.
	deadline := time.Now().Add(30 * time.Second)
	for b.Count(t, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%' || $1 || '%' AND datname = current_database()`, b.Schema) == 0 {
		select {
		case r := <-done:
			t.Fatalf("the cancel returned (%d, %v) while the last job's completion was not committed", r.n, r.err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the cancel never waited for the completion")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tx.Commit(b.Ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if !errors.Is(r.err, admin.ErrWorkflowFinished) {
		t.Errorf("cancel after the last job completed: %d, %v; want ErrWorkflowFinished", r.n, r.err)
	}
	if s := b.workflowState(t, res.ID); s.State != admin.WorkflowSucceeded {
		t.Errorf("workflow after the race: %+v, want succeeded", s)
	}
}
