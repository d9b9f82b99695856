package admin_test

import (
	"errors"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/google/uuid"
)

// A bulk action counts first, then touches exactly what it counted, in
// batches: never a running job, never a job enqueued after the count.
func TestApplyMatchingBoundedByPreview(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 2*admin.BulkBatch+10, enqueue.Opts{})
	running := b.Claim(t, uuid.New(), 3, time.Minute)
	b.EnqueueN(t, 5, enqueue.Opts{Queue: "other"})
	jobs := b.ops.Jobs()
	f := admin.JobFilter{Queue: "default", After: 7, Limit: 5} // a page position: ignored
	m, err := jobs.Matching(b.Ctx, b.Pool, f, admin.BulkCancel)
	if err != nil {
		t.Fatal(err)
	}
	if m.Count != 2*admin.BulkBatch+10-3 || m.More {
		t.Fatalf("matching: %+v, want every bulk job but the 3 running", m)
	}
	late := b.EnqueueN(t, 4, enqueue.Opts{})
	var batches int
	n, err := jobs.ApplyMatching(b.Ctx, b.Pool, f, admin.BulkCancel, m, admin.BulkOptions{Note: "bulk", Progress: func(int64) { batches++ }})
	if err != nil || n != m.Count {
		t.Fatalf("cancelled %d (%v), want %d", n, err, m.Count)
	}
	if batches != 3 {
		t.Errorf("%d batches, want 3 of at most %d", batches, admin.BulkBatch)
	}
	if got := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs_dead")+` WHERE queue = 'default' AND reason = 'cancelled' AND last_error = 'bulk'`); got != int(m.Count) {
		t.Errorf("%d cancelled jobs in the dead-letter table, want %d", got, m.Count)
	}
	for _, j := range running {
		if s, err := jobs.States(b.Ctx, b.Pool, []int64{j.ID}); err != nil || s[j.ID] != admin.StateRunning {
			t.Errorf("running job %d: %v %v", j.ID, s, err)
		}
	}
	states, err := jobs.States(b.Ctx, b.Pool, append(late, 1<<40))
	if err != nil || len(states) != 4 {
		t.Errorf("the jobs enqueued after the count: %v %v, want 4 still ready", states, err)
	}
	for _, id := range late {
		if states[id] != admin.StateReady {
			t.Errorf("job %d enqueued after the count is %q", id, states[id])
		}
	}
	if got := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE queue = 'other'`); got != 5 {
		t.Errorf("other queue: %d jobs left, want 5", got)
	}

	// Delete the dead ones: the count and the action agree.
	dm, err := jobs.Matching(b.Ctx, b.Pool, admin.JobFilter{State: admin.StateDead, Queue: "default"}, admin.BulkDelete)
	if err != nil || dm.Count != m.Count {
		t.Fatalf("dead matching: %+v %v", dm, err)
	}
	if n, err := jobs.ApplyMatching(b.Ctx, b.Pool, admin.JobFilter{State: admin.StateDead, Queue: "default"}, admin.BulkDelete, dm, admin.BulkOptions{}); err != nil || n != dm.Count {
		t.Errorf("deleted %d dead jobs (%v), want %d", n, err, dm.Count)
	}
}

// Retry makes scheduled jobs due now and replays dead ones; refused
// filters say why.
func TestApplyMatchingRetryAndRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 3, enqueue.Opts{Queue: "later", Delay: time.Hour})
	b.EnqueueN(t, 2, enqueue.Opts{Queue: "later"})
	dead := b.deadN(t, 4, enqueue.Opts{Queue: "bounce"}, "smtp: 550")
	jobs := b.ops.Jobs()
	f := admin.JobFilter{Queue: "later"}
	m, err := jobs.Matching(b.Ctx, b.Pool, f, admin.BulkRetry)
	if err != nil || m.Count != 3 {
		t.Fatalf("retry matching: %+v %v, want the 3 scheduled", m, err)
	}
	if n, err := jobs.ApplyMatching(b.Ctx, b.Pool, f, admin.BulkRetry, m, admin.BulkOptions{}); err != nil || n != 3 {
		t.Errorf("retried %d (%v)", n, err)
	}
	if got := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE queue = 'later' AND state = 'ready'`); got != 5 {
		t.Errorf("%d ready jobs in later, want 5", got)
	}
	df := admin.JobFilter{State: admin.StateDead, Kind: "noop"}
	m, err = jobs.Matching(b.Ctx, b.Pool, df, admin.BulkRetry)
	if err != nil || m.Count != 4 {
		t.Fatalf("dead retry matching: %+v %v", m, err)
	}
	start := time.Now()
	if n, err := jobs.ApplyMatching(b.Ctx, b.Pool, df, admin.BulkRetry, m, admin.BulkOptions{Rate: 20}); err != nil || n != 4 {
		t.Errorf("replayed %d (%v)", n, err)
	}
	if el := time.Since(start); el < 100*time.Millisecond {
		t.Errorf("4 jobs at 20/s took %v, want paced batches", el)
	}
	if s, _ := jobs.States(b.Ctx, b.Pool, dead); len(s) != 4 || s[dead[0]] != admin.StateReady {
		t.Errorf("replayed dead jobs: %v", s)
	}
	for _, c := range []struct {
		f   admin.JobFilter
		act admin.BulkAction
	}{
		{admin.JobFilter{}, admin.BulkDelete},
		{admin.JobFilter{State: admin.StateRunning}, admin.BulkCancel},
		{admin.JobFilter{State: admin.StateCompleted}, admin.BulkDelete},
		{admin.JobFilter{State: admin.StateDead}, admin.BulkCancel},
		{admin.JobFilter{Queue: "later"}, "explode"},
	} {
		if _, err := jobs.Matching(b.Ctx, b.Pool, c.f, c.act); !errors.Is(err, admin.ErrUnsafeFilter) {
			t.Errorf("%s %+v: %v, want ErrUnsafeFilter", c.act, c.f, err)
		}
		if _, err := jobs.ApplyMatching(b.Ctx, b.Pool, c.f, c.act, admin.Matching{Count: 10, MaxID: 1 << 40}, admin.BulkOptions{}); !errors.Is(err, admin.ErrUnsafeFilter) {
			t.Errorf("apply %s %+v: %v, want ErrUnsafeFilter", c.act, c.f, err)
		}
	}
}

// A dead-letter group is counted and discarded by its exact error, older
// deaths first, up to the limit; other groups stay.
func TestDiscardDeadGroup(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deadN(t, 5, enqueue.Opts{Queue: "a"}, "100% broken_")
	b.deadN(t, 3, enqueue.Opts{Queue: "b"}, "100% broken_ too") // LIKE wildcards must not reach it
	g := admin.DeadGroup{Kind: "noop", Error: "100% broken_"}
	f, _ := g.Filter()
	f.Before = time.Now().Add(time.Second)
	dl := b.ops.DeadLetters()
	if n, err := dl.Count(b.Ctx, b.Pool, f); err != nil || n != 5 {
		t.Fatalf("count: %d %v, want 5", n, err)
	}
	f.Limit = 4
	if n, err := dl.Discard(b.Ctx, b.Pool, f); err != nil || n != 4 {
		t.Errorf("discard up to 4: %d %v", n, err)
	}
	f.Limit = -1
	if n, err := dl.Count(b.Ctx, b.Pool, f); err != nil || n != 1 {
		t.Errorf("left in the group: %d %v, want 1", n, err)
	}
	if n, err := dl.Count(b.Ctx, b.Pool, admin.DeadFilter{}); err != nil || n != 4 {
		t.Errorf("dead letters left: %d %v, want 4", n, err)
	}
}
