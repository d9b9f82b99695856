package admin_test

import (
	"errors"
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

// claimRun claims the one ready job for worker with lease.
func (b *bundle) claimRun(t *testing.T, worker uuid.UUID, lease time.Duration) queue.Run {
	t.Helper()
	jobs := b.Claim(t, worker, 1, lease)
	if len(jobs) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(jobs))
	}
	return queue.RunOf(jobs[0])
}

func (b *bundle) attempts(t *testing.T, id int64) []admin.Attempt {
	t.Helper()
	got, err := b.ops.Jobs().Attempts(b.Ctx, b.Pool, id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// registerWorker publishes worker in docket_workers, as a worker process
// does, so that attempts name its host and pid.
func (b *bundle) registerWorker(t *testing.T, worker uuid.UUID, host string, pid int) {
	t.Helper()
	if err := b.Q.RegisterWorker(b.Ctx, b.Pool, queue.WorkerInfo{ID: worker, Host: host, PID: pid, Kinds: []string{"noop"}, Queues: []string{"default"}, TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// TestAttemptHistoryOutcomes runs one job through every way an attempt
// ends: a failure with a long error (cut and marked), a lease that expired
// (reaped), a snooze (not an attempt), a run in progress, and a last
// failure that dead-letters it; then replays it and completes it. Each
// ended run is listed with its times, worker and error, before and after
// the replay.
func TestAttemptHistoryOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.EnqueueN(t, 1, enqueue.Opts{MaxAttempts: 3})[0]
	w1, w2 := uuid.New(), uuid.New()
	b.registerWorker(t, w1, "host-a", 101)
	b.registerWorker(t, w2, "host-b", 202)

	if got := b.attempts(t, id); len(got) != 0 {
		t.Fatalf("a job that never ran has attempts %+v", got)
	}
	// 1: fails with an error longer than an attempt keeps.
	long := strings.Repeat("é", admin.MaxAttemptError+10)
	run := b.claimRun(t, w1, time.Minute)
	if res, err := b.Q.Fail(b.Ctx, b.Pool, w1, []queue.Failure{{Run: run, Error: long}}); err != nil || len(res.Retried) != 1 {
		t.Fatalf("fail: %+v %v", res, err)
	}
	// 2: its worker stops heartbeating; the reaper takes it back.
	b.claimRun(t, w2, time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	if res, err := b.Q.Reap(b.Ctx, b.Pool, 10); err != nil || res.Requeued != 1 {
		t.Fatalf("reap: %+v %v", res, err)
	}
	// A snooze gives its attempt back and is not listed.
	run = b.claimRun(t, w1, time.Minute)
	if got, err := b.Q.Snooze(b.Ctx, b.Pool, w1, []queue.Snoozed{{Run: run}}); err != nil || len(got) != 1 {
		t.Fatalf("snooze: %v %v", got, err)
	}
	// 3: running, then exhausted.
	run = b.claimRun(t, w1, time.Minute)
	got := b.attempts(t, id)
	if len(got) != 3 || got[2].Outcome != admin.AttemptRunning || got[2].Attempt != 3 || got[2].Worker != w1 ||
		got[2].WorkerHost != "host-a" || got[2].WorkerPID != 101 || !got[2].FinishedAt.IsZero() {
		t.Fatalf("while the third attempt runs: %+v", got)
	}
	if res, err := b.Q.Fail(b.Ctx, b.Pool, w1, []queue.Failure{{Run: run, Error: "boom 3"}}); err != nil || len(res.Dead) != 1 {
		t.Fatalf("last fail: %+v %v", res, err)
	}

	dead := b.attempts(t, id)
	want := []struct {
		attempt int
		outcome string
		worker  uuid.UUID
		host    string
		err     string
	}{
		{1, admin.AttemptFailed, w1, "host-a", strings.Repeat("é", admin.MaxAttemptError) + " …[truncated: 10 more characters]"},
		{2, admin.ReasonLeaseExpired, w2, "host-b", "lease expired"},
		{3, admin.ReasonExhausted, w1, "host-a", "boom 3"},
	}
	if len(dead) != len(want) {
		t.Fatalf("dead letter has %d attempts, want %d: %+v", len(dead), len(want), dead)
	}
	for i, w := range want {
		a := dead[i]
		if a.Attempt != w.attempt || a.Outcome != w.outcome || a.Worker != w.worker || a.WorkerHost != w.host ||
			!strings.HasPrefix(a.Error, w.err) || a.StartedAt.IsZero() || a.FinishedAt.Before(a.StartedAt) {
			t.Errorf("attempt %d = %+v, want %+v", i+1, a, w)
		}
	}
	if len(dead[0].Error) == len(long) || !strings.HasSuffix(dead[0].Error, "more characters]") {
		t.Errorf("long error not cut: %d bytes", len(dead[0].Error))
	}
	// The job's last error is the worker's, not the attempt's, to cut.
	if d, err := b.ops.DeadLetters().Get(b.Ctx, b.Pool, id, false); err != nil || d.LastError != "boom 3" {
		t.Fatalf("dead letter %+v %v", d, err)
	}

	// Replayed, the job keeps its id and its history and adds to it.
	res, err := b.ops.DeadLetters().Replay(b.Ctx, b.Pool, admin.DeadFilter{IDs: []int64{id}}, admin.ReplayOptions{})
	if err != nil || len(res.Replayed) != 1 || res.Replayed[0] != id {
		t.Fatalf("replay: %+v %v", res, err)
	}
	if got := b.attempts(t, id); len(got) != 3 {
		t.Fatalf("replayed job has %d attempts, want the 3 before: %+v", len(got), got)
	}
	run = b.claimRun(t, w2, time.Minute)
	if done, err := b.Q.Complete(b.Ctx, b.Pool, w2, []queue.Run{run}, time.Time{}); err != nil || len(done) != 1 {
		t.Fatalf("complete: %v %v", done, err)
	}
	final := b.attempts(t, id)
	if len(final) != 4 {
		t.Fatalf("completed job has %d attempts, want 4: %+v", len(final), final)
	}
	last := final[3]
	if last.Attempt != 1 || last.Outcome != admin.AttemptCompleted || last.Worker != w2 || last.WorkerHost != "host-b" ||
		last.WorkerPID != 202 || last.FinishedAt.Before(last.StartedAt) || last.Error != "" {
		t.Errorf("completion = %+v", last)
	}
	for i := range 3 {
		if final[i] != dead[i] {
			t.Errorf("attempt %d changed by the replay: %+v, was %+v", i+1, final[i], dead[i])
		}
	}

	if _, err := b.ops.Jobs().Attempts(b.Ctx, b.Pool, id+1000); !errors.Is(err, admin.ErrJobNotFound) {
		t.Errorf("unknown job: %v, want ErrJobNotFound", err)
	}
}

// TestAttemptHistoryCancelledAndCapped: a run the handler cancels is listed
// with outcome cancelled; a job keeps only its newest MaxAttempts runs.
func TestAttemptHistoryCancelledAndCapped(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.EnqueueN(t, 1, enqueue.Opts{MaxAttempts: admin.MaxAttempts + 50})[0]
	w := uuid.New()
	for range admin.MaxAttempts + 5 {
		run := b.claimRun(t, w, time.Minute)
		if res, err := b.Q.Fail(b.Ctx, b.Pool, w, []queue.Failure{{Run: run, Error: "again"}}); err != nil || len(res.Retried) != 1 {
			t.Fatalf("fail: %+v %v", res, err)
		}
	}
	run := b.claimRun(t, w, time.Minute)
	if got, err := b.Q.DeadLetter(b.Ctx, b.Pool, w, []queue.Dead{{Run: run, Reason: admin.ReasonCancelled, Error: "not wanted"}}); err != nil || len(got) != 1 {
		t.Fatalf("dead-letter: %v %v", got, err)
	}
	got := b.attempts(t, id)
	if len(got) != admin.MaxAttempts {
		t.Fatalf("%d attempts kept, want %d", len(got), admin.MaxAttempts)
	}
	if first, last := got[0], got[len(got)-1]; first.Attempt != 7 || last.Attempt != admin.MaxAttempts+6 ||
		last.Outcome != admin.ReasonCancelled || last.Error != "not wanted" || last.Worker != w || last.WorkerHost != "" {
		t.Errorf("kept attempts %d..%d, last %+v", first.Attempt, last.Attempt, last)
	}
}

// TestAttemptHistoryRetention: attempts live on their job's row. Dropping
// the history partition a completed job finished in removes its attempts;
// a dead letter's attempts, written on the same days, stay as long as the
// dead letter.
func TestAttemptHistoryRetention(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.EnqueueN(t, 2, enqueue.Opts{MaxAttempts: 2})
	w := uuid.New()
	for range 2 { // both fail once
		run := b.claimRun(t, w, time.Minute)
		if _, err := b.Q.Fail(b.Ctx, b.Pool, w, []queue.Failure{{Run: run, Error: "first"}}); err != nil {
			t.Fatal(err)
		}
	}
	// One completes into the partition of a day long past; the other dies.
	past := time.Now().AddDate(0, 0, -10)
	if err := partition.Of(b.Schema).Ensure(b.Ctx, b.Pool, past, 0); err != nil {
		t.Fatal(err)
	}
	runs := map[int64]queue.Run{}
	for _, j := range b.Claim(t, w, 2, time.Minute) {
		runs[j.ID] = queue.RunOf(j)
	}
	if done, err := b.Q.Complete(b.Ctx, b.Pool, w, []queue.Run{runs[ids[0]]}, past); err != nil || len(done) != 1 {
		t.Fatalf("complete: %v %v", done, err)
	}
	if res, err := b.Q.Fail(b.Ctx, b.Pool, w, []queue.Failure{{Run: runs[ids[1]], Error: "second"}}); err != nil || len(res.Dead) != 1 {
		t.Fatalf("fail: %+v %v", res, err)
	}
	if n := len(b.attempts(t, ids[0])); n != 2 {
		t.Fatalf("completed job has %d attempts, want 2", n)
	}

	dropped, err := partition.Of(b.Schema).Drop(b.Ctx, b.Pool, time.Now().AddDate(0, 0, -5))
	if err != nil || len(dropped) != 1 {
		t.Fatalf("dropped %v: %v", dropped, err)
	}
	if _, err := b.ops.Jobs().Attempts(b.Ctx, b.Pool, ids[0]); !errors.Is(err, admin.ErrJobNotFound) {
		t.Errorf("completed job's attempts after its partition was dropped: %v, want ErrJobNotFound", err)
	}
	if got := b.attempts(t, ids[1]); len(got) != 2 || got[0].Error != "first" || got[1].Error != "second" {
		t.Errorf("dead letter's attempts after the drop: %+v", got)
	}
	// Purged, the dead letter takes its attempts along.
	if n, err := b.ops.DeadLetters().Purge(b.Ctx, b.Pool, time.Now().Add(time.Hour)); err != nil || n != 1 {
		t.Fatalf("purge: %d %v", n, err)
	}
	if _, err := b.ops.Jobs().Attempts(b.Ctx, b.Pool, ids[1]); !errors.Is(err, admin.ErrJobNotFound) {
		t.Errorf("purged dead letter's attempts: %v, want ErrJobNotFound", err)
	}
}

// TestAttemptHistoryFirstTryAndHistoryOff: a job that succeeds on its first
// attempt writes no attempt_log (its run is the history row's); with
// history off a completed job goes with its runs, and a dead letter keeps
// them.
func TestAttemptHistoryFirstTryAndHistoryOff(t *testing.T) {
	t.Parallel()
	b := setup(t)
	id := b.EnqueueN(t, 1, enqueue.Opts{})[0]
	w := uuid.New()
	run := b.claimRun(t, w, time.Minute)
	if done, err := b.Q.Complete(b.Ctx, b.Pool, w, []queue.Run{run}, time.Time{}); err != nil || len(done) != 1 {
		t.Fatalf("complete: %v %v", done, err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs_done")+` WHERE id = $1 AND attempt_log IS NULL AND worker_id = $2`, id, w); n != 1 {
		t.Error("a first-attempt completion wrote an attempt_log, or no worker_id")
	}
	if got := b.attempts(t, id); len(got) != 1 || got[0].Outcome != admin.AttemptCompleted || got[0].Attempt != 1 || got[0].Worker != w {
		t.Errorf("first-attempt completion: %+v", got)
	}

	off := jobtestOff(t, b)
	ids := off.EnqueueN(t, 2, enqueue.Opts{MaxAttempts: 2})
	for range 2 {
		run := off.claimRun(t, w, time.Minute)
		if _, err := off.Q.Fail(b.Ctx, b.Pool, w, []queue.Failure{{Run: run, Error: "first"}}); err != nil {
			t.Fatal(err)
		}
	}
	runs := map[int64]queue.Run{}
	for _, j := range off.Claim(t, w, 2, time.Minute) {
		runs[j.ID] = queue.RunOf(j)
	}
	if done, err := off.Q.Complete(b.Ctx, b.Pool, w, []queue.Run{runs[ids[0]]}, time.Time{}); err != nil || len(done) != 1 {
		t.Fatalf("complete: %v %v", done, err)
	}
	if _, err := off.Q.Fail(b.Ctx, b.Pool, w, []queue.Failure{{Run: runs[ids[1]], Error: "second"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := off.ops.Jobs().Attempts(b.Ctx, b.Pool, ids[0]); !errors.Is(err, admin.ErrJobNotFound) {
		t.Errorf("history off, completed job's attempts: %v, want ErrJobNotFound", err)
	}
	if got := off.attempts(t, ids[1]); len(got) != 2 || got[1].Outcome != admin.ReasonExhausted {
		t.Errorf("history off, dead letter's attempts: %+v", got)
	}
}

// jobtestOff is a bundle on a fresh schema whose queue has history off.
func jobtestOff(t *testing.T, b *bundle) *bundle {
	t.Helper()
	env := jobtest.New(t, b.Pool, queue.Config{DisableHistory: true})
	ops, err := admin.New(admin.Config{Schema: env.Schema})
	if err != nil {
		t.Fatal(err)
	}
	return &bundle{Env: env, ops: ops}
}
