package queue

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
)

type inputsArgs struct{}

func (inputsArgs) Kind() string { return "inputs" }

// TestClaimReadsNoInputsOutsideWorkflows: a claim of jobs outside
// workflows does not touch the dependency and result tables: its
// transaction holds no lock on them, as it would if the claim's plan read
// them at all (a subquery opens its tables when the statement starts, even
// if it never runs). The control, a claim of a workflow step, locks them.
func TestClaimReadsNoInputsOutsideWorkflows(t *testing.T) {
	ctx := t.Context()
	pool := pgtest.Pool(t)
	jobs, q, schema := migrated(t, ctx, pool, Config{})
	// locked claims in a transaction, rolled back, and returns which of the
	// dependency and result tables it locked.
	locked := func() []string {
		t.Helper()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx) // the claim is looked at, not kept
		got, err := q.Claim(ctx, tx, ClaimParams{Worker: uuid.New(), Queues: []string{"default"}, Kinds: []string{"inputs"}, Limit: 10, Lease: time.Minute})
		if err != nil || len(got) != 1 {
			t.Fatalf("claimed %d, %v", len(got), err)
		}
		var tables []string
		rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
			WHERE l.pid = pg_backend_pid() AND c.relnamespace = $1::regnamespace
				AND c.relname IN ('docket_workflow_deps', 'docket_workflow_results') ORDER BY 1`, schema)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			tables = append(tables, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return tables
	}
	plain, err := jobs.Enqueue(ctx, pool, inputsArgs{}, enqueue.Opts{})
	if err != nil {
		t.Fatal(err)
	}
	if got := locked(); len(got) != 0 {
		t.Errorf("claiming a job outside workflows locked %v", got)
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
	if got := locked(); len(got) != 2 {
		t.Errorf("claiming a workflow step locked %v, want both tables: the check above sees nothing", got)
	}
}

// TestClaimReturnsParentResults: the claim gives a workflow step its
// parents by ref, with the results of those that kept one, and the kept
// results go when the workflow's last job leaves.
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
	// The workflow's last job leaves: its kept results go with it, in the
	// same statement (no sweep runs here).
	if done, err := q.Complete(ctx, pool, w, []Run{RunOf(claimed[0])}, time.Time{}); err != nil || len(done) != 1 {
		t.Fatalf("complete: %v, %v", done, err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+schema+`.docket_workflow_results`).Scan(&n); err != nil || n != 0 {
		t.Errorf("after the workflow finished, %d kept results are left (%v)", n, err)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
