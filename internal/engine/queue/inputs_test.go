package queue

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
)

type inputsArgs struct{}

func (inputsArgs) Kind() string { return "inputs" }

// analyzedNode is the part of EXPLAIN (ANALYZE, FORMAT JSON) read here.
type analyzedNode struct {
	RelationName string         `json:"Relation Name"`
	ActualLoops  int            `json:"Actual Loops"`
	Plans        []analyzedNode `json:"Plans"`
}

// loopsOn sums the loops of the plan's nodes that read the tables.
func (n analyzedNode) loopsOn(tables map[string]bool) (loops, nodes int) {
	if tables[n.RelationName] {
		loops, nodes = n.ActualLoops, 1
	}
	for _, c := range n.Plans {
		l, k := c.loopsOn(tables)
		loops, nodes = loops+l, nodes+k
	}
	return loops, nodes
}

// TestClaimReadsNoInputsOutsideWorkflows: the claim reads the dependency
// and result tables only for workflow jobs. EXPLAIN ANALYZE of a claim of
// a plain job shows the nodes that read them never executed; the same
// claim of a workflow step (the control) runs them.
func TestClaimReadsNoInputsOutsideWorkflows(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	jobs, q, schema := migrated(t, ctx, pool, Config{})
	inputTables := map[string]bool{"docket_workflow_deps": true, "docket_workflow_results": true}
	claimPlan := func() analyzedNode {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) // the claim is looked at, not kept
		var raw []byte
		err = tx.QueryRow(ctx, "EXPLAIN (ANALYZE, FORMAT JSON) "+sqlClaim.For(schema), []string{"default"}, []string{"inputs"}, 10,
			uuid.New(), int64(60000), []int16{0}, []int64{0}, []int64{math.MaxInt64}).Scan(&raw)
		if err != nil {
			t.Fatal(err)
		}
		var out []struct{ Plan analyzedNode }
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out[0].Plan
	}
	plain, err := jobs.Enqueue(ctx, pool, inputsArgs{}, enqueue.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	loops, nodes := claimPlan().loopsOn(inputTables)
	if nodes == 0 {
		t.Fatal("the claim's plan reads neither the dependencies nor the results: is claimInputs in it?")
	}
	if loops != 0 {
		t.Errorf("claiming a job outside workflows ran the plan's nodes on the dependency and result tables %d times, want never", loops)
	}
	// The control: a workflow step whose parent completed.
	if _, err := pool.Exec(ctx, `DELETE FROM `+schema+`.docket_jobs WHERE id = $1`, plain.ID); err != nil {
		t.Fatal(err)
	}
	_, err = jobs.EnqueueWorkflow(ctx, pool, enqueue.Workflow{Name: "w", Jobs: []enqueue.WorkflowJob{
		{Ref: "a", Args: inputsArgs{}}, {Ref: "b", Args: inputsArgs{}, After: enqueue.After("a")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	claimed, err := q.Claim(ctx, pool, ClaimParams{Worker: w, Queues: []string{"default"}, Kinds: []string{"inputs"}, Limit: 10, Lease: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claimed %d, %v", len(claimed), err)
	}
	if _, err := q.Complete(ctx, pool, w, []Run{RunOf(claimed[0])}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if loops, _ := claimPlan().loopsOn(inputTables); loops == 0 {
		t.Error("claiming a workflow step did not read its dependencies")
	}
}

// TestClaimReturnsParentResults: the claim gives a workflow step its
// parents by ref, with the results of those that kept one; parents past
// the first 1,000 with results are marked omitted.
func TestClaimReturnsParentResults(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	jobs, q, schema := migrated(t, ctx, pool, Config{})
	wf, err := jobs.EnqueueWorkflow(ctx, pool, enqueue.Workflow{Name: "w", Jobs: []enqueue.WorkflowJob{
		{Ref: "a", Args: inputsArgs{}}, {Ref: "b", Args: inputsArgs{}},
		{Ref: "c", Args: inputsArgs{}, After: enqueue.After("a", "b")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	claimed, err := q.Claim(ctx, pool, ClaimParams{Worker: w, Queues: []string{"default"}, Kinds: []string{"inputs"}, Limit: 10, Lease: time.Minute})
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claimed %d, %v", len(claimed), err)
	}
	for _, j := range claimed {
		if core.Inputs(j) != nil {
			t.Errorf("root job %d got inputs %s", j.ID, core.Inputs(j))
		}
		if j.ID == wf.Jobs["a"] {
			core.SetResult(j, json.RawMessage(`{"rows": 3}`))
		}
	}
	runs := []Run{RunOf(claimed[0]), RunOf(claimed[1])}
	if done, err := q.Complete(ctx, pool, w, runs, time.Time{}); err != nil || len(done) != 2 {
		t.Fatalf("complete: %v, %v", done, err)
	}
	claimed, err = q.Claim(ctx, pool, ClaimParams{Worker: w, Queues: []string{"default"}, Kinds: []string{"inputs"}, Limit: 10, Lease: time.Minute})
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claimed %d, %v", len(claimed), err)
	}
	var got, want any
	_ = json.Unmarshal(core.Inputs(claimed[0]), &got)
	_ = json.Unmarshal([]byte(`{"parents": {"a": {"result": {"rows": 3}}, "b": {}}}`), &want)
	if gb, _ := json.Marshal(got); string(gb) != mustJSON(want) {
		t.Errorf("inputs %s, want %s", core.Inputs(claimed[0]), mustJSON(want))
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.docket_workflow_results WHERE workflow_id = $1`, wf.ID).Scan(&n); err != nil || n != 1 {
		t.Errorf("kept results: %d, %v; want a's only (b recorded none)", n, err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
