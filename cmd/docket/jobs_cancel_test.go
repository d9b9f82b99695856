package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docketq/docket"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/google/uuid"
)

// jobs show prints a running job's progress and its cancel request; jobs
// cancel of a running job requests its cancellation instead of refusing,
// and the job, once its (here: gone) worker's lease expired, is
// dead-lettered as cancelled with its progress kept.
func TestJobsCancelRunning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, schema := pgtest.URL(t), pgtest.Schema(t)
	db := []string{"--database-url", url, "--schema", schema}
	cmd := func(args ...string) string {
		t.Helper()
		code, out, errOut := runDocket(t, append(args, db...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s %s", args, code, out, errOut)
		}
		return out
	}
	cmd("migrate", "up")
	pool := pgtest.Pool(t)
	c := enqueueClient(t, pool, schema)
	e, err := c.Enqueue(ctx, pool, mailArgs{To: "a@example.com"}, docket.Opts{Queue: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := queue.New(schema, queue.Config{})
	worker := uuid.New()
	jobs, err := q.Claim(ctx, pool, queue.ClaimParams{Worker: worker, Queues: []string{"mail"}, Kinds: []string{"mail"}, Limit: 1, Lease: time.Minute})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d %v", len(jobs), err)
	}
	// The worker's last heartbeat writes the handler's progress and a
	// short lease; then the worker is gone.
	progress := []queue.Progress{{ID: e.ID, Value: []byte(`{"done":3,"of":10}`), Message: "copying rows"}}
	if _, err := q.Heartbeat(ctx, pool, worker, []queue.Run{queue.RunOf(jobs[0])}, 300*time.Millisecond, progress); err != nil {
		t.Fatal(err)
	}
	id := itoa(e.ID)
	if out := cmd("jobs", "cancel", id); !strings.Contains(out, "cancellation requested") {
		t.Errorf("jobs cancel of a running job: %q", out)
	}
	// has reports whether out has a line of key and value (tab-aligned).
	has := func(out, key, value string) bool {
		for line := range strings.Lines(out) {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "  "); ok && k == key && strings.TrimSpace(v) == value {
				return true
			}
		}
		return false
	}
	out := cmd("jobs", "show", id)
	for _, want := range [][2]string{{"state", "running"}, {"progress", `{"of": 10, "done": 3} copying rows`}} {
		if !has(out, want[0], want[1]) {
			t.Errorf("jobs show of the running job lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "cancel requested") {
		t.Errorf("jobs show of the running job lacks its cancel request:\n%s", out)
	}
	time.Sleep(400 * time.Millisecond)
	if res, err := q.Reap(ctx, pool, 10); err != nil || res.Dead != 1 {
		t.Fatalf("reap: %+v %v", res, err)
	}
	out = cmd("jobs", "show", id)
	if !strings.Contains(out, "last error:\ncancelled by operator") {
		t.Errorf("jobs show of the cancelled job lacks the note:\n%s", out)
	}
	for _, want := range [][2]string{{"state", "dead"}, {"reason", "cancelled"}, {"progress", `{"of": 10, "done": 3} copying rows`}} {
		if !has(out, want[0], want[1]) {
			t.Errorf("jobs show of the cancelled job lacks %q:\n%s", want, out)
		}
	}
}
