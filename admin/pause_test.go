package admin_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/google/uuid"
)

// TestPauseUnknownQueue: pausing or resuming a queue nobody uses is refused
// and writes nothing, unless the pause says Create; each way a queue is in
// use (a job live, dead or in history, a live worker, an earlier pause)
// lets it be paused.
func TestPauseUnknownQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rows := func() int { return b.Count(t, `SELECT count(*) FROM `+b.Table("docket_queues")) }
	pause := func(q string, opts ...admin.PauseOptions) error {
		return b.ops.Queues().Pause(b.Ctx, b.Pool, q, opts...)
	}
	resume := func(q string) error { return b.ops.Queues().Resume(b.Ctx, b.Pool, q) }

	for name, op := range map[string]func(string) error{"pause": func(q string) error { return pause(q) }, "resume": resume} {
		if err := op("mial"); !errors.Is(err, admin.ErrUnknownQueue) || !strings.Contains(err.Error(), `"mial"`) {
			t.Errorf("%s of a queue nobody uses: %v, want ErrUnknownQueue naming it", name, err)
		}
	}
	if n := rows(); n != 0 {
		t.Fatalf("refusals wrote %d docket_queues rows", n)
	}
	for _, q := range b.status(t, admin.Thresholds{}).Queues {
		if q.Queue == "mial" {
			t.Errorf("status lists the refused queue: %+v", q)
		}
	}

	// A queue in use, each in its own way.
	b.EnqueueN(t, 1, enqueue.Opts{Queue: "ready"})
	b.EnqueueN(t, 1, enqueue.Opts{Queue: "later", RunAt: time.Now().Add(time.Hour)})
	b.deadN(t, 1, enqueue.Opts{Queue: "dead"}, "boom")
	b.EnqueueN(t, 1, enqueue.Opts{Queue: "done"})
	w := uuid.New()
	jobs, err := b.Q.Claim(b.Ctx, b.Pool, queue.ClaimParams{Worker: w, Queues: []string{"done"}, Kinds: []string{"noop"}, Limit: 1, Lease: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d %v", len(jobs), err)
	}
	if _, err := b.Q.Complete(b.Ctx, b.Pool, w, jobtest.RunsOf(jobs), time.Time{}); err != nil {
		t.Fatal(err)
	}
	for q, ttl := range map[string]time.Duration{"served": time.Minute, "gone": -time.Minute} {
		if err := b.Q.RegisterWorker(b.Ctx, b.Pool, queue.WorkerInfo{ID: uuid.New(), Host: "h", PID: 1,
			Kinds: []string{"noop"}, Queues: []string{q}, TTL: ttl}); err != nil {
			t.Fatal(err)
		}
	}
	// Resuming a queue in use that was never paused changes nothing.
	if err := resume("later"); err != nil || rows() != 0 {
		t.Fatalf("resume of an unpaused queue in use: %v, %d rows", err, rows())
	}
	for _, q := range []string{"ready", "later", "dead", "done", "served"} {
		if err := pause(q); err != nil {
			t.Errorf("pause %s: %v", q, err)
		}
	}
	if err := pause("gone"); !errors.Is(err, admin.ErrUnknownQueue) {
		t.Errorf("pause of a queue only a gone worker served: %v, want ErrUnknownQueue", err)
	}
	// Resumed, a queue keeps its row and stays known.
	if err := resume("ready"); err != nil {
		t.Fatal(err)
	}
	if err := pause("ready"); err != nil {
		t.Errorf("pause after resume: %v", err)
	}
	if err := pause("new", admin.PauseOptions{Create: true}); err != nil {
		t.Fatalf("pause with Create: %v", err)
	}
	paused, err := b.ops.Queues().Paused(b.Ctx, b.Pool)
	if want := []string{"dead", "done", "later", "new", "ready", "served"}; err != nil || !slices.Equal(paused, want) {
		t.Errorf("paused %v %v, want %v", paused, err, want)
	}
	if err := pause("bad name", admin.PauseOptions{Create: true}); !errors.Is(err, admin.ErrInvalidName) {
		t.Errorf("pause of an invalid name: %v, want ErrInvalidName", err)
	}
}
