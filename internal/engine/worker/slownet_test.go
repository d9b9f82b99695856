package worker

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/faultproxy"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestSlowNetworkSpendsNoAttempts: a worker whose every round trip to the
// database takes about 200 ms (the fault proxy delays each read 100 ms ±
// 50 ms both ways), with a 2 s lease and handlers that write through the
// worker's own pool as the fault suite's do, drains a backlog without a
// job spending an attempt it did not run: each job ends done with as many
// attempts as its handler started. Before, heartbeats gave up after a
// third of a lease while they waited for a connection, the held jobs' leases
// ran out, and jobs that never reached a slot were reaped and claimed
// again, an attempt each time.
func TestSlowNetworkSpendsNoAttempts(t *testing.T) {
	t.Parallel()
	const jobs = 80
	e := setup(t, 8)
	defer e.logJobsOnFailure()
	for range jobs {
		e.enqueue(testArgs{}, enqueue.Opts{})
	}
	px, db := proxiedPool(t, 6)
	px.Delay(100*time.Millisecond, 50*time.Millisecond)
	runs := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		runs.add(j.ID)
		_, err := db.Exec(ctx, `SELECT 1`)
		return err
	}, handlers.KindOpts{})
	slow := *e
	slow.pool = db
	slow.worker(reg, Config{Lease: 2 * time.Second, Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: 16}}})
	waitFor(t, 45*time.Second, "the backlog to drain", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == jobs
	})
	rows, err := e.pool.Query(t.Context(), e.sql(`SELECT id, attempts FROM {{schema}}.docket_jobs_done`))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	spent := 0
	for rows.Next() {
		var id int64
		var attempts int
		if err := rows.Scan(&id, &attempts); err != nil {
			t.Fatal(err)
		}
		if n := runs.get(id); attempts > n {
			spent += attempts - n
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if spent > 0 {
		t.Errorf("%d attempts of %d jobs were spent without their handler starting", spent, jobs)
	}
	t.Logf("%d runs lost", strings.Count(e.logs.String(), "job lost;"))
}

// TestBusyPoolKeepsLeases: 16 handlers that keep the worker's 6 pool
// connections busy (each runs statements of 400 ms through the pool, one
// after another, waiting for a connection behind the others) do not make
// the heartbeat wait behind them: with a 1 s lease no run is lost, and
// each job ends done with one attempt, its handler started once. Before
// the heartbeat kept a connection of its own, each beat queued for a
// connection behind the handlers' statements past the lease's end, and
// every run was lost and ran again.
func TestBusyPoolKeepsLeases(t *testing.T) {
	t.Parallel()
	const jobs = 16
	e := setup(t, 6)
	defer e.logJobsOnFailure()
	for range jobs {
		e.enqueue(testArgs{}, enqueue.Opts{})
	}
	runs := newCounter()
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[testArgs]) error {
		runs.add(j.ID)
		for range 4 {
			if _, err := e.pool.Exec(ctx, `SELECT pg_sleep(0.4)`); err != nil {
				return err
			}
		}
		return nil
	}, handlers.KindOpts{})
	e.worker(reg, Config{Lease: time.Second, Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: jobs}}})
	waitFor(t, 60*time.Second, "the jobs to be done", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == jobs
	})
	if n := strings.Count(e.logs.String(), "job lost;"); n > 0 {
		t.Errorf("%d runs lost their lease while their handlers ran", n)
	}
	rows, err := e.pool.Query(t.Context(), e.sql(`SELECT id, attempts FROM {{schema}}.docket_jobs_done`))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var attempts int
		if err := rows.Scan(&id, &attempts); err != nil {
			t.Fatal(err)
		}
		if n := runs.get(id); attempts != 1 || n != 1 {
			t.Errorf("job %d: %d attempts, its handler started %d times; want 1 and 1", id, attempts, n)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestKeptConnReplacedAfterReset: every connection of the worker, the one
// its heartbeat keeps too, is reset twice while 4 handlers of 3 s run
// under a 1 s lease. The heartbeat lets each lost connection go and renews
// the leases on another in the same beat: no run is lost, and each job is
// done with one attempt. Once the worker stopped it holds none of the
// pool's connections.
func TestKeptConnReplacedAfterReset(t *testing.T) {
	t.Parallel()
	const jobs = 4
	e := setup(t, 8)
	defer e.logJobsOnFailure()
	for range jobs {
		e.enqueue(testArgs{}, enqueue.Opts{})
	}
	px, db := proxiedPool(t, 6)
	var started atomic.Int64
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, sleeper(&started, 3*time.Second), handlers.KindOpts{})
	on := *e
	on.pool = db
	w := on.worker(reg, Config{Lease: time.Second, Pools: []PoolConfig{{Queues: []string{"default"}, Concurrency: jobs}}})
	waitFor(t, 10*time.Second, "the handlers to start", func() bool { return started.Load() == jobs })
	for range 2 {
		time.Sleep(time.Second)
		px.Cut()
	}
	waitFor(t, 30*time.Second, "the jobs to be done", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == jobs
	})
	if n := strings.Count(e.logs.String(), "job lost;"); n > 0 {
		t.Errorf("%d runs lost their lease", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE attempts <> 1`); n > 0 {
		t.Errorf("%d jobs took more than one attempt", n)
	}
	if err := w.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A connection the pool destroys counts as acquired until it is closed.
	waitFor(t, 5*time.Second, "the stopped worker to hold none of the pool's connections", func() bool {
		return db.Stat().AcquiredConns() == 0
	})
}

// TestClaimWaitKeepsLease: a claim that waits for one of the pool's
// connections for most of a lease (the test holds every connection the
// heartbeat does not keep for 2.8 s of a 3 s lease) counts its job's
// lease from when it got one: the job runs its 2 s handler once, neither
// given back nor lost. Before, the lease was counted from before the wait
// and ran out, by the local clock, as the claim returned; the heartbeat,
// every 1.8 s, came too late to renew it.
func TestClaimWaitKeepsLease(t *testing.T) {
	t.Parallel()
	e := setup(t, 4)
	defer e.logJobsOnFailure()
	var started atomic.Int64
	reg := handlers.NewRegistry()
	handlers.MustRegister(reg, sleeper(&started, 2*time.Second), handlers.KindOpts{})
	e.worker(reg, Config{Lease: 3 * time.Second, HeartbeatInterval: 1800 * time.Millisecond})
	time.Sleep(300 * time.Millisecond) // the worker's first statements are done
	var held []*pgxpool.Conn
	for range 3 {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		c, err := e.pool.Acquire(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	other := pgtest.PoolN(t, 2) // the enqueue's connection is not the worker's
	if _, err := e.jobs.Enqueue(t.Context(), other, testArgs{}, enqueue.Opts{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2800 * time.Millisecond) // the claim waits for a connection
	for _, c := range held {
		c.Release()
	}
	waitFor(t, 15*time.Second, "the job to be done", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) == 1
	})
	if e.logs.contains("job lost;") || e.logs.contains("are given back") {
		t.Error("the run was lost or given back")
	}
	if n := started.Load(); n != 1 {
		t.Errorf("the handler started %d times, want once", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE attempts = 1`); n != 1 {
		t.Error("the job took more than one attempt")
	}
}

// sleeper is a handler that counts its starts in started and runs for d,
// or until its run is cancelled.
func sleeper(started *atomic.Int64, d time.Duration) func(context.Context, *handlers.Job[testArgs]) error {
	return func(ctx context.Context, j *handlers.Job[testArgs]) error {
		started.Add(1)
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-time.After(d):
			return nil
		}
	}
}

// proxiedPool is a pool of maxConns connections to the test database
// through a fault proxy, closed when the test ends.
func proxiedPool(t *testing.T, maxConns int32) (*faultproxy.Proxy, *pgxpool.Pool) {
	t.Helper()
	px, proxied := viaProxy(t)
	cfg, err := pgxpool.ParseConfig(proxied)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = maxConns
	db, err := pgxpool.NewWithConfig(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return px, db
}
