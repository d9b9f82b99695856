package worker

import (
	"context"
	"testing"
	"time"

	"github.com/docketq/docket/admin"
	"github.com/docketq/docket/internal/engine/enqueue"
	"github.com/docketq/docket/internal/testkit/pgsrv"
	"github.com/jackc/pgx/v5/pgxpool"
)

// TestFaultWorkflowSignalSurvivesKillAndRestart runs a workflow of waits on
// a private PostgreSQL cluster with three worker processes (poll interval
// 100ms): a step waiting for a signal, a step whose signal is sent while
// its parent still runs, a 10 s timer and a 3 s timeout with policy run.
// Once the waits began, every worker is killed with SIGKILL and the server
// restarted; three new workers start and the signal is sent. Each step runs
// once, with its signal, the timeout marked, and the timer within the poll
// interval of its time (the test allows 1 s for the claim and handler).
func TestFaultWorkflowSignalSurvivesKillAndRestart(t *testing.T) {
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
	const schema = "waits"
	if _, err := pool.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	e := setupOn(t, pool, schema)
	e.logJobsOnFailure()
	createEffects(t, pool, schema)
	e.exec(`ALTER TABLE {{schema}}.effects ADD COLUMN at timestamptz NOT NULL DEFAULT clock_timestamp()`)

	res, err := e.jobs.EnqueueWorkflow(ctx, pool, enqueue.Workflow{Name: "waits", Jobs: []enqueue.WorkflowJob{
		{Ref: "root", Args: blockArgs{}},
		{Ref: "slow", Args: blockArgs{}},
		{Ref: "ship", Args: signalArgs{}, After: enqueue.After("root"), WaitFor: "paid"},
		{Ref: "early", Args: signalArgs{}, After: enqueue.After("slow"), WaitFor: "early"},
		{Ref: "timer", Args: blockArgs{}, After: enqueue.After("root"), Delay: 10 * time.Second},
		{Ref: "late", Args: signalArgs{}, After: enqueue.After("root"), WaitFor: "never",
			WaitTimeout: 3 * time.Second, OnTimeout: enqueue.TimeoutRun},
	}})
	if err != nil {
		t.Fatal(err)
	}
	id := res.Jobs
	start := func() []*proc {
		var ps []*proc
		for range 3 {
			ps = append(ps, startProcess(t, cluster.URL(), schema, envLease+"=2000", envConc+"=4", envMaxConns+"=4", envSleep+"=3000"))
		}
		return ps
	}
	procs := start()
	// Every blockArgs handler sleeps 3 s after it recorded its start.
	waitFor(t, 10*time.Second, "slow to start", func() bool {
		return e.count(`SELECT count(*) FROM {{schema}}.effects WHERE job_id = $1`, id["slow"]) > 0
	})
	// The signal of "early" comes while its parent runs.
	if sent, err := e.jobs.Signal(ctx, pool, res.ID, "early", map[string]int{"n": 1}); err != nil || len(sent.Released) != 0 || len(sent.Waiting) != 1 {
		t.Fatalf("early signal: %+v %v", sent, err)
	}
	e.waitWhere(id["root"], "done", 20*time.Second)
	e.waitWhere(id["timer"], "scheduled", 5*time.Second)
	var timerAt time.Time
	if err := pool.QueryRow(ctx, e.sql(`SELECT run_at FROM {{schema}}.docket_jobs WHERE id = $1`), id["timer"]).Scan(&timerAt); err != nil {
		t.Fatal(err)
	}
	if got := e.where(id["ship"]); got != "waiting" {
		t.Fatalf("ship is %s before its signal", got)
	}
	for _, p := range procs {
		p.kill()
	}
	rctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cluster.Restart(rctx); err != nil {
		t.Fatal(err)
	}
	// The test's own pool holds connections the restart ended.
	pool.Reset()
	if time.Until(timerAt) < 2*time.Second {
		t.Fatalf("the restart ended %s before the timer's time; the test cannot see the timer survive it", time.Until(timerAt))
	}
	_ = start()
	if sent, err := e.jobs.Signal(ctx, pool, res.ID, "paid", map[string]int{"amount": 42}); err != nil || len(sent.Released) != 1 {
		t.Fatalf("paid signal: %+v %v", sent, err)
	}
	e.waitWhere(id["early"], "done", 20*time.Second)
	if st := e.waitWorkflow(res.ID, 30*time.Second); st.State != admin.WorkflowSucceeded {
		t.Fatalf("workflow ended %+v", st)
	}
	for ref, want := range map[string]string{"ship": `signal:{"amount": 42}`, "early": `signal:{"n": 1}`, "late": "timed_out", "timer": "proc_block"} {
		n := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE job_id = $1 AND kind = $2`, id[ref], want)
		// "early" may run just before the kill, its completion still in
		// the finisher's buffer: it then runs again after the restart, as
		// any job killed mid-outcome does (at least once). Every run reads
		// the signal sent before it waited.
		if n != 1 && (ref != "early" || n == 0) {
			t.Errorf("%s recorded %q %d times, want once", ref, want, n)
		}
		if n := e.count(`SELECT count(*) FROM {{schema}}.effects WHERE job_id = $1 AND kind <> $2 AND kind <> $3`, id[ref], want, blockStarted); n != 0 {
			t.Errorf("%s recorded %d other effects", ref, n)
		}
	}
	var late time.Duration
	if err := pool.QueryRow(ctx, e.sql(`SELECT at - $2::timestamptz FROM {{schema}}.effects WHERE job_id = $1 AND kind = $3`),
		id["timer"], timerAt, blockStarted).Scan(&late); err != nil {
		t.Fatal(err)
	}
	t.Logf("the 10 s timer ran %s after its time, across a kill of every worker and a server restart", late)
	if late < 0 || late > time.Second {
		t.Errorf("the timer ran %s after its time, want within the poll interval (100ms) and a claim", late)
	}
}
