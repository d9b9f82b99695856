package dashtest

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// Step is a workflow step no process serves: the fixture moves it by hand.
type Step struct {
	Name string `json:"name"`
}

func (Step) Kind() string { return "step" }

// Spawn is a step whose handler starts a child workflow of one Leaf.
type Spawn struct{}

func (Spawn) Kind() string { return "spawn" }

// Leaf is the child workflow's step, scheduled an hour ahead.
type Leaf struct{}

func (Leaf) Kind() string { return "leaf" }

// Workflow is a workflow whose steps are in every state a step can be in,
// as Bundle.Workflow leaves it (job ids by step name):
//
//	fetch     completed (in history)
//	charge    running           (after fetch)
//	pack      ready             (after fetch)
//	ship      waiting           (after charge and pack)
//	approve   waiting for signal "approval", for an hour (after fetch)
//	audit     dead (exhausted)
//	report    dead (cancelled: its parent audit failed)
//	invoice   waiting (after charge), for signal "note", which was sent
//	spawn     waiting for its child workflow Child (after fetch)
//
// The signal "note" carries Secret in its payload. The child
// workflow has one step, leaf, scheduled.
type Workflow struct {
	ID    int64
	Jobs  map[string]int64
	Child int64
	Leaf  int64
}

// Workflow builds the fixture's workflow: steps moved through the worker
// protocol, and a real worker that runs spawn, whose transactional handler
// starts the child workflow.
func (b *Bundle) Workflow(t testing.TB) Workflow {
	t.Helper()
	ctx := b.Ctx
	plain, err := docket.NewClient(b.Pool, docket.Config{Schema: b.Schema})
	if err != nil {
		t.Fatal(err)
	}
	wf := docket.Opts{Queue: "wf"}
	res, err := plain.EnqueueWorkflow(ctx, b.Pool, docket.Workflow{Name: "order 7", Jobs: []docket.WorkflowJob{
		{Ref: "fetch", Args: Step{"fetch"}, Opts: wf},
		{Ref: "charge", Args: Step{"charge"}, Opts: docket.Opts{Queue: "wf", Priority: 5}, After: docket.After("fetch")},
		{Ref: "pack", Args: Step{"pack"}, Opts: wf, After: docket.After("fetch")},
		{Ref: "ship", Args: Step{"ship"}, Opts: wf, After: docket.After("charge", "pack")},
		{Ref: "approve", Args: Step{"approve"}, Opts: docket.Opts{Queue: "wf-approve"}, After: docket.After("fetch"), WaitFor: "approval", WaitTimeout: time.Hour},
		{Ref: "audit", Args: Step{"audit"}, Opts: docket.Opts{Queue: "wf-audit"}},
		{Ref: "report", Args: Step{"report"}, Opts: docket.Opts{Queue: "wf-audit"}, After: docket.After("audit")},
		{Ref: "invoice", Args: Step{"invoice"}, Opts: docket.Opts{Queue: "wf-approve"}, After: docket.After("charge"), WaitFor: "note"},
		{Ref: "spawn", Args: Spawn{}, Opts: docket.Opts{Queue: "spawn"}, After: docket.After("fetch")},
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := Workflow{ID: res.ID, Jobs: res.Jobs}
	q, err := queue.New(b.Schema, queue.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w := uuid.New()
	claim := func(queueName string) *queue.Run {
		t.Helper()
		jobs, err := q.Claim(ctx, b.Pool, queue.ClaimParams{Worker: w, Queues: []string{queueName}, Kinds: []string{"step"}, Limit: 1, Lease: time.Hour})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("claim from %s: %d %v", queueName, len(jobs), err)
		}
		run := queue.RunOf(jobs[0])
		return &run
	}
	fetch := claim("wf")
	if _, err := q.Complete(ctx, b.Pool, w, []queue.Run{*fetch}, time.Now()); err != nil {
		t.Fatal(err)
	}
	// charge has the higher priority: it is claimed, pack stays ready.
	if charge := claim("wf"); charge.ID != res.Jobs["charge"] {
		t.Fatalf("claimed job %d, want charge %d", charge.ID, res.Jobs["charge"])
	}
	audit := claim("wf-audit")
	if _, err := q.DeadLetter(ctx, b.Pool, w, []queue.Dead{{Run: *audit, Reason: admin.ReasonExhausted, Error: "audit: ledger mismatch"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Signal(ctx, b.Pool, res.ID, "note", map[string]string{"by": Secret}); err != nil {
		t.Fatal(err)
	}

	// spawn runs in a real worker and starts the child workflow.
	reg := handlers.NewRegistry()
	var runner *docket.Client
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[Spawn]) error {
		_, err := runner.EnqueueChildWorkflow(ctx, tx, j.Job, docket.Workflow{Name: "order 7 shipping", Jobs: []docket.WorkflowJob{
			{Ref: "leaf", Args: Leaf{}, Opts: docket.Opts{Queue: "leaf", Delay: time.Hour}},
		}})
		return err
	}, handlers.KindOpts{Queue: "spawn"})
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[Leaf]) error { return nil }, handlers.KindOpts{Queue: "leaf"})
	runner, err = docket.NewClient(b.Pool, docket.Config{Schema: b.Schema, Registry: reg,
		Worker: docket.WorkerConfig{PollInterval: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&SyncBuffer{}, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	if err := runner.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer runner.Stop(context.Background())
	deadline := time.Now().Add(20 * time.Second)
	for {
		jw, err := b.Ops.Workflows().OfJob(ctx, b.Pool, res.Jobs["spawn"])
		if err != nil {
			t.Fatal(err)
		}
		st, err := b.Ops.Jobs().States(ctx, b.Pool, []int64{res.Jobs["spawn"]})
		if err != nil {
			t.Fatal(err)
		}
		if jw.ChildWorkflowID != 0 && st[res.Jobs["spawn"]] == admin.StateWaiting {
			out.Child = jw.ChildWorkflowID
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("spawn %d started no child workflow: %+v, state %q", res.Jobs["spawn"], jw, st[res.Jobs["spawn"]])
		}
		time.Sleep(50 * time.Millisecond)
	}
	g, err := b.Ops.Workflows().Graph(ctx, b.Pool, admin.WorkflowState{ID: out.Child, CreatedAt: time.Now().Add(-time.Hour), Jobs: 1}, false)
	if err != nil || len(g.Steps) != 1 {
		t.Fatalf("child workflow %d: %+v %v", out.Child, g, err)
	}
	out.Leaf = g.Steps[0].ID
	return out
}
