package handlers

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/docketq/docket/internal/pgsrv"
	"github.com/docketq/docket/internal/pgtest"
	"github.com/docketq/docket/outbox"
	"github.com/jackc/pgx/v5/pgxpool"
)

const crashJobs = 20_000

// crashRun enqueues 20,000 jobs (half transactional), drains them with three
// worker processes, calls disrupt once a quarter is done, and checks that
// every job completed exactly once, every job's effect exists, and the
// transactional jobs' effects exist exactly once.
func crashRun(t *testing.T, e *env, url string, disrupt func(procs []*proc) []*proc) []*proc {
	t.Helper()
	createEffects(t, e.pool, e.schema)
	items := make([]outbox.Item, crashJobs)
	for i := range items {
		if i%2 == 0 {
			items[i] = outbox.Item{Args: plainArgs{N: i}}
		} else {
			items[i] = outbox.Item{Args: txArgs{N: i}}
		}
	}
	if _, err := e.ob.EnqueueMany(t.Context(), e.pool, items); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	env := []string{envLease + "=2000", envConc + "=16"}
	var procs []*proc
	for range 3 {
		procs = append(procs, startProcess(t, url, e.schema, env...))
	}
	done := func() int { return e.tryCount(`SELECT count(*) FROM {{schema}}.docket_jobs_done`) }
	waitFor(t, 60*time.Second, "a quarter of the jobs done", func() bool { return done() >= crashJobs/4 })
	t.Logf("%d jobs done after %s; disrupting", done(), time.Since(start))
	procs = disrupt(procs)
	waitFor(t, 90*time.Second, "every job done", func() bool {
		return e.tryCount(`SELECT count(*) FROM {{schema}}.docket_jobs`) == 0
	})
	t.Logf("drained %d jobs in %s", crashJobs, time.Since(start))
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		if _, err := p.wait(30 * time.Second); err != nil {
			t.Errorf("worker process %s: %v", p.id, err)
		}
	}

	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_dead`); n != 0 {
		t.Errorf("%d jobs dead", n)
	}
	if n, d := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`),
		e.count(`SELECT count(DISTINCT id) FROM {{schema}}.docket_jobs_done`); n != crashJobs || d != crashJobs {
		t.Errorf("history has %d rows for %d distinct jobs, want %d each (every job completed exactly once)", n, d, crashJobs)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done d
		WHERE NOT EXISTS (SELECT FROM {{schema}}.effects f WHERE f.job_id = d.id)`); n != 0 {
		t.Errorf("%d completed jobs have no effect", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE kind = 'proc_tx'`); n != crashJobs/2 {
		t.Errorf("%d effects of transactional jobs, want exactly %d", n, crashJobs/2)
	}
	if n := e.count(`SELECT count(DISTINCT job_id) FROM {{schema}}.effects WHERE kind = 'proc_tx'`); n != crashJobs/2 {
		t.Errorf("%d transactional jobs have an effect, want %d", n, crashJobs/2)
	}
	plain, distinct := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE kind = 'proc_plain'`),
		e.count(`SELECT count(DISTINCT job_id) FROM {{schema}}.effects WHERE kind = 'proc_plain'`)
	if distinct != crashJobs/2 {
		t.Errorf("%d plain jobs have an effect, want %d", distinct, crashJobs/2)
	}
	retried := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done WHERE attempts > 1`)
	t.Logf("plain jobs: %d effects for %d jobs (at-least-once: %d ran again); %d jobs needed a second attempt",
		plain, distinct, plain-distinct, retried)
	return procs
}

// Three worker processes drain 20,000 jobs; one is killed with SIGKILL
// mid-run and restarted.
func TestCrashSafetyWorkerKilled(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	url := pgtest.URL(t)
	crashRun(t, e, url, func(procs []*proc) []*proc {
		procs[0].signal(syscall.SIGKILL)
		_, _ = procs[0].wait(10 * time.Second)
		return append(procs[1:], startProcess(t, url, e.schema, envLease+"=2000", envConc+"=16"))
	})
}

// Three worker processes drain 20,000 jobs while the PostgreSQL server is
// restarted under them: they reconnect by themselves and nothing is lost.
func TestCrashSafetyServerRestarted(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cluster, err := pgsrv.StartCluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	cfg, err := pgxpool.ParseConfig(cluster.URL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 4
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	const schema = "crash"
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	e := setupOn(t, pool, schema)
	procs := crashRun(t, e, cluster.URL(), func(procs []*proc) []*proc {
		rctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		began := time.Now()
		if err := cluster.Restart(rctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("server restarted in %s", time.Since(began))
		return procs
	})
	for _, p := range procs {
		if !p.stderr.contains("LISTEN connection is back") {
			t.Errorf("worker process %s did not log that its LISTEN connection came back", p.id)
		}
	}
}
