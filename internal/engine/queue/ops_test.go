package queue_test

import (
	"sync"
	"testing"
	"time"

	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/partition"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/google/uuid"
)

func TestConcurrentClaimersClaimEachJobOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const total = 20000
	b.EnqueueN(t, total, enqueue.Opts{})
	var mu sync.Mutex
	seen := make(map[int64]int, total)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker := uuid.New()
			for {
				jobs, err := b.Q.Claim(b.Ctx, b.Pool, queue.ClaimParams{
					Worker: worker, Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: 100, Lease: time.Minute,
				})
				if err != nil {
					t.Error(err)
					return
				}
				if len(jobs) == 0 {
					return
				}
				mu.Lock()
				for _, j := range jobs {
					seen[j.ID]++
					if j.Attempt != 1 {
						t.Errorf("job %d attempt %d", j.ID, j.Attempt)
					}
				}
				mu.Unlock()
				if done, err := b.Q.Complete(b.Ctx, b.Pool, worker, jobtest.RunsOf(jobs), time.Time{}); err != nil || len(done) != len(jobs) {
					t.Errorf("complete: %d of %d, %v", len(done), len(jobs), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("claimed %d distinct jobs, want %d", len(seen), total)
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("job %d claimed %d times", id, n)
		}
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs_done")); n != total {
		t.Fatalf("%d in history, want %d", n, total)
	}
}

func TestClaimOrderAndFilters(t *testing.T) {
	t.Parallel()
	b := setup(t)
	low := b.EnqueueN(t, 2, enqueue.Opts{Priority: -1})
	high := b.EnqueueN(t, 2, enqueue.Opts{Priority: 5})
	mid := b.EnqueueN(t, 2, enqueue.Opts{})
	if _, err := b.Jobs.Enqueue(b.Ctx, b.Pool, other{}, enqueue.Opts{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Jobs.Enqueue(b.Ctx, b.Pool, noop{}, enqueue.Opts{Queue: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	jobs := b.Claim(t, uuid.New(), 100, time.Minute)
	var got []int64
	for _, j := range jobs {
		got = append(got, j.ID)
	}
	want := append(append(append([]int64{}, high...), mid...), low...)
	if len(got) != len(want) {
		t.Fatalf("claimed %v, want %v (other kinds and queues left alone)", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("claim order %v, want %v", got, want)
		}
	}
}

func TestHeartbeatAndLostJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 3, enqueue.Opts{})
	owner, stranger := uuid.New(), uuid.New()
	jobs := b.Claim(t, owner, 3, time.Minute)
	runs := jobtest.RunsOf(jobs)
	kept, err := heldIDs(b.Q.Heartbeat(b.Ctx, b.Pool, stranger, runs, time.Hour, nil))
	if err != nil || len(kept) != 0 {
		t.Fatalf("stranger heartbeat kept %v (%v)", kept, err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE lease_until > now() + interval '5 minutes'`); n != 0 {
		t.Fatal("stranger's heartbeat extended a lease")
	}
	kept, err = heldIDs(b.Q.Heartbeat(b.Ctx, b.Pool, owner, runs, time.Hour, nil))
	if err != nil || len(kept) != 3 {
		t.Fatalf("owner heartbeat kept %v (%v)", kept, err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE lease_until > now() + interval '50 minutes'`); n != 3 {
		t.Fatal("owner's heartbeat did not extend the leases")
	}
}

func TestReapedJobLateOutcomeChangesNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.EnqueueN(t, 2, enqueue.Opts{MaxAttempts: 1})
	b.EnqueueN(t, 1, enqueue.Opts{}) // stays ready, untouched by the reaper
	old := uuid.New()
	jobs := b.Claim(t, old, 2, time.Millisecond)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d", len(jobs))
	}
	// Give one job attempts to spare, so the reaper requeues it, and leave
	// the other on its last attempt, so the reaper dead-letters it.
	if _, err := b.Pool.Exec(b.Ctx, `UPDATE `+b.Table("docket_jobs")+` SET max_attempts = 5 WHERE id = $1`, ids[0]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
	res, err := b.Q.Reap(b.Ctx, b.Pool, 100)
	if err != nil {
		t.Fatal(err)
	}
	if res.Requeued != 1 || res.Dead != 1 {
		t.Fatalf("reap %+v, want 1 requeued and 1 dead", res)
	}
	if r, _ := b.Q.Reap(b.Ctx, b.Pool, 100); r != (queue.ReapResult{}) {
		t.Fatalf("second reap %+v, want nothing", r)
	}
	// A new worker claims the requeued job.
	fresh := uuid.New()
	again := b.Claim(t, fresh, 10, time.Minute)
	if len(again) != 2 {
		t.Fatalf("reclaimed %d jobs, want the requeued one and the untouched one", len(again))
	}
	// A requeued job goes to the back of its priority: it became ready last.
	if j := again[1]; j.ID != ids[0] || j.Attempt != 2 || j.LastError == "" {
		t.Fatalf("requeued job reclaimed as %+v", j)
	}
	// The old worker's late statements change nothing.
	b.requireStale(t, old, jobtest.RunsOf(jobs))
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1 AND locked_by = $2 AND state = 'running'`, ids[0], fresh); n != 1 {
		t.Fatal("new owner's state was overwritten")
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs_dead")+` WHERE id = $1 AND reason = 'lease_expired'`, ids[1]); n != 1 {
		t.Fatal("job on its last attempt was not dead-lettered by the reaper")
	}
}

// requireStale checks that every statement on a running job, for worker's
// runs stale, changes nothing.
func (b *bundle) requireStale(t *testing.T, worker uuid.UUID, stale []queue.Run) {
	t.Helper()
	if kept, _ := heldIDs(b.Q.Heartbeat(b.Ctx, b.Pool, worker, stale, time.Hour, nil)); len(kept) != 0 {
		t.Fatalf("stale heartbeat kept %v", kept)
	}
	if done, _ := b.Q.Complete(b.Ctx, b.Pool, worker, stale, time.Time{}); len(done) != 0 {
		t.Fatalf("stale complete finished %v", done)
	}
	if r, _ := b.Q.Fail(b.Ctx, b.Pool, worker, []queue.Failure{{Run: stale[0], Error: "late"}}); len(r.Dead)+len(r.Retried) != 0 {
		t.Fatalf("stale fail did %+v", r)
	}
	if got, _ := b.Q.Snooze(b.Ctx, b.Pool, worker, []queue.Snoozed{{Run: stale[0]}}); len(got) != 0 {
		t.Fatal("stale snooze applied")
	}
	if got, _ := b.Q.Release(b.Ctx, b.Pool, worker, stale); len(got) != 0 {
		t.Fatal("stale release applied")
	}
	if got, _ := b.Q.DeadLetter(b.Ctx, b.Pool, worker, []queue.Dead{{Run: stale[0], Reason: core.ReasonCancelled}}); len(got) != 0 {
		t.Fatal("stale dead-letter applied")
	}
}

// TestSameWorkerReclaimFencesStaleRun: a worker whose run was reaped claims
// the job again; every statement on behalf of the first run then changes
// nothing, though locked_by is the same, and the second run's own
// statements still land.
func TestSameWorkerReclaimFencesStaleRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 3, enqueue.Opts{})
	w := uuid.New()
	first := b.Claim(t, w, 3, time.Millisecond)
	if len(first) != 3 {
		t.Fatalf("claimed %d", len(first))
	}
	for _, j := range first[1:] {
		if j.ClaimID == 0 || j.ClaimID != first[0].ClaimID {
			t.Fatalf("jobs of one claim have claim ids %d and %d, want one non-zero id", first[0].ClaimID, j.ClaimID)
		}
	}
	time.Sleep(5 * time.Millisecond)
	if r, err := b.Q.Reap(b.Ctx, b.Pool, 100); err != nil || r.Requeued != 3 {
		t.Fatalf("reap %+v %v", r, err)
	}
	second := b.Claim(t, w, 3, time.Minute)
	if len(second) != 3 || second[0].ClaimID == first[0].ClaimID {
		t.Fatalf("reclaimed %d jobs under claim %d, want 3 under a new claim", len(second), second[0].ClaimID)
	}
	stale := jobtest.RunsOf(first)
	b.requireStale(t, w, stale)
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE state = 'running' AND attempts = 2 AND claim_id = $1`, second[0].ClaimID); n != 3 {
		t.Fatalf("%d jobs still running under the second claim, want 3", n)
	}
	// Both runs' outcomes in one statement: only the current one lands.
	current := jobtest.RunsOf(second)
	if kept, err := heldIDs(b.Q.Heartbeat(b.Ctx, b.Pool, w, append(stale, current...), time.Hour, nil)); err != nil || len(kept) != 3 {
		t.Fatalf("heartbeat of both runs kept %v (%v), want the 3 current", kept, err)
	}
	done, err := b.Q.Complete(b.Ctx, b.Pool, w, append(stale, current...), time.Time{})
	if err != nil || len(done) != 3 {
		t.Fatalf("complete of both runs finished %v (%v), want the 3 current", done, err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs_done")+` WHERE attempts = 2`); n != 3 {
		t.Fatalf("%d jobs in history with attempt 2, want 3", n)
	}
}

// TestCompleteRecordsFinishTime: finished_at is when the completion ran (or
// the time given), not when its transaction began.
func TestCompleteRecordsFinishTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 2, enqueue.Opts{})
	w := uuid.New()
	jobs := b.Claim(t, w, 2, time.Minute)
	tx, err := b.Pool.Begin(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(b.Ctx)
	var began time.Time
	if err := tx.QueryRow(b.Ctx, `SELECT now()`).Scan(&began); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if done, err := b.Q.Complete(b.Ctx, tx, w, jobtest.RunsOf(jobs[:1]), time.Time{}); err != nil || len(done) != 1 {
		t.Fatalf("complete in tx: %v %v", done, err)
	}
	if err := tx.Commit(b.Ctx); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	if err := partition.Of(b.Q.Schema()).Ensure(b.Ctx, b.Pool, at, 0); err != nil {
		t.Fatal(err)
	}
	if done, err := b.Q.Complete(b.Ctx, b.Pool, w, jobtest.RunsOf(jobs[1:]), at); err != nil || len(done) != 1 {
		t.Fatalf("complete at a given time: %v %v", done, err)
	}
	var first, second time.Time
	q := `SELECT finished_at FROM ` + b.Table("docket_jobs_done") + ` WHERE id = $1`
	if err := b.Pool.QueryRow(b.Ctx, q, jobs[0].ID).Scan(&first); err != nil {
		t.Fatal(err)
	}
	if err := b.Pool.QueryRow(b.Ctx, q, jobs[1].ID).Scan(&second); err != nil {
		t.Fatal(err)
	}
	if first.Sub(began) < 40*time.Millisecond {
		t.Fatalf("finished_at %v is the transaction's start %v, not the completion's time", first, began)
	}
	if !second.Equal(at) {
		t.Fatalf("finished_at %v, want the given %v", second, at)
	}
}

func TestFailRetryAndExhaust(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.EnqueueN(t, 2, enqueue.Opts{MaxAttempts: 2})
	w := uuid.New()
	first := jobtest.ByID(b.Claim(t, w, 2, time.Minute))
	res, err := b.Q.Fail(b.Ctx, b.Pool, w, []queue.Failure{
		{Run: first[ids[0]], Error: "boom", Delay: time.Hour},
		{Run: first[ids[1]], Error: "boom", Delay: 0},
	})
	if err != nil || len(res.Retried) != 2 || len(res.Dead) != 0 {
		t.Fatalf("first failure: %+v %v", res, err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1 AND state = 'scheduled' AND run_at > now() + interval '59 minutes' AND last_error = 'boom' AND locked_by IS NULL`, ids[0]); n != 1 {
		t.Fatal("delayed retry not scheduled")
	}
	jobs := b.Claim(t, w, 2, time.Minute)
	if len(jobs) != 1 || jobs[0].ID != ids[1] || jobs[0].Attempt != 2 {
		t.Fatalf("retry claim: %+v", jobs)
	}
	res, err = b.Q.Fail(b.Ctx, b.Pool, w, []queue.Failure{{Run: queue.RunOf(jobs[0]), Error: "boom again"}})
	if err != nil || len(res.Dead) != 1 {
		t.Fatalf("exhausting failure: %+v %v", res, err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs_dead")+` WHERE id = $1 AND reason = 'exhausted' AND last_error = 'boom again' AND attempts = 2`, ids[1]); n != 1 {
		t.Fatal("exhausted job not in dead-letter table")
	}
}

func TestSnoozeCancelReleasePromote(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.EnqueueN(t, 3, enqueue.Opts{})
	w := uuid.New()
	runs := jobtest.ByID(b.Claim(t, w, 3, time.Minute))
	if got, err := b.Q.Snooze(b.Ctx, b.Pool, w, []queue.Snoozed{{Run: runs[ids[0]], Delay: 50 * time.Millisecond}}); err != nil || len(got) != 1 {
		t.Fatalf("snooze %v %v", got, err)
	}
	if got, err := b.Q.DeadLetter(b.Ctx, b.Pool, w, []queue.Dead{{Run: runs[ids[1]], Reason: core.ReasonCancelled, Error: "no longer wanted"}}); err != nil || len(got) != 1 {
		t.Fatalf("cancel %v %v", got, err)
	}
	if got, err := b.Q.Release(b.Ctx, b.Pool, w, []queue.Run{runs[ids[2]]}); err != nil || len(got) != 1 {
		t.Fatalf("release %v %v", got, err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1 AND state = 'ready' AND attempts = 0`, ids[2]); n != 1 {
		t.Fatal("released job not ready with its attempt given back")
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs_dead")+` WHERE id = $1 AND reason = 'cancelled'`, ids[1]); n != 1 {
		t.Fatal("cancelled job not dead-lettered")
	}
	// The snoozed job is scheduled, not claimable, until promoted.
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1 AND state = 'scheduled' AND attempts = 0`, ids[0]); n != 1 {
		t.Fatal("snoozed job not scheduled with its attempt given back")
	}
	next, ok, err := b.Q.NextScheduled(b.Ctx, b.Pool)
	if err != nil || !ok || next.Before(time.Now().Add(-time.Minute)) {
		t.Fatalf("next scheduled %v %v %v", next, ok, err)
	}
	waitFor(t, func() bool {
		qs, err := b.Q.Promote(b.Ctx, b.Pool, 100)
		if err != nil {
			t.Fatal(err)
		}
		return len(qs) == 1 && qs[0] == "default"
	})
	jobs := b.Claim(t, w, 10, time.Minute)
	if len(jobs) != 2 {
		t.Fatalf("after promote claimed %d jobs, want 2", len(jobs))
	}
	if _, ok, _ := b.Q.NextScheduled(b.Ctx, b.Pool); ok {
		t.Fatal("no job should be scheduled any more")
	}
}

func TestTenantCapClaim(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 6, enqueue.Opts{}) // no tenant: one more tenant, "", found among the queue's first 4×20 jobs
	b.EnqueueN(t, 500, enqueue.Opts{Tenant: "a"})
	b.EnqueueN(t, 5, enqueue.Opts{Tenant: "b"})
	b.EnqueueN(t, 1, enqueue.Opts{Tenant: "c"})
	jobs, err := b.Q.Claim(b.Ctx, b.Pool, queue.ClaimParams{
		Worker: uuid.New(), Queues: []string{"default"}, Kinds: []string{"noop"}, Limit: 20, Lease: time.Minute, TenantCap: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string]int{}
	for _, j := range jobs {
		per[j.Tenant]++
	}
	if per["a"] != 4 || per["b"] != 4 || per["c"] != 1 || per[""] != 4 {
		t.Fatalf("capped batch per tenant %v, want a:4 b:4 c:1 and 4 without a tenant", per)
	}
	// Uncapped, the oldest jobs take the whole batch: the two left without
	// a tenant, then a's.
	jobs = b.Claim(t, uuid.New(), 20, time.Minute)
	for i, j := range jobs {
		if want := map[bool]string{true: "", false: "a"}[i < 2]; j.Tenant != want {
			t.Fatalf("uncapped claim took job %d of tenant %q, want %q", i, j.Tenant, want)
		}
	}
}

// TestTenantCapUntenantedBehindFlood pins down the documented limit of the
// capped claim: jobs without a tenant are looked for among the queue's
// first 4×limit ready jobs only, so behind a deeper flood they wait for it
// to drain as in an uncapped queue.
func TestTenantCapUntenantedBehindFlood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 60, enqueue.Opts{Tenant: "a"})
	b.EnqueueN(t, 3, enqueue.Opts{})
	params := queue.ClaimParams{Worker: uuid.New(), Queues: []string{"default"}, Kinds: []string{"noop"},
		Limit: 10, Lease: time.Minute, TenantCap: 2}
	untenanted := 0
	for claim := 1; claim <= 40 && untenanted == 0; claim++ {
		jobs, err := b.Q.Claim(b.Ctx, b.Pool, params)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			if j.Tenant == "" {
				untenanted++
			}
		}
		// Each claim takes 2 of a's jobs. Claims 1 to 11 see only a's jobs in
		// their window of 40; claim 12, with 38 of a's left, sees the
		// untenanted jobs too and takes 2 of them (the cap).
		if claim <= 11 && untenanted > 0 {
			t.Fatalf("claim %d found an untenanted job behind %d jobs of a's flood", claim, 60-2*(claim-1))
		}
		if claim == 12 && untenanted != 2 {
			t.Fatalf("claim 12 took %d untenanted jobs, want 2 (the cap)", untenanted)
		}
	}
	if untenanted != 2 {
		t.Fatalf("untenanted jobs never claimed")
	}
}

func TestCompleteCreatesMissingPartition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	parts, _ := partition.Of(b.Q.Schema()).List(b.Ctx, b.Pool)
	for _, p := range parts {
		if _, err := b.Pool.Exec(b.Ctx, `DROP TABLE `+b.Table(p)); err != nil {
			t.Fatal(err)
		}
	}
	ids := b.EnqueueN(t, 1, enqueue.Opts{})
	w := uuid.New()
	done, err := b.Q.Complete(b.Ctx, b.Pool, w, jobtest.RunsOf(b.Claim(t, w, 1, time.Minute)), time.Time{})
	if err != nil || len(done) != 1 || done[0] != ids[0] {
		t.Fatalf("complete without partition: %v %v", done, err)
	}
}

func TestHistoryOff(t *testing.T) {
	t.Parallel()
	b := setup(t, queue.Config{DisableHistory: true})
	b.EnqueueN(t, 5, enqueue.Opts{})
	w := uuid.New()
	if done, err := b.Q.Complete(b.Ctx, b.Pool, w, jobtest.RunsOf(b.Claim(t, w, 5, time.Minute)), time.Time{}); err != nil || len(done) != 5 {
		t.Fatalf("%v %v", done, err)
	}
	if n := b.Count(t, `SELECT (SELECT count(*) FROM `+b.Table("docket_jobs")+`) + (SELECT count(*) FROM `+b.Table("docket_jobs_done")+`)`); n != 0 {
		t.Fatalf("%d rows left with history off", n)
	}
}

// heldIDs returns the runs a heartbeat still held.
func heldIDs(b queue.Beat, err error) ([]int64, error) { return b.Held, err }
