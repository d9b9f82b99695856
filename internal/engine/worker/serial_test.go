package worker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/jackc/pgx/v5"
)

type serialArgs struct{ Key string }

func (serialArgs) Kind() string { return "serial" }

type serialTxArgs struct{ Key string }

func (serialTxArgs) Kind() string { return "serial_tx" }

// 2,000 jobs over 10 serial keys, 40 slots in two worker instances, half
// of them transactional. No two runs of a key overlap, each key's jobs run
// in the order they were enqueued, and runs of different keys overlap.
func TestSerialKeysNeverOverlap(t *testing.T) {
	t.Parallel()
	const jobs, keys = 2000, 10
	e := setup(t, 20)
	e.logJobsOnFailure()
	e.exec(`CREATE TABLE {{schema}}.runs (job_id bigint, key text, started timestamptz, ended timestamptz)`)
	insert := e.sql(`INSERT INTO {{schema}}.runs VALUES ($1, $2, $3, $4)`)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[serialArgs]) error {
		start := time.Now()
		time.Sleep(time.Millisecond)
		_, err := e.pool.Exec(ctx, insert, j.ID, j.Args.Key, start, time.Now())
		return err
	}, handlers.KindOpts{})
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[serialTxArgs]) error {
		start := time.Now()
		time.Sleep(time.Millisecond)
		_, err := tx.Exec(ctx, insert, j.ID, j.Args.Key, start, time.Now())
		return err
	}, handlers.KindOpts{})
	items := make([]enqueue.Item, jobs)
	for i := range items {
		key := fmt.Sprintf("k%d", i%keys)
		var args core.Args = serialArgs{Key: key}
		if i%2 == 1 {
			args = serialTxArgs{Key: key}
		}
		items[i] = enqueue.Item{Args: args, Opts: enqueue.Opts{SerialKey: key}}
	}
	if _, err := e.jobs.EnqueueMany(t.Context(), e.pool, items); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cfg := Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 20}}}
	e.worker(reg, cfg)
	e.worker(reg, cfg)
	// A generous deadline for a loaded machine: it asserts no speed.
	waitFor(t, 150*time.Second, "all serial jobs done", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == jobs
	})
	t.Logf("%d jobs over %d keys in %s", jobs, keys, time.Since(start))

	type run struct {
		id         int64
		key        string
		start, end time.Time
	}
	rows, err := e.pool.Query(t.Context(), e.sql(`SELECT job_id, key, started, ended FROM {{schema}}.runs`))
	if err != nil {
		t.Fatal(err)
	}
	runs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (run, error) {
		var x run
		return x, r.Scan(&x.id, &x.key, &x.start, &x.end)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != jobs {
		t.Fatalf("%d runs recorded, want %d (each job once)", len(runs), jobs)
	}
	slices.SortFunc(runs, func(a, b run) int { return a.start.Compare(b.start) })
	// Same key: never overlapping, and in enqueue (id) order.
	last := map[string]run{}
	for _, r := range runs {
		if p, ok := last[r.key]; ok {
			if r.start.Before(p.end) {
				t.Errorf("key %s: run [%s, %s] overlaps [%s, %s]", r.key,
					r.start.Format(time.StampMicro), r.end.Format(time.StampMicro), p.start.Format(time.StampMicro), p.end.Format(time.StampMicro))
			}
			if r.id < p.id {
				t.Errorf("key %s: job %d ran after job %d, which was enqueued after it", r.key, r.id, p.id)
			}
		}
		last[r.key] = r
	}
	// Different keys: overlapping (parallelism kept). Sweep for the most
	// runs at once.
	type edge struct {
		at    time.Time
		delta int
	}
	var edges []edge
	for _, r := range runs {
		edges = append(edges, edge{r.start, 1}, edge{r.end, -1})
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.delta - b.delta
	})
	var cur, most int
	for _, ed := range edges {
		cur += ed.delta
		most = max(most, cur)
	}
	t.Logf("at most %d keys ran at once", most)
	if most < 3 {
		t.Errorf("at most %d runs at once: serialization must not serialize different keys", most)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE attempts <> 1`); n != 0 {
		t.Errorf("%d jobs spent more than one attempt (a held key must not cost an attempt)", n)
	}
}

// lineArgs is a job in a serial key's line; Mode says how its handler
// behaves before it succeeds.
type lineArgs struct {
	Name string `json:"name"`
	Mode string `json:"mode,omitempty"` // "fail2", "snooze", "dead", "sleep" or ""
}

func (lineArgs) Kind() string { return "line" }

// lineRecorder registers the line kind and records "start name" and
// "done name" events in order.
func lineRecorder(reg *handlers.Registry) *syncSlice[string] {
	events := &syncSlice[string]{}
	var snoozed sync.Map
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[lineArgs]) error {
		events.add("start " + j.Args.Name)
		switch j.Args.Mode {
		case "fail2":
			if j.Attempt <= 2 {
				return errors.New("fails its first two attempts")
			}
		case "snooze":
			if _, again := snoozed.LoadOrStore(j.ID, true); !again {
				return handlers.Snooze(30 * time.Millisecond)
			}
		case "dead":
			return errors.New("always fails")
		case "sleep":
			time.Sleep(300 * time.Millisecond)
		}
		events.add("done " + j.Args.Name)
		return nil
	}, handlers.KindOpts{Backoff: func(int) time.Duration { return 30 * time.Millisecond }})
	return events
}

// A serial job that fails, snoozes or dead-letters keeps its place: no job
// of its key starts before it has left the line. A scheduled job does not
// block its key until it is due, and then joins at the end.
func TestSerialLineKeepsPlace(t *testing.T) {
	t.Parallel()
	e := setup(t, 10)
	e.logJobsOnFailure()
	reg := handlers.NewRegistry()
	events := lineRecorder(reg)
	key := enqueue.Opts{SerialKey: "a"}
	later := e.enqueue(lineArgs{Name: "later"}, enqueue.Opts{SerialKey: "a", RunAt: time.Now().Add(time.Hour)})
	for _, a := range []lineArgs{{"1", "fail2"}, {"2", "snooze"}, {"3", ""}} {
		e.enqueue(a, key)
	}
	dead := e.enqueue(lineArgs{"4", "dead"}, enqueue.Opts{SerialKey: "a", MaxAttempts: 1})
	e.enqueue(lineArgs{Name: "5"}, key)
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE serial_key = 'a' AND state = 'waiting'`); n != 4 {
		t.Errorf("%d jobs of key a waiting before any worker ran, want 4 (all but the head and the scheduled one)", n)
	}
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 8}}})
	waitFor(t, 30*time.Second, "the line drained", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE serial_key = 'a' AND id <> $1`, later) == 0
	})
	if got := e.where(later); got != "scheduled" {
		t.Errorf("the job scheduled for later is %q, want still scheduled", got)
	}
	if got := e.where(dead); got != "dead" {
		t.Errorf("job 4 is %q, want dead", got)
	}
	want := []string{
		"start 1", "start 1", "start 1", "done 1",
		"start 2", "start 2", "done 2",
		"start 3", "done 3",
		"start 4",
		"start 5", "done 5",
	}
	if got := events.get(); !slices.Equal(got, want) {
		t.Errorf("runs of key a:\n got %q\nwant %q", got, want)
	}
	if n := e.count(`SELECT attempts FROM {{schema}}.docket_jobs_done WHERE id = (SELECT id FROM {{schema}}.docket_jobs_done WHERE payload->>'name' = '2')`); n != 1 {
		t.Errorf("the snoozed job spent %d attempts, want 1", n)
	}
	// Made due, the scheduled job joins the (empty) line and runs.
	if err := e.ops.Jobs().Retry(t.Context(), e.pool, later); err != nil {
		t.Fatal(err)
	}
	e.waitWhere(later, "done", 10*time.Second)
}

// The key passes to the next in line whichever way the holder leaves the
// table: deleted, cancelled by an operator or completed; a waiting job
// deleted leaves the holder alone.
func TestSerialKeyPassesWhenHolderLeaves(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	key := enqueue.Opts{SerialKey: "b"}
	ids := make([]int64, 5)
	for i := range ids {
		ids[i] = e.enqueue(lineArgs{Name: fmt.Sprint(i)}, key)
	}
	states := func() []string {
		var s []string
		for _, id := range ids {
			s = append(s, e.where(id))
		}
		return s
	}
	check := func(step string, want ...string) {
		t.Helper()
		if got := states(); !slices.Equal(got, want) {
			t.Errorf("%s: states %q, want %q", step, got, want)
		}
	}
	check("enqueued", "ready", "waiting", "waiting", "waiting", "waiting")
	ctx := t.Context()
	if err := e.ops.Jobs().Delete(ctx, e.pool, ids[2]); err != nil {
		t.Fatal(err)
	}
	check("a waiting job deleted", "ready", "waiting", "", "waiting", "waiting")
	time.Sleep(300 * time.Millisecond)
	if err := e.ops.Jobs().Delete(ctx, e.pool, ids[0]); err != nil {
		t.Fatal(err)
	}
	check("the holder deleted", "", "ready", "", "waiting", "waiting")
	// The new head is due from when it got the key: the queue's lag is the
	// wait for a worker, not the wait in line.
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE id = $1 AND run_at > created_at + interval '250 milliseconds'`, ids[1]); n != 1 {
		t.Errorf("the new head's run_at was not moved to when it got the key")
	}
	if _, err := e.ops.Jobs().Cancel(ctx, e.pool, ids[1], "test"); err != nil {
		t.Fatal(err)
	}
	check("the holder cancelled", "", "dead", "", "ready", "waiting")
	reg := handlers.NewRegistry()
	lineRecorder(reg)
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 4}}})
	e.waitWhere(ids[4], "done", 10*time.Second)
	check("drained", "", "dead", "", "done", "done")
}

// A serial job holds no connection while it waits or runs: sixteen keys run
// at once, their handlers sleeping, with the pool's connections free. Held
// connections would show as at least one per handler; the worker's own
// claims, flushes, heartbeat and polls take a few at once on a busy machine.
func TestSerialJobsHoldNoConnection(t *testing.T) {
	t.Parallel()
	const keys = 16
	e := setup(t, 2*keys+8)
	reg := handlers.NewRegistry()
	running := make(chan struct{}, keys)
	var mostHeld atomic.Int32
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[serialArgs]) error {
		running <- struct{}{}
		defer func() { <-running }()
		for range 10 {
			time.Sleep(30 * time.Millisecond)
			if len(running) == keys {
				held := e.pool.Stat().AcquiredConns()
				for {
					m := mostHeld.Load()
					if held <= m || mostHeld.CompareAndSwap(m, held) {
						break
					}
				}
			}
		}
		return nil
	}, handlers.KindOpts{})
	for i := range keys * 2 {
		key := fmt.Sprintf("c%d", i%keys)
		e.enqueue(serialArgs{Key: key}, enqueue.Opts{SerialKey: key})
	}
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: keys * 2}}})
	waitFor(t, 30*time.Second, "all serial jobs done", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == keys*2
	})
	held := mostHeld.Load()
	t.Logf("with %d serial handlers running, the pool had at most %d connections acquired", keys, held)
	if held >= keys {
		t.Errorf("%d connections acquired while %d serial handlers ran: serial jobs must not hold one each", held, keys)
	}
}

// Enqueues of one key race from many transactions, some rolled back, some
// at REPEATABLE READ (whose jobs wait for the sweep), some in bulk: at most
// one holder at any time, and every committed job runs exactly once, one
// at a time.
func TestSerialEnqueueRaces(t *testing.T) {
	t.Parallel()
	const writers, each = 8, 25
	e := setup(t, writers+4)
	e.logJobsOnFailure()
	ctx := t.Context()
	var wg sync.WaitGroup
	var committed atomic.Int32
	errs := make(chan error, writers)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			iso := pgx.ReadCommitted
			if w%4 == 3 {
				iso = pgx.RepeatableRead
			}
			for i := range each {
				tx, err := e.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
				if err != nil {
					errs <- err
					return
				}
				n := 1
				if w%2 == 1 {
					// A bulk enqueue: one job by COPY, one by the set insert.
					n = 2
					past := time.Now().Add(-time.Second)
					_, err = e.jobs.EnqueueMany(ctx, tx, []enqueue.Item{
						{Args: serialArgs{Key: "r"}, Opts: enqueue.Opts{SerialKey: "r"}},
						{Args: serialArgs{Key: "r"}, Opts: enqueue.Opts{SerialKey: "r", RunAt: past}},
					})
				} else {
					_, err = e.jobs.Enqueue(ctx, tx, serialArgs{Key: "r"}, enqueue.Opts{SerialKey: "r"})
				}
				if err != nil {
					_ = tx.Rollback(ctx)
					errs <- fmt.Errorf("writer %d (%s): %w", w, iso, err)
					return
				}
				time.Sleep(time.Duration(i%3) * time.Millisecond)
				if i%5 == 4 {
					_ = tx.Rollback(ctx)
					continue
				}
				if err := tx.Commit(ctx); err != nil {
					errs <- err
					return
				}
				committed.Add(int32(n))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs WHERE serial_key = 'r' AND state <> 'waiting'`); n > 1 {
		t.Fatalf("%d holders of key r", n)
	}
	var runs syncSlice[[2]time.Time]
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[serialArgs]) error {
		start := time.Now()
		time.Sleep(time.Millisecond)
		runs.add([2]time.Time{start, time.Now()})
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 8}}})
	want := int(committed.Load())
	waitFor(t, 60*time.Second, "every committed job done", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == want
	})
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs`); n != 0 {
		t.Errorf("%d jobs left after the drain", n)
	}
	got := runs.get()
	if len(got) != want {
		t.Errorf("%d runs for %d committed jobs", len(got), want)
	}
	slices.SortFunc(got, func(a, b [2]time.Time) int { return a[0].Compare(b[0]) })
	for i := 1; i < len(got); i++ {
		if got[i][0].Before(got[i-1][1]) {
			t.Errorf("run %d started at %s, before run %d ended at %s", i, got[i][0].Format(time.StampMicro), i-1, got[i-1][1].Format(time.StampMicro))
		}
	}
}

// A serial job's outcome is written without waiting out the flush
// interval: the next job of its key waits for that write. With a 300 ms
// interval, four hand-offs of one key take far less than the 1.2 s that
// waiting would cost.
func TestSerialOutcomeSkipsFlushInterval(t *testing.T) {
	t.Parallel()
	const jobs, interval = 5, 300 * time.Millisecond
	e := setup(t, 8)
	var mu sync.Mutex
	var starts, ends []time.Time
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[serialArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		starts, ends = append(starts, time.Now()), append(ends, time.Now())
		return nil
	}, handlers.KindOpts{})
	var last int64
	for range jobs {
		last = e.enqueue(serialArgs{Key: "a"}, enqueue.Opts{SerialKey: "a"})
	}
	e.worker(reg, Config{FlushInterval: interval, Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 4}}})
	e.waitWhere(last, "done", 20*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if took := starts[jobs-1].Sub(ends[0]); took >= 2*interval {
		t.Errorf("%d hand-offs took %s: outcomes waited for the %s flush interval", jobs-1, took, interval)
	}
}

// A completing serial job hands its key into the slot it freed: its
// completion claims the next job of the key in its own transaction, so
// each job of a key's line of 30 but the head starts no later than the
// job before it finished (a job claimed afterwards would start after
// that completion committed), in order. Four slots and one key: a claim
// asks for two jobs or more and finds at most one ready, so it never comes
// back full, and the pool never sees a backlog that would stop the
// hand-offs.
func TestSerialCompletionClaimsNextOfKey(t *testing.T) {
	t.Parallel()
	const jobs = 30
	e := setup(t, 8)
	var mu sync.Mutex
	var order []int64
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[serialArgs]) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, j.ID)
		return nil
	}, handlers.KindOpts{})
	ids := make([]int64, jobs)
	for i := range ids {
		ids[i] = e.enqueue(serialArgs{Key: "a"}, enqueue.Opts{SerialKey: "a"})
	}
	e.worker(reg, Config{Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 4}}})
	e.waitWhere(ids[jobs-1], "done", 20*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(order, ids) {
		t.Errorf("ran %v, want %v", order, ids)
	}
	// started_at is the claim's transaction start, finished_at the
	// completion's clock.
	if n := e.count(`SELECT count(*) FROM (
		SELECT started_at, lag(finished_at) OVER (ORDER BY id) AS before_ended
		FROM {{schema}}.docket_jobs_done WHERE serial_key = 'a') r
		WHERE r.started_at > r.before_ended`); n != 0 {
		t.Errorf("%d of the key's %d next jobs were claimed after the completion before them: it did not hand its key on", n, jobs-1)
	}
}

// Jobs that serial completions claim count as claimed, in the claim
// metrics and for OnClaim, as the jobs of any claim do.
func TestSerialHandedJobsCountAsClaimed(t *testing.T) {
	t.Parallel()
	const jobs = 20
	e := setup(t, 8)
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[serialArgs]) error { return nil }, handlers.KindOpts{})
	var last int64
	for range jobs {
		last = e.enqueue(serialArgs{Key: "a"}, enqueue.Opts{SerialKey: "a"})
	}
	var claimed atomic.Int64
	w := e.worker(reg, Config{
		MetricsAddr: "127.0.0.1:0",
		Pools:       []PoolConfig{{Name: "main", Queues: []string{"default"}, Concurrency: 4}},
		OnClaim:     func(_ time.Duration, n int) { claimed.Add(int64(n)) },
	})
	e.waitWhere(last, "done", 20*time.Second)
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE serial_key = 'a' AND attempts = 1`); n != jobs {
		t.Fatalf("%d jobs done at their first attempt, want %d", n, jobs)
	}
	if n := claimed.Load(); n != jobs {
		t.Errorf("OnClaim counted %d jobs, want each of the %d once", n, jobs)
	}
	text := scrape(t, w.MetricsAddr())
	for _, m := range []string{`docket_jobs_claimed_total{pool="main"}`, `docket_job_pickup_seconds_count{pool="main"}`} {
		if v, ok := sample(text, m); v != jobs {
			t.Errorf("%s = %v (present %v), want %d", m, v, ok, jobs)
		}
	}
}

// While other ready jobs wait for a pool's slots, a completing serial job
// does not hand its key into its slot ahead of them: the key's next job
// takes its turn at the end of the ready jobs. One slot, a key of two
// jobs enqueued before 40 plain ones: the key's second job runs after
// them. In "ready", they wait in the table: the pool claims only for its
// free slot, and its claims come back full. In "claimed", they wait in
// the pool: the key's first job ends only once the pool holds every plain
// job, from a claim that came back short of its limit (a prefetch of 64).
// Plain jobs take 2 ms, so that the completion is written while they wait.
func TestSerialHandOffWaitsBehindBacklog(t *testing.T) {
	t.Parallel()
	for _, held := range []bool{false, true} {
		t.Run(map[bool]string{false: "ready", true: "claimed"}[held], func(t *testing.T) {
			t.Parallel()
			const plain = 40
			e := setup(t, 8)
			var (
				w     atomic.Pointer[Worker]
				mu    sync.Mutex
				order []string
			)
			reg := handlers.NewRegistry()
			handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[serialArgs]) error {
				mu.Lock()
				order = append(order, j.Args.Key)
				mu.Unlock()
				if j.Args.Key == "plain" {
					time.Sleep(2 * time.Millisecond)
				}
				for deadline := time.Now().Add(10 * time.Second); held && j.Args.Key == "a1" && time.Now().Before(deadline); {
					if w := w.Load(); w != nil && len(w.pools[0].jobs) == plain {
						break
					}
					time.Sleep(time.Millisecond)
				}
				return nil
			}, handlers.KindOpts{})
			e.enqueue(serialArgs{Key: "a1"}, enqueue.Opts{SerialKey: "a"})
			last := e.enqueue(serialArgs{Key: "a2"}, enqueue.Opts{SerialKey: "a"})
			for range plain {
				e.enqueue(serialArgs{Key: "plain"}, enqueue.Opts{})
			}
			pc := PoolConfig{Queues: []string{"default"}, Concurrency: 1, Prefetch: -1}
			if held {
				pc.Prefetch = 64
			}
			w.Store(e.worker(reg, Config{Pools: []PoolConfig{pc}}))
			e.waitWhere(last, "done", 20*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if i := slices.Index(order, "a2"); i < plain/2 {
				t.Errorf("the key's second job ran %d-th, ahead of the plain jobs waiting before it: %v", i+1, order)
			}
		})
	}
}

// A bulk enqueue puts serial jobs straight into their keys' lines: a job
// is written once, waiting, and only the head of a line without a holder
// is written again, made ready. Through a join trigger each job would be
// inserted ready and then moved to waiting, leaving a dead row version in
// the claim index behind every one. Both ways of the bulk insert (COPY,
// and the set insert of jobs with a run time) keep the order of the items.
func TestSerialBulkEnqueueWritesJobsOnce(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	ctx := t.Context()
	held := e.enqueue(serialArgs{Key: "b"}, enqueue.Opts{SerialKey: "b"})
	past := time.Now().Add(-time.Minute)
	var items []enqueue.Item
	for i := range 6 {
		for _, key := range []string{"a", "b"} {
			opts := enqueue.Opts{SerialKey: key}
			if i%2 == 1 {
				opts.RunAt = past
			}
			items = append(items, enqueue.Item{Args: serialArgs{Key: key}, Opts: opts})
		}
	}
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The figure includes updates this connection made before the
	// transaction that are not yet in the cumulative statistics.
	updates := func() int {
		var n int
		err := tx.QueryRow(ctx, `SELECT n_tup_upd FROM pg_stat_xact_user_tables
			WHERE schemaname = $1 AND relname = 'docket_jobs'`, e.schema).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := updates()
	out, err := e.jobs.EnqueueMany(ctx, tx, items)
	if err != nil {
		t.Fatal(err)
	}
	updated := updates() - before
	if updated != 1 {
		t.Errorf("the bulk enqueue of 12 serial jobs updated %d rows, want 1 (the head of line a made ready)", updated)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"a", "b"} {
		var want []int64
		for i, it := range items {
			if it.Opts.SerialKey == key {
				want = append(want, out[i].ID)
			}
		}
		if key == "b" {
			want = append([]int64{held}, want...)
		}
		var got []int64
		var states []string
		rows, err := e.pool.Query(ctx, e.sql(`SELECT id, state FROM {{schema}}.docket_jobs
			WHERE serial_key = $1 ORDER BY serial_seq`), key)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			var state string
			if err := rows.Scan(&id, &state); err != nil {
				t.Fatal(err)
			}
			got, states = append(got, id), append(states, state)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("line %s is %v, want %v (the order of the enqueue)", key, got, want)
		}
		wantStates := slices.Repeat([]string{"waiting"}, len(want))
		wantStates[0] = "ready"
		if !slices.Equal(states, wantStates) {
			t.Errorf("line %s states %v, want %v", key, states, wantStates)
		}
	}
}
