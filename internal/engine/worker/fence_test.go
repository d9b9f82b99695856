package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docketq/docket/handlers"
	"github.com/docketq/docket/internal/engine/core"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/faultproxy"
	"github.com/docketq/docket/internal/testkit/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The fence tests lose a run on purpose (its worker process cut off or
// frozen past the lease, the job reaped) and check that whatever the lost
// run still does — its buffered outcome, its handler still running — changes
// nothing once the job was claimed again, by the same process or by another
// one with the same worker id.

// fenceArgs is a job whose first run ends with Outcome after First ms, and
// whose later runs succeed after Later ms. Runs are counted in the runs
// table, not by attempt: a snooze gives the attempt back. Handlers ignore
// their context while they sleep, as slow code does.
type fenceArgs struct {
	Outcome      string // ok, fail, snooze or cancel
	First, Later int
}

func (fenceArgs) Kind() string { return "proc_fence" }

// fenceTxArgs is fenceArgs for a transactional handler, which writes an
// effect row in its transaction when it succeeds.
type fenceTxArgs fenceArgs

func (fenceTxArgs) Kind() string { return "proc_fence_tx" }

var fenceOutcomes = []string{"ok", "fail", "snooze", "cancel"}

// registerFenceKinds registers the fence tests' handlers. Each records its
// run in the runs table through effects, a pool that the tests keep out of
// the faults they inject.
func registerFenceKinds(reg *handlers.Registry, effects *pgxpool.Pool, schema, me string) {
	started := fmt.Sprintf(`INSERT INTO %[1]s.runs (job_id, claim_id, attempt, n, worker, started)
		SELECT $1, $2, $3, count(*) + 1, $4, clock_timestamp() FROM %[1]s.runs WHERE job_id = $1
		RETURNING n`, schema)
	stopped := fmt.Sprintf(`UPDATE %s.runs SET stopped = clock_timestamp() WHERE job_id = $1 AND claim_id = $2`, schema)
	effect := fmt.Sprintf(sqlEffect, schema)
	run := func(ctx context.Context, tx pgx.Tx, j *core.Job, a fenceArgs) error {
		bg := context.WithoutCancel(ctx)
		var n int
		if err := effects.QueryRow(bg, started, j.ID, j.ClaimID, j.Attempt, me).Scan(&n); err != nil {
			return err
		}
		d := a.Later
		if n == 1 {
			d = a.First
		}
		time.Sleep(time.Duration(d) * time.Millisecond)
		if _, err := effects.Exec(bg, stopped, j.ID, j.ClaimID); err != nil {
			return err
		}
		if n == 1 {
			switch a.Outcome {
			case "fail":
				return errors.New("the first attempt fails")
			case "snooze":
				return handlers.Snooze(0)
			case "cancel":
				return handlers.Cancel(errors.New("the first attempt cancels"))
			}
		}
		if tx != nil {
			_, err := tx.Exec(ctx, effect, j.ID, j.Attempt, j.Kind, me)
			return err
		}
		return nil
	}
	handlers.MustRegister(reg, func(ctx context.Context, j *handlers.Job[fenceArgs]) error {
		return run(ctx, nil, j.Job, j.Args)
	}, handlers.KindOpts{})
	handlers.MustRegisterTx(reg, func(ctx context.Context, tx pgx.Tx, j *handlers.Job[fenceTxArgs]) error {
		return run(ctx, tx, j.Job, fenceArgs(j.Args))
	}, handlers.KindOpts{})
}

// fenceSetup creates the effects and runs tables and enqueues one plain and
// one transactional job per first-attempt outcome.
func fenceSetup(t *testing.T, e *env, first, later int) {
	t.Helper()
	createEffects(t, e.pool, e.schema)
	e.exec(`CREATE TABLE {{schema}}.runs (job_id bigint NOT NULL, claim_id bigint NOT NULL,
		attempt int NOT NULL, n int NOT NULL, worker text NOT NULL, started timestamptz NOT NULL, stopped timestamptz)`)
	for _, o := range fenceOutcomes {
		e.enqueue(fenceArgs{Outcome: o, First: first, Later: later}, enqueue.Opts{})
		e.enqueue(fenceTxArgs{Outcome: o, First: first, Later: later}, enqueue.Opts{})
	}
}

// fenceJobs is how many jobs fenceSetup enqueues.
var fenceJobs = 2 * len(fenceOutcomes)

// checkFenced checks the end state: every job completed exactly once and
// none dead (no stale outcome landed), each transactional job's effect
// written once, every plain job run more than once (the scenario
// happened), and no two runs of one job overlapping.
func checkFenced(t *testing.T, e *env) {
	t.Helper()
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_dead`); n != 0 {
		t.Errorf("%d jobs dead-lettered: a lost run's outcome landed", n)
	}
	if n, d := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done`),
		e.count(`SELECT count(DISTINCT id) FROM {{schema}}.docket_jobs_done`); n != fenceJobs || d != fenceJobs {
		t.Errorf("history has %d rows for %d jobs, want %d each", n, d, fenceJobs)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done d WHERE kind = 'proc_fence'
		AND (SELECT count(*) FROM {{schema}}.runs r WHERE r.job_id = d.id) >= 2`); n != len(fenceOutcomes) {
		t.Errorf("%d plain jobs ran more than once, want %d: the first runs were not lost", n, len(fenceOutcomes))
	}
	if n, d := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE kind = 'proc_fence_tx'`),
		e.count(`SELECT count(DISTINCT job_id) FROM {{schema}}.effects WHERE kind = 'proc_fence_tx'`); n != len(fenceOutcomes) || d != len(fenceOutcomes) {
		t.Errorf("%d transactional effects for %d jobs, want %d each (exactly once)", n, d, len(fenceOutcomes))
	}
	// A completed job's history row is its last run's: it started when that
	// run was claimed, at or before the run's handler started.
	if n := e.count(`SELECT count(*) FROM {{schema}}.docket_jobs_done d
		WHERE d.started_at > (SELECT max(started) FROM {{schema}}.runs r WHERE r.job_id = d.id)`); n != 0 {
		t.Errorf("%d jobs completed with a start later than their last run's: an outcome landed on another run", n)
	}
	if n := e.count(`SELECT count(*) FROM {{schema}}.runs WHERE stopped IS NULL`); n != 0 {
		t.Errorf("%d runs never stopped", n)
	}
	rows, err := e.pool.Query(t.Context(), e.sql(`SELECT a.job_id, a.n, b.n FROM {{schema}}.runs a
		JOIN {{schema}}.runs b ON a.job_id = b.job_id AND a.claim_id < b.claim_id
		WHERE a.started < b.stopped AND b.started < a.stopped`))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var a, b int
		if err := rows.Scan(&id, &a, &b); err != nil {
			t.Fatal(err)
		}
		t.Errorf("job %d: runs %d and %d overlapped", id, a, b)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// waitRuns waits until the runs table satisfies cond (a WHERE clause).
func waitRuns(t *testing.T, e *env, timeout time.Duration, want int, cond string) {
	t.Helper()
	waitFor(t, timeout, fmt.Sprintf("%d runs where %s", want, cond), func() bool {
		return e.tryCount(`SELECT count(*) FROM {{schema}}.runs WHERE `+cond) >= want
	})
}

// reapAll reaps from the test process, acting as another process's
// reaper, until no job is running but those whose row a frozen process's
// open transaction still locks (a transactional job that completed in its
// transaction, not yet committed): the reaper skips locked rows.
func reapAll(t *testing.T, e *env) {
	t.Helper()
	waitFor(t, 20*time.Second, "every running job reaped", func() bool {
		ctx, cancel := queryCtx()
		defer cancel()
		if _, err := e.q.Reap(ctx, e.pool, 100); err != nil {
			t.Logf("reap: %v", err)
		}
		return e.tryCount(`SELECT count(*) FROM (SELECT FROM {{schema}}.docket_jobs
			WHERE state = 'running' FOR UPDATE SKIP LOCKED) unlocked`) == 0
	})
}

// waitDrained waits until no job is left in the jobs table.
func waitDrained(t *testing.T, e *env) {
	t.Helper()
	waitFor(t, 60*time.Second, "every job finished", func() bool {
		return e.tryCount(`SELECT count(*) FROM {{schema}}.docket_jobs`) == 0
	})
}

// stopAll stops the worker processes gracefully and checks they exit cleanly.
func stopAll(t *testing.T, procs ...*proc) {
	t.Helper()
	for _, p := range procs {
		p.signal(syscall.SIGTERM)
	}
	for _, p := range procs {
		if _, err := p.wait(30 * time.Second); err != nil {
			t.Errorf("worker process %s: %v", p.id, err)
		}
	}
}

// viaProxy returns a fault proxy in front of the test database and a
// connection string that goes through it.
func viaProxy(t *testing.T) (*faultproxy.Proxy, string) {
	t.Helper()
	px, url, err := faultproxy.ForPostgres(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	return px, url
}

// TestFenceConnectionCut: a worker process is cut off from the database for
// longer than the lease while its slow handlers (deaf to cancellation)
// still run; another process reaps the jobs; the connection comes back and
// the same process claims the jobs again while the first runs are still in
// their handlers. The second runs wait for the first to return, the first
// runs' outcomes (every kind) change nothing, and the second runs' land.
func TestFenceConnectionCut(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	defer e.logJobsOnFailure()
	px, proxied := viaProxy(t)
	// The first runs last long enough for the reclaim to come while they
	// are still in their handlers, also on a loaded machine.
	fenceSetup(t, e, 8000, 200)
	p := startProcess(t, proxied, e.schema, envLease+"=1000", envConc+"=16", envEffects+"="+pgtest.URL(t))
	waitRuns(t, e, 30*time.Second, fenceJobs, "n = 1")
	px.Refuse()
	reapAll(t, e)
	px.Restore()
	waitDrained(t, e)
	stopAll(t, p)
	checkFenced(t, e)
	// The second runs were claimed while the first were still in their
	// handlers, so the no-overlap check above saw the worker wait.
	if !strings.Contains(p.stderr.String(), "a lost run of it was still in its handler here") {
		t.Error("no second run waited for its first: the test did not reclaim while the first runs were in their handlers")
	}
}

// startBuffering enqueues the fence jobs and starts a worker process on a
// 1 s lease that buffers outcomes for 3 s, and returns once every first
// run has finished with its outcome buffered: the moment the frozen-process
// tests freeze it. The buffer is long so that no outcome is written before
// the freeze, even when other tests' load spreads the first runs over a
// second or more; later runs take 4 s, longer than the buffer, so that the
// thawed process's flush lands while they are in their handlers.
func startBuffering(t *testing.T, e *env) *proc {
	t.Helper()
	fenceSetup(t, e, 50, 4000)
	p := startProcess(t, pgtest.URL(t), e.schema, envLease+"=1000", envConc+"=16", envFlush+"=3000")
	waitRuns(t, e, 30*time.Second, fenceJobs, "n = 1 AND stopped IS NOT NULL")
	return p
}

// TestFenceFrozenProcess: a worker process is frozen (SIGSTOP) with its
// first runs' outcomes buffered, past the lease; the jobs are reaped; it is
// thawed (SIGCONT) and, at once, both claims the jobs again and flushes the
// buffered outcomes. Those outcomes change nothing.
func TestFenceFrozenProcess(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	defer e.logJobsOnFailure()
	p := startBuffering(t, e)
	p.signal(syscall.SIGSTOP)
	reapAll(t, e)
	p.signal(syscall.SIGCONT)
	waitDrained(t, e)
	stopAll(t, p)
	checkFenced(t, e)
}

// TestFenceSharedWorkerID: two live worker processes are (wrongly)
// configured with the same worker id. The first is frozen with its first
// runs' outcomes buffered; the second reaps the jobs and runs them again;
// the first is thawed while those runs are in their handlers and flushes
// its outcomes at once. They change nothing, though locked_by matches.
//
// The second process holds its runs on a longer lease: were it to lose them
// too (a loaded machine delaying its heartbeats past a 1 s lease), the
// thawed first process could claim them while the second's deaf handlers
// still ran, an overlap across processes that only a handler honouring its
// context prevents, and not what this test is about.
func TestFenceSharedWorkerID(t *testing.T) {
	t.Parallel()
	e := setup(t, 8)
	defer e.logJobsOnFailure()
	a := startBuffering(t, e)
	a.signal(syscall.SIGSTOP)
	b := startProcess(t, pgtest.URL(t), e.schema, envLease+"=5000", envConc+"=16", envID+"="+a.id)
	waitRuns(t, e, 30*time.Second, len(fenceOutcomes), "n > 1")
	a.signal(syscall.SIGCONT)
	waitDrained(t, e)
	stopAll(t, a, b)
	checkFenced(t, e)
}
