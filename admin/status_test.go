package admin_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/engine/queue"
	"github.com/docketq/docket/internal/testkit/jobtest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

func (b *bundle) status(t *testing.T, th admin.Thresholds) *admin.Status {
	t.Helper()
	s, err := b.ops.Status(b.Ctx, b.Pool, th)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func queueOf(t *testing.T, s *admin.Status, name string) admin.QueueStatus {
	t.Helper()
	for _, q := range s.Queues {
		if q.Queue == name {
			return q
		}
	}
	t.Fatalf("queue %s missing from status: %+v", name, s.Queues)
	return admin.QueueStatus{}
}

// warning returns the first warning with code whose subject contains subject.
func warning(s *admin.Status, code, subject string) (admin.Warning, bool) {
	for _, w := range s.Warnings {
		if w.Code == code && strings.Contains(w.Subject, subject) {
			return w, true
		}
	}
	return admin.Warning{}, false
}

// deadN enqueues n jobs in queue and dead-letters them.
func (b *bundle) deadN(t *testing.T, n int, opts enqueue.Opts, errText string) []int64 {
	t.Helper()
	b.EnqueueN(t, n, opts)
	worker := uuid.New()
	name := opts.Queue
	if name == "" {
		name = "default"
	}
	jobs, err := b.Q.Claim(b.Ctx, b.Pool, queue.ClaimParams{
		Worker: worker, Queues: []string{name}, Kinds: []string{"noop"}, Limit: n, Lease: time.Minute,
	})
	if err != nil || len(jobs) != n {
		t.Fatalf("claimed %d of %d: %v", len(jobs), n, err)
	}
	dead := make([]queue.Dead, n)
	ids := make([]int64, n)
	for i, j := range jobs {
		dead[i] = queue.Dead{Run: queue.RunOf(j), Reason: admin.ReasonExhausted, Error: errText}
		ids[i] = j.ID
	}
	if got, err := b.Q.DeadLetter(b.Ctx, b.Pool, worker, dead); err != nil || len(got) != n {
		t.Fatalf("dead-lettered %d of %d: %v", len(got), n, err)
	}
	return ids
}

func TestStatusBacklogWithKnownOldestAge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	past := time.Now().Add(-90 * time.Second)
	b.EnqueueN(t, 5, enqueue.Opts{Queue: "mail", RunAt: past})
	b.EnqueueN(t, 3, enqueue.Opts{Queue: "mail"})
	b.EnqueueN(t, 2, enqueue.Opts{Queue: "mail", Delay: time.Hour})
	b.EnqueueN(t, 1, enqueue.Opts{Queue: "fast"})
	jobs, err := b.Q.Claim(b.Ctx, b.Pool, queue.ClaimParams{
		Worker: uuid.New(), Queues: []string{"fast"}, Kinds: []string{"noop"}, Limit: 1, Lease: time.Minute,
	})
	if err != nil || len(jobs) != 1 {
		t.Fatalf("claim: %d %v", len(jobs), err)
	}
	s := b.status(t, admin.Thresholds{})
	mail := queueOf(t, s, "mail")
	if mail.Ready != 8 || mail.Scheduled != 2 || mail.Running != 0 {
		t.Errorf("mail counts: ready %d scheduled %d running %d; want 8 2 0", mail.Ready, mail.Scheduled, mail.Running)
	}
	if mail.Lag < 89*time.Second || mail.Lag > 100*time.Second {
		t.Errorf("mail lag %s, want about 90s", mail.Lag)
	}
	w, ok := warning(s, admin.WarnLag, "mail")
	if !ok || !strings.Contains(w.Message, "1m3") && !strings.Contains(w.Message, "1m") {
		t.Errorf("no lag warning for mail: %+v", s.Warnings)
	}
	fast := queueOf(t, s, "fast")
	if fast.Ready != 0 || fast.Running != 1 || fast.Lag != 0 {
		t.Errorf("fast: %+v", fast)
	}
	if _, ok := warning(s, admin.WarnLag, "fast"); ok {
		t.Errorf("lag warning for a queue without backlog: %+v", s.Warnings)
	}
	// A lag under the threshold is not a warning.
	if _, ok := warning(b.status(t, admin.Thresholds{Lag: 5 * time.Minute}), admin.WarnLag, "mail"); ok {
		t.Error("lag warning under the threshold")
	}
	found := false
	for _, tbl := range s.Tables {
		found = found || tbl.Table == "docket_jobs"
	}
	if !found {
		t.Errorf("docket_jobs missing from table status: %+v", s.Tables)
	}
}

func TestStatusGrowingDLQ(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deadN(t, 3, enqueue.Opts{Queue: "billing"}, "card declined")
	// A completion with retries counts in the windows.
	b.EnqueueN(t, 1, enqueue.Opts{Queue: "billing"})
	w := uuid.New()
	jobs, _ := b.Q.Claim(b.Ctx, b.Pool, queue.ClaimParams{Worker: w, Queues: []string{"billing"}, Kinds: []string{"noop"}, Limit: 1, Lease: time.Minute})
	if _, err := b.Q.Complete(b.Ctx, b.Pool, w, jobtest.RunsOf(jobs), time.Time{}); err != nil {
		t.Fatal(err)
	}
	s := b.status(t, admin.Thresholds{})
	q := queueOf(t, s, "billing")
	if q.DLQSize != 3 || q.DLQDelta24h != 3 || q.Dead1m != 3 || q.Dead1h != 3 || q.Completed1m != 1 || q.Completed1h != 1 {
		t.Errorf("billing: %+v", q)
	}
	if w, ok := warning(s, admin.WarnDLQGrowing, "billing"); !ok || !strings.Contains(w.Message, "grew by 3") {
		t.Errorf("no growing-DLQ warning: %+v", s.Warnings)
	}
	// Departures count against the delta.
	if _, err := b.ops.DeadLetters().Purge(b.Ctx, b.Pool, time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	s = b.status(t, admin.Thresholds{})
	q = queueOf(t, s, "billing")
	if q.DLQSize != 0 || q.DLQDelta24h != 0 {
		t.Errorf("after purge: %+v", q)
	}
	if _, ok := warning(s, admin.WarnDLQGrowing, "billing"); ok {
		t.Errorf("growing-DLQ warning after purge: %+v", s.Warnings)
	}
}

func TestStatusStuckLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 2, enqueue.Opts{})
	b.Claim(t, uuid.New(), 2, time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	s := b.status(t, admin.Thresholds{})
	if s.StuckCount != 2 || len(s.Stuck) != 2 || s.Stuck[0].Overdue <= 0 {
		t.Fatalf("stuck: %d %+v", s.StuckCount, s.Stuck)
	}
	if w, ok := warning(s, admin.WarnStuckLeases, ""); !ok || !strings.Contains(w.Message, "2 running jobs") {
		t.Errorf("no stuck warning: %+v", s.Warnings)
	}
	if _, err := b.Q.Reap(b.Ctx, b.Pool, 10); err != nil {
		t.Fatal(err)
	}
	if s := b.status(t, admin.Thresholds{}); s.StuckCount != 0 {
		t.Errorf("stuck after reap: %d", s.StuckCount)
	}
}

func TestStatusPausedQueue(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 4, enqueue.Opts{Queue: "reports"})
	if err := b.ops.Queues().Pause(b.Ctx, b.Pool, "reports"); err != nil {
		t.Fatal(err)
	}
	if err := b.ops.Queues().Pause(b.Ctx, b.Pool, "idle", admin.PauseOptions{Create: true}); err != nil {
		t.Fatal(err)
	}
	paused, err := b.ops.Queues().Paused(b.Ctx, b.Pool)
	if err != nil || !slices.Equal(paused, []string{"idle", "reports"}) {
		t.Fatalf("paused %v %v", paused, err)
	}
	s := b.status(t, admin.Thresholds{})
	if q := queueOf(t, s, "reports"); !q.Paused || q.Ready != 4 {
		t.Errorf("reports: %+v", q)
	}
	if q := queueOf(t, s, "idle"); !q.Paused {
		t.Errorf("idle: %+v", q)
	}
	if w, ok := warning(s, admin.WarnPaused, "reports"); !ok || !strings.Contains(w.Message, "4 ready") {
		t.Errorf("no paused warning: %+v", s.Warnings)
	}
	if _, ok := warning(s, admin.WarnPaused, "idle"); ok {
		t.Error("paused warning for a queue with nothing waiting")
	}
	if err := b.ops.Queues().Resume(b.Ctx, b.Pool, "reports"); err != nil {
		t.Fatal(err)
	}
	if q := queueOf(t, b.status(t, admin.Thresholds{}), "reports"); q.Paused {
		t.Errorf("reports still paused: %+v", q)
	}
	if err := b.ops.Queues().Pause(b.Ctx, b.Pool, "bad name"); err == nil {
		t.Error("paused a queue with an invalid name")
	}
}

func TestStatusUnservedKindAndWorkers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.EnqueueN(t, 2, enqueue.Opts{})
	if _, err := b.Jobs.Enqueue(b.Ctx, b.Pool, other{}, enqueue.Opts{}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Jobs.Enqueue(b.Ctx, b.Pool, other{}, enqueue.Opts{Queue: "bulk"}); err != nil {
		t.Fatal(err)
	}
	live := queue.WorkerInfo{ID: uuid.New(), Host: "h1", PID: 42, Kinds: []string{"noop", "other"}, Queues: []string{"default"},
		TTL: time.Minute, Claims: 10, ClaimP50: time.Millisecond, ClaimP95: 2 * time.Millisecond, ClaimP99: 400 * time.Millisecond}
	// A process that died without deregistering serves nothing.
	gone := queue.WorkerInfo{ID: uuid.New(), Host: "h2", PID: 7, Kinds: []string{"other"}, Queues: []string{"bulk"}, TTL: time.Millisecond}
	for _, w := range []queue.WorkerInfo{live, gone} {
		if err := b.Q.RegisterWorker(b.Ctx, b.Pool, w); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	s := b.status(t, admin.Thresholds{})
	if len(s.Unserved) != 1 || s.Unserved[0].Queue != "bulk" || s.Unserved[0].Kind != "other" || s.Unserved[0].Jobs != 1 {
		t.Fatalf("unserved: %+v", s.Unserved)
	}
	if _, ok := warning(s, admin.WarnUnservedKind, "bulk/other"); !ok {
		t.Errorf("no unserved warning: %+v", s.Warnings)
	}
	if len(s.Workers) != 2 {
		t.Fatalf("workers: %+v", s.Workers)
	}
	var lw admin.WorkerStatus
	for _, w := range s.Workers {
		if w.ID == live.ID {
			lw = w
		} else if w.Live {
			t.Errorf("expired worker listed as live: %+v", w)
		}
	}
	if !lw.Live || lw.PID != 42 || lw.ClaimP99 != 400*time.Millisecond || lw.Claims != 10 {
		t.Errorf("live worker: %+v", lw)
	}
	if _, ok := warning(s, admin.WarnClaimLatency, live.ID.String()); !ok {
		t.Errorf("no claim latency warning: %+v", s.Warnings)
	}
	if err := b.Q.DeregisterWorker(b.Ctx, b.Pool, live.ID); err != nil {
		t.Fatal(err)
	}
	if s := b.status(t, admin.Thresholds{}); len(s.Unserved) != 3 {
		t.Errorf("after the last worker left, unserved: %+v", s.Unserved)
	}
}

func TestStatusHeldHorizon(t *testing.T) {
	t.Parallel()
	b := setup(t)
	conn, err := b.Pool.Acquire(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(b.Ctx, `SET application_name = 'nightly_report'`); err != nil {
		t.Fatal(err)
	}
	tx, err := conn.BeginTx(b.Ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	var pid int
	if err := tx.QueryRow(b.Ctx, `SELECT pg_backend_pid() /* secret report query */`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	s := b.status(t, admin.Thresholds{Horizon: 50 * time.Millisecond})
	var h admin.HorizonHolder
	for _, x := range s.Horizon {
		if x.PID == pid {
			h = x
		}
	}
	if h.Holder != "transaction" || h.Application != "nightly_report" || !h.SameDatabase || !h.AgeKnown || h.Age < 100*time.Millisecond {
		t.Fatalf("holder of pid %d: %+v", pid, h)
	}
	var found *admin.Warning
	for i, w := range s.Warnings {
		if w.Code == admin.WarnHorizon && strings.Contains(w.Message, "nightly_report") {
			found = &s.Warnings[i]
		}
		if strings.Contains(w.Message, "secret") || strings.Contains(w.Subject, "secret") {
			t.Errorf("warning shows query text: %+v", w)
		}
	}
	if found == nil || !strings.Contains(found.Message, "idle in transaction") {
		t.Errorf("no horizon warning naming the transaction: %+v", s.Warnings)
	}
	if _, ok := s.OldestHorizon(); !ok {
		t.Error("OldestHorizon found nothing")
	}
	// Under the threshold, no warning for it.
	for _, w := range b.status(t, admin.Thresholds{Horizon: time.Hour}).Warnings {
		if w.Code == admin.WarnHorizon && strings.Contains(w.Message, "nightly_report") {
			t.Errorf("horizon warning under the threshold: %+v", w)
		}
	}
}

func TestStatusVacuumLag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	conn, err := b.Pool.Acquire(b.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(b.Ctx, `ALTER TABLE `+b.Table("docket_jobs")+` SET (autovacuum_enabled = off)`); err != nil {
		t.Fatal(err)
	}
	items := make([]enqueue.Item, 200)
	for i := range items {
		items[i] = enqueue.Item{Args: noop{N: i}}
	}
	if _, err := b.Jobs.EnqueueMany(b.Ctx, conn, items); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(b.Ctx, `DELETE FROM `+b.Table("docket_jobs")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(b.Ctx, `SELECT pg_stat_force_next_flush()`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		s, err := b.ops.Status(b.Ctx, conn, admin.Thresholds{DeadTuples: 100})
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := warning(s, admin.WarnVacuumLag, "docket_jobs"); ok {
			if !strings.Contains(w.Message, "dead tuples") {
				t.Errorf("message: %s", w.Message)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no vacuum-lag warning: tables %+v warnings %+v", s.Tables, s.Warnings)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReplayTrickle replays 1,000 dead jobs at 100/s: the new jobs'
// created_at spread over about 10 s, no one-second window holds more than
// the rate (plus a batch or two), and at every moment each job is either dead or
// live, never both and never neither.
func TestReplayTrickle(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const n = 1000
	ids := b.deadN(t, n, enqueue.Opts{}, "upstream 503")
	// A dead job whose unique key a live job holds is not replayed and stays dead.
	keyed := b.deadN(t, 1, enqueue.Opts{Queue: "keyed", UniqueKey: "invoice:1"}, "upstream 503")[0]
	if _, err := b.Jobs.Enqueue(b.Ctx, b.Pool, noop{}, enqueue.Opts{Queue: "keyed", UniqueKey: "invoice:1"}); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var checks atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var total, both int
			err := b.Pool.QueryRow(b.Ctx, `SELECT
				(SELECT count(*) FROM `+b.Table("docket_jobs_dead")+` WHERE queue = 'default')
				+ (SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE queue = 'default'),
				(SELECT count(*) FROM `+b.Table("docket_jobs")+` j JOIN `+b.Table("docket_jobs_dead")+` d USING (id))`).Scan(&total, &both)
			if err != nil {
				t.Error(err)
				return
			}
			if total != n || both != 0 {
				t.Errorf("mid-replay: %d jobs dead or live (want %d), %d both", total, n, both)
			}
			checks.Add(1)
		}
	}()
	var batches atomic.Int64
	res, err := b.ops.DeadLetters().Replay(b.Ctx, b.Pool, admin.DeadFilter{Queue: "default", ErrorLike: "%503%", Limit: -1},
		admin.ReplayOptions{Rate: 100, Progress: func(admin.ReplayResult) { batches.Add(1) }})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if checks.Load() < 100 {
		t.Errorf("only %d mid-replay checks", checks.Load())
	}
	if len(res.Replayed) != n || len(res.Skipped) != 0 {
		t.Fatalf("replayed %d skipped %d", len(res.Replayed), len(res.Skipped))
	}
	got := slices.Clone(res.Replayed)
	slices.Sort(got)
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatal("replayed ids differ from the dead ids")
	}
	if d := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs_dead")+` WHERE queue = 'default'`); d != 0 {
		t.Errorf("%d dead jobs left", d)
	}
	if live := b.Count(t, `SELECT count(DISTINCT id) FROM `+b.Table("docket_jobs")+` WHERE queue = 'default' AND state = 'ready' AND attempts = 0`); live != n {
		t.Errorf("%d ready replayed jobs, want %d", live, n)
	}
	rows, err := b.Pool.Query(b.Ctx, `SELECT created_at FROM `+b.Table("docket_jobs")+` WHERE queue = 'default' ORDER BY created_at`)
	if err != nil {
		t.Fatal(err)
	}
	var at []time.Time
	for rows.Next() {
		var ts time.Time
		if err := rows.Scan(&ts); err != nil {
			t.Fatal(err)
		}
		at = append(at, ts)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// Never faster than the rate; slower only by what a loaded machine
	// takes (CI ran it in 13.3 s under the race detector with every
	// package's tests at once). A pacing bug that sleeps whole extra
	// intervals would still show.
	span := at[len(at)-1].Sub(at[0])
	if span < 9500*time.Millisecond || span > 20*time.Second {
		t.Errorf("replay of %d at 100/s spread over %s, want about 10s", n, span)
	}
	batch := n / int(batches.Load())
	densest := 0
	for i := range at {
		j := sort.Search(len(at), func(k int) bool { return !at[k].Before(at[i].Add(time.Second)) })
		densest = max(densest, j-i)
	}
	// One batch more than the rate allows for the jitter between the
	// pacing clock and the database's.
	if densest > 100+2*batch {
		t.Errorf("%d jobs enqueued within one second, want at most %d", densest, 100+2*batch)
	}
	t.Logf("%d jobs in %d batches over %s; densest second %d", n, batches.Load(), span, densest)

	res, err = b.ops.DeadLetters().Replay(b.Ctx, b.Pool, admin.DeadFilter{IDs: []int64{keyed}}, admin.ReplayOptions{Rate: -1})
	if err != nil || len(res.Skipped) != 1 || len(res.Replayed) != 0 {
		t.Fatalf("keyed replay: %+v %v", res, err)
	}
	if d, err := b.ops.DeadLetters().Get(b.Ctx, b.Pool, keyed, false); err != nil || d.Payload != nil || d.LastError != "upstream 503" {
		t.Errorf("keyed dead job: %+v %v", d, err)
	}
}

func TestDeadListFiltersAndJobCommands(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.deadN(t, 2, enqueue.Opts{}, "timeout talking to smtp")
	b.deadN(t, 1, enqueue.Opts{}, "invalid address")
	list, err := b.ops.DeadLetters().List(b.Ctx, b.Pool, admin.DeadFilter{Kind: "noop", ErrorLike: "%timeout%"})
	if err != nil || len(list) != 2 || list[0].Payload != nil {
		t.Fatalf("list: %+v %v", list, err)
	}
	if list, _ := b.ops.DeadLetters().List(b.Ctx, b.Pool, admin.DeadFilter{Since: time.Now().Add(time.Minute)}); len(list) != 0 {
		t.Errorf("since the future: %d", len(list))
	}
	d, err := b.ops.DeadLetters().Get(b.Ctx, b.Pool, list[0].ID, true)
	if err != nil || !strings.Contains(string(d.Payload), `"n"`) {
		t.Errorf("show with payload: %+v %v", d, err)
	}

	// jobs cancel: a ready job goes to the dead-letter table as cancelled.
	id := b.EnqueueN(t, 1, enqueue.Opts{Queue: "q2"})[0]
	if running, err := b.ops.Jobs().Cancel(b.Ctx, b.Pool, id, "cancelled by operator"); err != nil || running {
		t.Fatal(running, err)
	}
	if d, err := b.ops.DeadLetters().Get(b.Ctx, b.Pool, id, false); err != nil || d.Reason != admin.ReasonCancelled {
		t.Errorf("cancelled job: %+v %v", d, err)
	}
	// jobs retry: the dead job comes back.
	if err := b.ops.Jobs().Retry(b.Ctx, b.Pool, id); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1 AND state = 'ready'`, id); n != 1 {
		t.Errorf("retried job not ready")
	}
	// A scheduled job runs now.
	later := b.EnqueueN(t, 1, enqueue.Opts{Queue: "q3", Delay: time.Hour})[0]
	if err := b.ops.Jobs().Retry(b.Ctx, b.Pool, later); err != nil {
		t.Fatal(err)
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1 AND state = 'ready' AND run_at <= now()`, later); n != 1 {
		t.Errorf("scheduled job not made due")
	}
	// A running job is marked for cancellation, once: a second request
	// keeps the first one's note.
	b.EnqueueN(t, 1, enqueue.Opts{})
	running := b.Claim(t, uuid.New(), 10, time.Minute)
	if len(running) == 0 {
		t.Fatal("nothing to claim")
	}
	for _, note := range []string{"x", "y"} {
		if was, err := b.ops.Jobs().Cancel(b.Ctx, b.Pool, running[0].ID, note); err != nil || !was {
			t.Errorf("cancel running: %v %v", was, err)
		}
	}
	if n := b.Count(t, `SELECT count(*) FROM `+b.Table("docket_jobs")+` WHERE id = $1 AND state = 'running'
		AND cancel_requested_at IS NOT NULL AND cancel_note = 'x'`, running[0].ID); n != 1 {
		t.Errorf("running job not marked for cancellation with the first note")
	}
	if _, err := b.ops.Jobs().Cancel(b.Ctx, b.Pool, 999999, "x"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("cancel unknown: %v", err)
	}
}

// Replaying or purging dead jobs that died before the 24-hour window
// shrinks the DLQ's delta; those that died inside it leave it at zero.
func TestDLQDeltaCountsOldDepartures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ids := b.deadN(t, 3, enqueue.Opts{Queue: "old"}, "boom")
	if _, err := b.Pool.Exec(b.Ctx, `UPDATE `+b.Table("docket_jobs_dead")+` SET dead_at = now() - interval '3 days' WHERE id = ANY($1)`, ids[:2]); err != nil {
		t.Fatal(err)
	}
	q := queueOf(t, b.status(t, admin.Thresholds{}), "old")
	if q.DLQSize != 3 || q.DLQDelta24h != 1 {
		t.Fatalf("before: %+v", q)
	}
	if _, err := b.ops.DeadLetters().Purge(b.Ctx, b.Pool, time.Now().Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	q = queueOf(t, b.status(t, admin.Thresholds{}), "old")
	if q.DLQSize != 1 || q.DLQDelta24h != -1 {
		t.Fatalf("after purging two old jobs: %+v", q)
	}
}

// Retries count the attempts after the first of the jobs that ran. Jobs
// that left without running (cancelled while ready or waiting in a serial
// line, a workflow job cancelled with its failed parent) have 0 attempts
// and count none, never -1; a job that failed twice and then succeeded
// counts 2.
func TestStatusRetriesNeverNegative(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ready := b.EnqueueN(t, 1, enqueue.Opts{Queue: "cancelled"})[0]
	line := b.EnqueueN(t, 2, enqueue.Opts{Queue: "cancelled", SerialKey: "account:7"})
	if got := b.where(t, line[1]); got != admin.StateWaiting {
		t.Fatalf("second job of the serial line is %s, want waiting", got)
	}
	for _, id := range []int64{ready, line[1], line[0]} {
		if _, err := b.ops.Jobs().Cancel(b.Ctx, b.Pool, id, "not needed"); err != nil {
			t.Fatal(err)
		}
	}

	res, err := b.Jobs.EnqueueWorkflow(b.Ctx, b.Pool, enqueue.Workflow{Name: "charge then ship", Jobs: []enqueue.WorkflowJob{
		{Ref: "charge", Args: noop{}, Opts: enqueue.Opts{MaxAttempts: 1}}, wfJob("ship", "charge"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	b.finish(t, map[int64]bool{res.Jobs["charge"]: true})
	if got := b.where(t, res.Jobs["ship"]); got != "dead" {
		t.Fatalf("child of the failed parent is %s, want dead", got)
	}

	flaky := b.EnqueueN(t, 1, enqueue.Opts{Queue: "flaky", MaxAttempts: 3})[0]
	for attempt := 1; attempt <= 3; attempt++ {
		w := uuid.New()
		jobs, err := b.Q.Claim(b.Ctx, b.Pool, queue.ClaimParams{Worker: w, Queues: []string{"flaky"}, Kinds: []string{"noop"}, Limit: 1, Lease: time.Minute})
		if err != nil || len(jobs) != 1 || jobs[0].ID != flaky {
			t.Fatalf("attempt %d: claimed %d jobs: %v", attempt, len(jobs), err)
		}
		if attempt < 3 {
			_, err = b.Q.Fail(b.Ctx, b.Pool, w, []queue.Failure{{Run: queue.RunOf(jobs[0]), Error: "upstream 503"}})
		} else {
			_, err = b.Q.Complete(b.Ctx, b.Pool, w, jobtest.RunsOf(jobs), time.Time{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	s := b.status(t, admin.Thresholds{})
	for _, want := range []struct {
		queue   string
		retries int64
	}{{"cancelled", 0}, {"default", 0}, {"flaky", 2}} {
		q := queueOf(t, s, want.queue)
		if q.Retries1m != want.retries || q.Retries1h != want.retries {
			t.Errorf("queue %s: retries %d in 1m, %d in 1h; want %d", want.queue, q.Retries1m, q.Retries1h, want.retries)
		}
	}
}

// addSchedule writes a schedule row as package schedule registers one.
func (b *bundle) addSchedule(t *testing.T, name, kind, queue string, paused bool) {
	t.Helper()
	_, err := b.Pool.Exec(b.Ctx, `INSERT INTO `+b.Table("docket_schedules")+` (name, spec, kind, queue, payload, paused)
		VALUES ($1, '@daily', $2, $3, '{}', $4)`, name, kind, queue, paused)
	if err != nil {
		t.Fatal(err)
	}
}

// setRunQueue stores the queue a registering process resolved for the
// schedule's runs, as schedule.Register does with a registry.
func (b *bundle) setRunQueue(t *testing.T, name, queue string) {
	t.Helper()
	if _, err := b.Pool.Exec(b.Ctx, `UPDATE `+b.Table("docket_schedules")+` SET run_queue = $2 WHERE name = $1`, name, queue); err != nil {
		t.Fatal(err)
	}
}

// A schedule whose kind no live worker serves is a warning naming it and
// its kind, in Status and in Overview; once a live worker serves the kind
// (in the schedule's queue, when it names one), the warning goes.
func TestStatusWarnsOfUnservedSchedules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.addSchedule(t, "nightly-report", "report", "", false)
	b.addSchedule(t, "digest-a", "digest", "mail", false)
	b.addSchedule(t, "digest-b", "digest", "mail", false)
	b.addSchedule(t, "retired", "gone", "", true) // paused: fires nothing
	// Its kind's registered queue, stored by the process that registered it.
	b.addSchedule(t, "invoices", "bill", "", false)
	b.setRunQueue(t, "invoices", "billing")
	// Live workers that serve other kinds, or digest and bill in other queues.
	for _, w := range []queue.WorkerInfo{
		{ID: uuid.New(), Host: "h1", PID: 1, Kinds: []string{"noop", "bill"}, Queues: []string{"default"}, TTL: time.Minute},
		{ID: uuid.New(), Host: "h2", PID: 2, Kinds: []string{"digest"}, Queues: []string{"bulk"}, TTL: time.Minute},
	} {
		if err := b.Q.RegisterWorker(b.Ctx, b.Pool, w); err != nil {
			t.Fatal(err)
		}
	}
	o, err := b.ops.Overview(b.Ctx, b.Pool, admin.Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	for what, s := range map[string]*admin.Status{"status": b.status(t, admin.Thresholds{}), "overview": o.Status} {
		w, ok := warning(s, admin.WarnUnservedSchedule, "report")
		if !ok || w.Message != "schedule nightly-report: no live worker serves kind report; its runs will wait unclaimed" {
			t.Errorf("%s: warning for nightly-report: %+v (found %v); all: %+v", what, w, ok, s.Warnings)
		}
		w, ok = warning(s, admin.WarnUnservedSchedule, "mail/digest")
		if !ok || w.Message != "2 schedules (digest-a, digest-b): no live worker serves kind digest in queue mail; their runs will wait unclaimed" {
			t.Errorf("%s: warning for the digests: %+v (found %v)", what, w, ok)
		}
		if w, ok := warning(s, admin.WarnUnservedSchedule, "gone"); ok {
			t.Errorf("%s: warning for a paused schedule: %+v", what, w)
		}
		w, ok = warning(s, admin.WarnUnservedSchedule, "billing/bill")
		if !ok || w.Message != "schedule invoices: no live worker serves kind bill in queue billing; its runs will wait unclaimed" {
			t.Errorf("%s: warning for invoices: %+v (found %v)", what, w, ok)
		}
		if len(s.UnservedSchedules) != 3 {
			t.Errorf("%s: unserved schedules %+v, want report, mail/digest and billing/bill", what, s.UnservedSchedules)
		}
	}

	served := queue.WorkerInfo{ID: uuid.New(), Host: "h3", PID: 3, Kinds: []string{"report", "digest", "bill"}, Queues: []string{"reports", "mail", "billing"}, TTL: time.Minute}
	if err := b.Q.RegisterWorker(b.Ctx, b.Pool, served); err != nil {
		t.Fatal(err)
	}
	s := b.status(t, admin.Thresholds{})
	if w, ok := warning(s, admin.WarnUnservedSchedule, ""); ok || len(s.UnservedSchedules) != 0 {
		t.Errorf("with a live worker serving both kinds: %+v %+v", w, s.UnservedSchedules)
	}
	// A worker that is gone serves nothing.
	if err := b.Q.DeregisterWorker(b.Ctx, b.Pool, served.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok := warning(b.status(t, admin.Thresholds{}), admin.WarnUnservedSchedule, "report"); !ok {
		t.Error("no warning once the worker serving report left")
	}
}

// WarningCodes lists every Warn constant of the package, once.
func TestWarningCodesListsEveryCode(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("status.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`(?m)^\s+Warn\w+\s+= "(\w+)"`).FindAllStringSubmatch(string(src), -1)
	var want []string
	for _, m := range declared {
		want = append(want, m[1])
	}
	got := admin.WarningCodes()
	if len(want) < 10 || !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
		t.Errorf("WarningCodes() = %v, the constants are %v", got, want)
	}
}
