package admin_test

import (
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/google/uuid"
)

func (b *bundle) overview(t *testing.T) *admin.Overview {
	t.Helper()
	o, err := b.ops.Overview(b.Ctx, b.Pool, admin.Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// The overview counts jobs waiting in a serial key's line apart from
// workflow jobs waiting for their parents.
func TestOverviewSplitsWaiting(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 3, enqueue.Opts{SerialKey: "account:1"}) // one holds the key, two wait
	_, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "chain", Jobs: []enqueue.WorkflowJob{
		wfJob("a"), wfJob("b", "a"), wfJob("c", "b"), wfJob("d", "c"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	if o := b.overview(t); o.SerialWaiting != 2 || o.WorkflowWaiting != 3 {
		t.Errorf("waiting: %d in serial lines, %d in workflows; want 2 and 3", o.SerialWaiting, o.WorkflowWaiting)
	}
}

// Counts that stopped at a limit say so: a paused queue of 10,001 ready
// jobs is "at least 10,000" in the overview's warning, and an unserved kind
// found among the head of a longer queue "at least" its count there; the
// exact Status gives the exact numbers. Dead letters past the window make
// every queue's figures from it lower bounds.
func TestOverviewWarningsSayAtLeast(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = admin.OverviewLimit + 1
	b.EnqueueN(t, n, enqueue.Opts{Queue: "bulk"})
	if err := b.ops.Queues().Pause(b.Ctx, b.Pool, "bulk"); err != nil {
		t.Fatal(err)
	}
	o := b.overview(t)
	if q := queueOf(t, o.Status, "bulk"); q.Ready != admin.OverviewLimit || !o.Capped(q.Ready) {
		t.Errorf("bulk: %d ready in the overview, want %d (capped)", q.Ready, admin.OverviewLimit)
	}
	for code, want := range map[string]string{
		admin.WarnPaused:       "queue bulk is paused with at least 10,000 ready jobs",
		admin.WarnUnservedKind: "at least 1,000 ready noop jobs in queue bulk and no live worker serves them",
	} {
		if w, ok := warning(o.Status, code, "bulk"); !ok || !strings.HasPrefix(w.Message, want) {
			t.Errorf("overview %s warning: %q, want it to start %q", code, w.Message, want)
		}
	}
	s := b.status(t, admin.Thresholds{})
	for code, want := range map[string]string{
		admin.WarnPaused:       "queue bulk is paused with 10,001 ready jobs",
		admin.WarnUnservedKind: "10,001 ready noop jobs in queue bulk and no live worker serves them",
	} {
		if w, ok := warning(s, code, "bulk"); !ok || !strings.HasPrefix(w.Message, want) {
			t.Errorf("status %s warning: %q, want it to start %q", code, w.Message, want)
		}
	}

	// One more dead job than the overview reads.
	b.deadN(t, n, enqueue.Opts{Queue: "failing"}, "upstream 503")
	o = b.overview(t)
	if !o.Dead1hCapped || !o.DLQDelta24hCapped || o.Completed1mCapped {
		t.Errorf("capped windows: dead 1h %v, dlq delta %v, completed 1m %v; want true, true, false",
			o.Dead1hCapped, o.DLQDelta24hCapped, o.Completed1mCapped)
	}
	if w, ok := warning(o.Status, admin.WarnDLQGrowing, "failing"); !ok || w.Message != "queue failing: dead-letter queue grew by at least 10,000 in 24h to at least 10,000" {
		t.Errorf("overview dlq warning: %q", w.Message)
	}
	if w, ok := warning(b.status(t, admin.Thresholds{}), admin.WarnDLQGrowing, "failing"); !ok || w.Message != "queue failing: dead-letter queue grew by 10,001 in 24h to 10,001" {
		t.Errorf("status dlq warning: %q", w.Message)
	}

	// Once a live worker serves the kind, nothing is unserved.
	if err := b.Q.RegisterWorker(b.Ctx, b.Pool, queue.WorkerInfo{ID: uuid.New(), Host: "h", PID: 1, Kinds: []string{"noop"}, Queues: []string{"bulk"}, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if o := b.overview(t); len(o.Unserved) != 0 {
		t.Errorf("unserved with a live worker: %+v", o.Unserved)
	}
}

// Each queue's row carries what docs/dashboard.md promises: scheduled,
// done in the last minute and hour, dead in the last hour and its dead
// letters (of any age), with totals that are their sums.
func TestOverviewQueueColumns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 3, enqueue.Opts{Queue: "mail", Delay: time.Hour})
	b.EnqueueN(t, 2, enqueue.Opts{Queue: "mail"})
	b.EnqueueN(t, 4, enqueue.Opts{})
	worker := uuid.New()
	done := b.Claim(t, worker, 4, time.Minute)
	if _, err := b.Q.Complete(b.Ctx, b.Pool, worker, jobtest.RunsOf(done), time.Now()); err != nil {
		t.Fatal(err)
	}
	// Two of the four finished 30 minutes ago: in the hour, not the minute.
	// Half an hour ago may be yesterday (UTC), whose history partition a
	// fresh schema does not have.
	if err := partition.Of(b.Schema).Ensure(b.Ctx, b.Pool, time.Now().Add(-30*time.Minute), 0); err != nil {
		t.Fatal(err)
	}
	b.exec(t, "UPDATE "+b.Table("docket_jobs_done")+" SET finished_at = now() - interval '30 minutes' WHERE id = ANY($1)",
		[]int64{done[0].ID, done[1].ID})
	old := b.deadN(t, 5, enqueue.Opts{Queue: "bounce"}, "550 no such user")
	// Three of the five died two days ago: dead letters, not dead in 1h.
	b.exec(t, "UPDATE "+b.Table("docket_jobs_dead")+" SET dead_at = now() - interval '2 days' WHERE id = ANY($1)", old[:3])

	o := b.overview(t)
	type row struct{ ready, scheduled, done1m, done1h, dead1h, dlq int64 }
	for name, want := range map[string]row{
		"mail":    {ready: 2, scheduled: 3},
		"default": {done1m: 2, done1h: 4},
		"bounce":  {dead1h: 2, dlq: 5},
	} {
		q := queueOf(t, o.Status, name)
		if got := (row{q.Ready, q.Scheduled, q.Completed1m, q.Completed1h, q.Dead1h, q.DLQSize}); got != want {
			t.Errorf("queue %s: %+v, want %+v", name, got, want)
		}
	}
	if o.Scheduled != 3 || o.Completed1h != 4 || o.DLQ != 5 {
		t.Errorf("totals: %d scheduled, %d completed 1h, %d dead letters; want 3, 4, 5", o.Scheduled, o.Completed1h, o.DLQ)
	}
}

func (b *bundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := b.Pool.Exec(b.Ctx, sql, args...); err != nil {
		t.Fatal(err)
	}
}
